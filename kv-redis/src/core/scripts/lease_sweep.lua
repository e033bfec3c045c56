-- Expires every lease past its deadline (idempotent: any client may run it at any time).
-- Returns { leases expired, ms until the next deadline or -1 }. ARGV: prefix, retention.
-- It also takes one step of the index's conversion (`ix_upgrade`, two reads when there is
-- nothing to do), so that keys an older version indexes in the single sorted set reach the
-- buckets within a sweep's period, and a cluster group's index is cut without its writes.
ix_upgrade(P)
local now = now_ms()
local expired = sweep_expired(now, 1000)
local next = redis.call('ZRANGE', K_LEASES, 0, 0, 'WITHSCORES')
if #next == 0 then
  return { expired, -1 }
end
return { expired, math.max(0, tonumber(next[2]) - now) }
