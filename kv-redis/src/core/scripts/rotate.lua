-- A transaction of one list rotation and nothing else (`CollectionOp::ListRotate`, or a
-- `ListRotateGet`, the balancer's pick): a run of one rotation (`run_rotate` or
-- `run_rotate_get` in `run.lua`), what `txn.lua` does for it without reading a transaction.
-- ARGV after the two shared ones: the key; for a `ListRotateGet`, then the field, and the
-- prefix and suffix of the maps' keys. Checks the types and the permission before the first write. Answers
-- as `txn.lua`: { 1, revision, { the item moved to the end, or false } }, or for a
-- `ListRotateGet` { 1, revision, { { item or false, value or false } } }; a list of one
-- item is its own rotation and changes nothing.
run_start()
local rev, item
if #ARGV > 3 then
  rev, item = run_rotate_get(ARGV[3], ARGV[4], ARGV[5], ARGV[6])
else
  rev, item = run_rotate(ARGV[3])
end
if type(rev) == 'table' then
  return rev
end
run_flush()
return { 1, rev, { item } }
