#!lua flags=no-writes
-- One page of a range, read atomically with the revision. ARGV: prefix, min and max lex
-- specs, the most keys to fetch (or -1 for all), the mode: 'v' entries with values, 'k' keys
-- only, 'c' count only; to list collections too, the most collections to fetch (or -1 for
-- all; empty for none); for a read at a past revision R, R + 1 (empty for none); and '1' to
-- mark the revision read at when more keys follow than were fetched (empty for no mark).
-- Returns { revision, keys, metas, values, collections, stale, log, mark } with collections
-- as { keys, types, sizes }, or { revision, count, stale, mark }.
--
-- `mark`: the SHA-1 of the events the log holds for the revision the page is read at (R for
-- a read at a past revision, else the current one, when asked for), '' when the log does not
-- hold it or none was asked for. A read at R that knows R's mark from an earlier read
-- compares it: another mark is another history (a failover to a replica that lacked the
-- writes, whose revisions the new master gave to other writes).
--
-- `log`, for a read at a past revision R: { first revision in the log (0 when empty),
-- compaction floor, up to LOG_COUNT log entries after R up to the revision read }, so that
-- the page and the events that rewind it to R come from one instant and one round trip
-- (empty otherwise).
--
-- `stale` lists the keys the indexes name that no longer hold what the index says: a plain
-- key whose string another program deleted or replaced with another type (MGET gives nil
-- for both), a collection replaced with another program's string. The read takes no decision on them (it
-- writes nothing, so replicas serve it): a non-empty `stale` makes the caller reconcile
-- those keys, one revision, and read again, so that a range never lists a value a key does
-- not have, nor counts a key that is gone.
local P, min, max, limit, mode, climit = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6]
local after, marked = ARGV[7], ARGV[8]
local rev_text = redis.call('GET', P .. 'rev') or '0'
local rev = tonumber(rev_text)
local stale = {}
-- The mark of revision `r` (its decimal text): see above. A revision's events are the field
-- `e` of the entry whose id is that revision, or in a batch's entry (whose id is its last
-- revision) the field named by the revision.
local function mark(r)
  local found = redis.call('XRANGE', P .. 'log', r .. '-0', '+', 'COUNT', 1)
  if #found == 0 then return '' end
  local id, fields = found[1][1], found[1][2]
  if fields[1] == 'e' then
    if string.match(id, '^(%d+)') == r then return redis.sha1hex(fields[2]) end
    return ''
  end
  for i = 1, #fields - 1, 2 do
    if fields[i] == r then return redis.sha1hex(fields[i + 1]) end
  end
  return ''
end
-- The mark of the revision read at, for a read at a past revision.
local function pinned_mark()
  if after and after ~= '' then
    return mark(string.format('%d', tonumber(after) - 1))
  end
  return ''
end
-- The values of `keys` (MGET in chunks, which also bounds the memory a keys-only read or a
-- count spends on values it only checks); nil entries are noted as stale.
local function check_values(keys, first, last, values)
  local v = redis.call('MGET', unpack(keys, first, last))
  for j = 1, #v do
    if not v[j] then stale[#stale + 1] = keys[first + j - 1] end
    if values then values[#values + 1] = v[j] end
  end
end
local CHUNK = 256
local COUNT_CHECKED = 10000
if mode == 'c' then
  -- Up to COUNT_CHECKED keys, every key is checked, so that a key another program deleted
  -- is not counted. A larger range is counted from the index alone (ZLEXCOUNT, O(log N)):
  -- checking it would hold the server for a time that grows with the range, and such a key
  -- is counted until a reconcile or a read takes its delete in.
  local indexed = ix_count(P, min, max)
  if indexed > COUNT_CHECKED then return { rev, indexed, stale, pinned_mark() } end
  local count, from = 0, min
  while true do
    local keys = ix_range(P, from, max, CHUNK)
    if #keys > 0 then
      local before = #stale
      check_values(keys, 1, #keys, nil)
      count = count + #keys - (#stale - before)
    end
    if #keys < CHUNK then break end
    from = '(' .. keys[#keys]
  end
  return { rev, count, stale, pinned_mark() }
end
local keys = ix_range(P, min, max, limit)
local metas, values = {}, {}
for i = 1, #keys, CHUNK do
  local last = math.min(i + CHUNK - 1, #keys)
  local m = redis.call('HMGET', P .. 'meta', unpack(keys, i, last))
  for j = 1, #m do metas[#metas + 1] = m[j] end
  check_values(keys, i, last, mode == 'v' and values or nil)
end
-- Collections: the collection index, skipping keys another program emptied (until the
-- reconciler untracks them), until `climit` live ones are found.
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
      elseif t == 'string' and redis.call('HEXISTS', P .. 'meta', k) == 0 then
        -- Another program's string where a collection was: listed once adopted.
        stale[#stale + 1] = k
      end
    end
    if #chunk < 256 then break end
    from = '(' .. chunk[#chunk]
  end
end
local log = {}
if after and after ~= '' then
  local LOG_COUNT = 1000
  local first_rev = 0
  local first = redis.call('XRANGE', P .. 'log', '-', '+', 'COUNT', 1)
  if #first > 0 then
    -- One revision (field `e`, the id's) or a batch's (a field each, named by the revision).
    local fields = first[1][2]
    if fields[1] == 'e' then
      first_rev = tonumber(string.match(first[1][1], '^(%d+)'))
    else
      first_rev = tonumber(fields[1])
    end
  end
  local entries = {}
  if tonumber(after) <= rev then
    entries = redis.call('XRANGE', P .. 'log', after .. '-0', rev .. '-0', 'COUNT', LOG_COUNT)
  end
  log = { first_rev, tonumber(redis.call('GET', P .. 'compacted') or '0'), entries }
end
local page_mark = pinned_mark()
-- A page that more keys or collections follow is the first of a listing whose next pages
-- are read at its revision.
if marked == '1' and ((limit >= 0 and #keys >= limit) or (type(climit) == 'number' and climit >= 0 and #ckeys >= climit)) then
  page_mark = mark(rev_text)
end
return { rev, keys, metas, values, { ckeys, ctypes, csizes }, stale, log, page_mark }
