-- `Store::delete` of one key (the plain key or the collection at it). ARGV after the two
-- shared ones: the key. Returns { revision, { previous value, previous meta } or false }.
local key = ARGV[3]
local m = redis.call('HGET', K_META, key)
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
