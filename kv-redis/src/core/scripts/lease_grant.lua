-- Grants a lease of ARGV[3] ms. Returns its id. ARGV: prefix, retention, ttl.
local ttl = tonumber(ARGV[3])
local id = redis.call('INCR', P .. 'leaseid')
redis.call('ZADD', K_LEASES, now_ms() + ttl, id)
redis.call('HSET', K_LTTL, id, ttl)
return id
