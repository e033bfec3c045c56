#!lua flags=no-writes
-- One page of a range, read atomically with the revision. ARGV: prefix, min and max lex
-- specs, the most keys to fetch (or -1 for all), and the mode: 'v' entries with values,
-- 'k' keys only, 'c' count only. Returns { revision, keys, metas, values } or
-- { revision, count }.
local P, min, max, limit, mode = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
local rev = tonumber(redis.call('GET', P .. 'rev') or '0')
if mode == 'c' then
  return { rev, redis.call('ZLEXCOUNT', P .. 'idx', min, max) }
end
local keys
if limit >= 0 then
  keys = redis.call('ZRANGEBYLEX', P .. 'idx', min, max, 'LIMIT', 0, limit)
else
  keys = redis.call('ZRANGEBYLEX', P .. 'idx', min, max)
end
if #keys == 0 then
  return { rev, {}, {}, {} }
end
local metas, values = {}, {}
for i = 1, #keys, 1000 do
  local chunk = { unpack(keys, i, math.min(i + 999, #keys)) }
  local m = redis.call('HMGET', P .. 'meta', unpack(chunk))
  for j = 1, #m do metas[#metas + 1] = m[j] end
  if mode == 'v' then
    local v = redis.call('MGET', unpack(chunk))
    for j = 1, #v do values[#values + 1] = v[j] end
  end
end
return { rev, keys, metas, values }
