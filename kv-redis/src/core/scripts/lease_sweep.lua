-- Expires every lease past its deadline (idempotent: any client may run it at any time).
-- Returns { leases expired, ms until the next deadline or -1 }. ARGV: prefix, retention.
local now = now_ms()
local expired = sweep_expired(now, 1000)
local next = redis.call('ZRANGE', K_LEASES, 0, 0, 'WITHSCORES')
if #next == 0 then
  return { expired, -1 }
end
return { expired, math.max(0, tonumber(next[2]) - now) }
