-- A transaction of one list rotation and nothing else (`CollectionOp::ListRotate`, the
-- balancer's pick): a run of one rotation (`run_rotate` in `run.lua`), what `txn.lua` does for
-- it without reading a transaction. ARGV after the two shared ones: the key. Checks the type
-- and the permission before the first write. Answers as `txn.lua`: { 1, revision, { the item
-- moved to the end, or false } }; a list of one item is its own rotation and changes nothing.
run_start()
local rev, item = run_rotate(ARGV[3])
if type(rev) == 'table' then
  return rev
end
run_flush()
return { 1, rev, { item } }
