-- Revokes lease ARGV[3]: its keys are deleted in one revision. A lease already past its
-- deadline is expired the same way and reported as not found. ARGV: prefix, retention, id.
local id = ARGV[3]
local deadline = redis.call('ZSCORE', K_LEASES, id)
if not deadline then
  return redis.error_reply('KVLEASE lease ' .. id .. ' not found')
end
local expired = tonumber(deadline) <= now_ms()
if drop_lease(id) > 0 then
  commit(current_revision() + 1)
end
if expired then
  return redis.error_reply('KVLEASE lease ' .. id .. ' has expired')
end
return current_revision()
