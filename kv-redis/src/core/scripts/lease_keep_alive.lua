-- Renews lease ARGV[3] to its granted TTL; returns the TTL in ms. ARGV: prefix, retention, id.
local id = ARGV[3]
local deadline = redis.call('ZSCORE', K_LEASES, id)
local now = now_ms()
if not deadline or tonumber(deadline) <= now then
  return redis.error_reply('KVLEASE lease ' .. id .. ' not found')
end
local ttl = tonumber(redis.call('HGET', K_LTTL, id))
redis.call('ZADD', K_LEASES, now + ttl, id)
return ttl
