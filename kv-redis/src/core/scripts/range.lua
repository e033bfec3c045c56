#!lua flags=no-writes
-- One page of a range, read atomically with the revision. ARGV: prefix, min and max lex
-- specs, the most keys to fetch (or -1 for all), the mode: 'v' entries with values, 'k' keys
-- only, 'c' count only; and, to list collections too, the most collections to fetch (or -1
-- for all; empty for none). Returns { revision, keys, metas, values, collections } with
-- collections as { keys, types, sizes }, or { revision, count }.
local P, min, max, limit, mode, climit = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6]
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
-- Collections: the collection index, skipping keys another program emptied or replaced
-- (until the reconciler untracks them), until `climit` live ones are found.
local ckeys, ctypes, csizes = {}, {}, {}
if climit and climit ~= '' then
  climit = tonumber(climit)
  local SIZE = { set = 'SCARD', hash = 'HLEN', list = 'LLEN' }
  local from = min
  while climit < 0 or #ckeys < climit do
    local chunk = redis.call('ZRANGEBYLEX', P .. 'cidx', from, max, 'LIMIT', 0, 256)
    for _, k in ipairs(chunk) do
      local t = redis.call('TYPE', k)['ok']
      if SIZE[t] and (climit < 0 or #ckeys < climit) then
        ckeys[#ckeys + 1] = k
        ctypes[#ctypes + 1] = t
        csizes[#csizes + 1] = redis.call(SIZE[t], k)
      end
    end
    if #chunk < 256 then break end
    from = '(' .. chunk[#chunk]
  end
end
return { rev, keys, metas, values, { ckeys, ctypes, csizes } }
