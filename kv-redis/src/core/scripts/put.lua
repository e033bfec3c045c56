-- `Store::put` of one plain key: the single-op transaction without its decoding and branch
-- bookkeeping. ARGV after the two shared ones: key, value, lease id ('0' for none), and '1'
-- to return the previous entry. Checks the type and the lease before the first write; what
-- another program did to the key is reconciled first, at a revision of its own. Returns
-- { revision, { previous value, previous meta } or false }.
local key, value, lease, want_prev = ARGV[3], ARGV[4], ARGV[5], ARGV[6] == '1'
local old, t, fix, data = inspect(key)
if t ~= 'none' and t ~= 'string' then
  return redis.error_reply('KVWRONGTYPE 1 holds a ' .. t)
end
if not may('SET', key, value) then
  return no_permission(1, 'write')
end
local err = check_lease(1, lease)
if err then
  return err
end
if fix then
  old = fixed_meta(fix, data, absorb({ { key, fix, data } }))
end
local rev = redis.call('INCR', K_REV)
local prev_value = put_plain(key, value, lease, old, rev)
append_log(rev)
if want_prev and old then
  return { rev, { prev_value, old } }
end
return { rev, false }
