-- A transaction of one list rotation and nothing else (`CollectionOp::ListRotate`, the
-- balancer's pick): what `txn.lua` does for it, without reading a transaction. ARGV after the
-- two shared ones: the key. Checks the type and the permission before the first write.
-- Answers as `txn.lua`: { 1, revision, { the item moved to the end, or false } }; a list of
-- one item is its own rotation and changes nothing.
local key = ARGV[3]
local t = redis.call('TYPE', key)['ok']
if t ~= 'none' and t ~= 'list' then
  return redis.error_reply('KVWRONGTYPE 1 holds a ' .. t)
end
if not may('LMOVE', key, key, 'LEFT', 'RIGHT') then
  return no_permission(1, 'write')
end
if t == 'none' or redis.call('LLEN', key) < 2 then
  return { 1, current_revision(), { redis.call('LINDEX', key, 0) } }
end
local item = redis.call('LMOVE', key, key, 'LEFT', 'RIGHT')
-- The one change of the revision, logged as `flush_collections` logs a rotation.
push_event('c', key, 'lo', item, '', '')
local rev = redis.call('INCR', K_REV)
append_log(rev)
return { 1, rev, { item } }
