-- `Store::put` of one plain key: the single-op transaction without its decoding and branch
-- bookkeeping. ARGV after the two shared ones: key, value, lease id ('0' for none), '1' to
-- return the previous entry, and the value's digest. Checks the permission and the lease before the first write;
-- what another program did to the key is reconciled first, at a revision of its own. Returns
-- { revision, { previous value, previous meta } or false }.
local key, value, lease, want_prev, hash = ARGV[3], ARGV[4], ARGV[5], ARGV[6] == '1', ARGV[7]
local old = redis.call('HGET', K_META, key)
if not may('SET', key, value) then
  return no_permission(1, 'write')
end
local err = check_lease(1, lease)
if err then
  return err
end
-- The value is the first write, and also checks the type: SET refuses a key of another type
-- without writing anything, and answers with the previous value (nil when there was none).
local prev = redis.pcall('SET', key, value, 'GET')
if type(prev) == 'table' then
  if string.sub(prev.err, 1, 9) == 'WRONGTYPE' then
    return redis.error_reply('KVWRONGTYPE 1 holds a ' .. redis.call('TYPE', key)['ok'])
  end
  return prev
end
if prev and not old then
  -- A string another program wrote.
  old = adopted_meta(absorb({ { key, 'adopt', prev } }), prev)
elseif old and not prev then
  -- Metadata whose key another program deleted.
  absorb({ { key, 'forget', old } })
  old = nil
end
local rev = redis.call('INCR', K_REV)
local m = record_put(key, value, hash, lease, old, prev or '', tostring(rev))
redis.call('HSET', K_META, key, m)
if not old then
  redis.call('ZADD', K_IDX, 0, key)
end
append_log(rev)
if want_prev and old then
  return { rev, { prev, old } }
end
return { rev, false }
