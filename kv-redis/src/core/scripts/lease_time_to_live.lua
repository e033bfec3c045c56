-- What is known of lease ARGV[3]: { granted ttl ms, remaining ms, keys }. ARGV: prefix,
-- retention, id.
local id = ARGV[3]
local deadline = redis.call('ZSCORE', K_LEASES, id)
local now = now_ms()
if not deadline or tonumber(deadline) <= now then
  return redis.error_reply('KVLEASE lease ' .. id .. ' not found')
end
local keys = {}
for _, key in ipairs(redis.call('SMEMBERS', lease_set(id))) do
  local m = redis.call('HGET', K_META, key)
  if m and meta_lease(m) == id then
    keys[#keys + 1] = key
  end
end
return { tonumber(redis.call('HGET', K_LTTL, id)), tonumber(deadline) - now, keys }
