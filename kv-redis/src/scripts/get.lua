#!lua flags=no-writes
-- One plain key: { value, meta }, or nil when it does not exist. ARGV: prefix, key.
local m = redis.call('HGET', ARGV[1] .. 'meta', ARGV[2])
if not m then
  return false
end
return { redis.call('GET', ARGV[2]) or '', m }
