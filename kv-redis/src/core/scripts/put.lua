-- `Store::put` of one plain key, in straight line: the lone put a group commit sends when no
-- other write waits (`batch.lua` takes the puts that queue). ARGV after the two shared ones:
-- key, value, lease id ('0' for none), '1' to return the previous entry, and the value's
-- digest. Checks the lease, then writes the value first (`checked_set`, as a run's put does),
-- where Redis checks the permission and the type; what another program did to the key is
-- reconciled first, at a revision of its own (`absorb`). The revision comes from one INCR of the
-- counter, where a run reads and sets it. Returns
-- { revision, { previous value, previous meta } or false }.
local key, value, lease, hash = ARGV[3], ARGV[4], ARGV[5], ARGV[7]
local old = redis.call('HGET', K_META, key)
local prev, err = checked_set(key, value, lease)
if err then
  return err
end
if prev and not old then
  old = adopted_meta(absorb({ { key, 'adopt', prev } }), prev)
elseif old and not prev then
  absorb({ { key, 'forget', old } })
  old = false
end
local rev = redis.call('INCR', K_REV)
local m = record_put(key, value, hash, lease, old or nil, prev or '', string.format('%d', rev))
redis.call('HSET', K_META, key, m)
if not old then
  ix_add(P, key)
end
append_log(rev)
if prev and old and ARGV[6] == '1' then
  return { rev, { prev, old } }
end
return { rev, false }
