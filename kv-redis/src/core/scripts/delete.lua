-- `Store::delete` of one key: the plain key or the collection at it, whoever wrote it (what
-- another program did to the key is reconciled first, at a revision of its own). ARGV after
-- the two shared ones: the key. Returns { revision, { previous value, previous meta } or
-- false }.
local key = ARGV[3]
local m, _, fix, data = inspect(key)
if not may('DEL', key) then
  return no_permission(1, 'delete')
end
if fix then
  m = fixed_meta(fix, data, absorb({ { key, fix, data } }))
end
local prev = false
if m then
  prev = { redis.call('GET', key) or '', m }
end
local rev = current_revision()
if delete_key(key) == 1 then
  rev = rev + 1
  commit(rev)
end
return { rev, prev }
