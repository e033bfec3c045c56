-- `Store::put` of one plain key: a run of one put (`run_put` in `run.lua`), the single-op
-- transaction without its decoding and branch bookkeeping. ARGV after the two shared ones:
-- key, value, lease id ('0' for none), '1' to return the previous entry, and the value's
-- digest. Checks the permission, the lease and the type before the first write; what another
-- program did to the key is reconciled first, at a revision of its own. Returns
-- { revision, { previous value, previous meta } or false }.
local key = ARGV[3]
local metas = { [key] = redis.call('HGET', K_META, key) or nil }
run_start()
local rev, prev, old = run_put(key, ARGV[4], ARGV[5], ARGV[6] == '1', ARGV[7], metas)
if type(rev) == 'table' then
  return rev
end
run_flush()
if prev then
  return { rev, { prev, old } }
end
return { rev, false }
