-- One transaction, atomically: compares, then the chosen branch's ops. Every compare and
-- every type is checked before the first write, so a failing transaction writes nothing.
--
-- ARGV after the two shared ones: the most keys the branch's prefix deletes may remove
-- together, the compare count, five words per compare (key, target, op, operand, member),
-- then the success ops and the failure ops, each branch as a count followed by its ops (a
-- code and the code's fixed number of words).

-- The words after each code (a put's: key, value, lease, and the value's digest).
local ARITY = { g = 1, p = 4, d = 1, D = 2, sa = 2, sr = 2, sc = 2, sm = 1, ss = 3, mp = 3, mg = 2,
  md = 2, ma = 1, lp = 2, lf = 2, lr = 2, lg = 3, lo = 1, lk = 4, ll = 1 }
-- What the collection ops need, built by the first one (every table costs every run, and
-- most transactions have no collection op): each op's Redis type, whether it creates the
-- collection, and the command (and dummy arguments) whose permission each write needs.
local KIND, CREATES, WRITE_CHECK
local function collection_ops()
  KIND = { sa = 'set', sr = 'set', sc = 'set', sm = 'set', ss = 'set', mp = 'hash', mg = 'hash',
    md = 'hash', ma = 'hash', lp = 'list', lf = 'list', lr = 'list', lg = 'list', lo = 'list',
    lk = 'list', ll = 'list' }
  CREATES = { sa = true, mp = true, lp = true, lf = true }
  WRITE_CHECK = { sa = { 'SADD', 'm' }, sr = { 'SREM', 'm' }, mp = { 'HSET', 'f', 'v' },
    md = { 'HDEL', 'f' }, lp = { 'RPUSH', 'i' }, lf = { 'LPUSH', 'i' }, lr = { 'LREM', '0', 'i' },
    lo = { 'LMOVE', '', 'LEFT', 'RIGHT' }, lk = { 'LMOVE', '', 'LEFT', 'RIGHT' } }
end

-- Byte-wise comparison (Lua's `<` on strings follows the server's locale).
local function bytecmp(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y and -1 or 1
    end
  end
  if #a == #b then return 0 end
  return #a < #b and -1 or 1
end

local function holds(op, c)
  if op == '=' then return c == 0 end
  if op == '!' then return c ~= 0 end
  if op == '>' then return c > 0 end
  return c < 0
end

local function numcmp(a, b)
  if a == b then return 0 end
  return a < b and -1 or 1
end

local pos = 3
local function word()
  local w = ARGV[pos]
  pos = pos + 1
  return w
end
local MAX_PREFIX_DELETE_KEYS = tonumber(word())

-- What the transaction reads of each key before its writes: metadata (false for none),
-- type, and what another program did to it (see `inspect`; compared keys are also checked
-- for overwrites, so that a compare never passes on metadata another program's write made
-- stale). Those fixes are applied at revision ADOPT, before the transaction's own
-- revision, once every check has passed; compares see the keys as reconciled.
local current = current_revision()
local ADOPT = current + 1
local metas, types, values, fixes = {}, {}, {}, {}
local function meta_of(key, deep)
  local m = metas[key]
  if m == nil then
    local t, fix, data, value
    m, t, fix, data, value = inspect(key, deep)
    values[key] = value
    -- A type the branch's earlier ops gave the key stands.
    if types[key] == nil then
      types[key] = t
    end
    if fix then
      fixes[#fixes + 1] = { key, fix, data }
      m = fixed_meta(fix, data, ADOPT)
      if fix ~= 'forget' then
        values[key] = fix == 'adopt' and data or data[1]
      end
    end
    metas[key] = m or false
  end
  return m or nil
end

-- Compares: five words each (key, target, op, operand, member or field). A collection
-- compare on a key of another Redis type is refused before anything is written.
local SIZE = { set = 'SCARD', hash = 'HLEN', list = 'LLEN' }
local succeeded = true
local ncmp = tonumber(word())
for i = 1, ncmp do
  local key, target, op, operand, member = word(), word(), word(), word(), word()
  local kind = string.sub(target, 1, 1)
  if kind == 'M' or kind == 'S' or kind == 'F' then
    local tag = string.sub(target, 2, 2)
    local want = (kind == 'F' or tag == 'h') and 'hash' or tag == 's' and 'set' or 'list'
    local t = redis.call('TYPE', key)['ok']
    if t ~= 'none' and t ~= want then
      return redis.error_reply('KVWRONGTYPE compare ' .. i .. ': the key holds a ' .. t)
    end
    if succeeded then
      if t == 'none' then
        -- An absent collection: no member, no field, size 0.
        succeeded = kind ~= 'F' and holds(op, numcmp(0, tonumber(operand)))
      elseif kind == 'S' then
        succeeded = holds(op, numcmp(redis.call(SIZE[t], key), tonumber(operand)))
      elseif kind == 'F' then
        local v = redis.call('HGET', key, member)
        succeeded = v and holds(op, bytecmp(v, operand)) or false
      else
        local n
        if t == 'set' then
          n = redis.call('SISMEMBER', key, member)
        elseif t == 'hash' then
          n = redis.call('HEXISTS', key, member)
        else
          n = #redis.call('LPOS', key, member, 'COUNT', 0)
        end
        succeeded = holds(op, numcmp(n, tonumber(operand)))
      end
    end
  elseif succeeded then
    local m = meta_of(key, true)
    if target == 'V' then
      if not m then
        succeeded = false
      else
        succeeded = holds(op, bytecmp(values[key] or redis.call('GET', key) or '', operand))
      end
    else
      local stored = 0
      if m then
        local c, r, v, l = parse_meta(m)
        if target == 'c' then stored = c
        elseif target == 'm' then stored = r
        elseif target == 'v' then stored = v
        else stored = tonumber(l) end
      end
      succeeded = holds(op, numcmp(stored, tonumber(operand)))
    end
  end
end

-- A branch: the position in ARGV of each of its ops' code (its words follow the code).
local function read_branch()
  local ops = {}
  local n = tonumber(word())
  for i = 1, n do
    ops[i] = pos
    pos = pos + 1 + ARITY[ARGV[pos]]
  end
  return ops
end
local success_ops = read_branch()
local failure_ops = read_branch()
local ops = succeeded and success_ops or failure_ops

-- The plain keys the branch puts, deletes or reads that no compare inspected, inspected
-- together: as `inspect` does, but in two calls however many keys (MGET answers nil for a key
-- that holds no string; only those need more: one EXISTS for them all, and their TYPE when
-- some exist). Their values serve the put events' previous values.
do
  local keys, n = {}, 0
  for _, p in ipairs(ops) do
    local code = ARGV[p]
    if code == 'p' or code == 'd' or code == 'g' then
      local key = ARGV[p + 1]
      if metas[key] == nil then
        -- Until it is read: false marks it as seen.
        metas[key] = false
        n = n + 1
        keys[n] = key
      end
    end
  end
  if n > 0 then
    local ms = redis.call('HMGET', K_META, unpack(keys))
    local vs = redis.call('MGET', unpack(keys))
    local absent = {}
    for i = 1, n do
      if not vs[i] then
        absent[#absent + 1] = keys[i]
      end
    end
    local some_exist = #absent > 0 and redis.call('EXISTS', unpack(absent)) > 0
    for i, key in ipairs(keys) do
      local m, v, t = ms[i], vs[i], 'string'
      if not v then
        t = some_exist and redis.call('TYPE', key)['ok'] or 'none'
      end
      types[key] = t
      values[key] = v
      if v and not m then
        fixes[#fixes + 1] = { key, 'adopt', v }
        m = adopted_meta(ADOPT, v)
      elseif m and not v then
        fixes[#fixes + 1] = { key, 'forget', m }
        m = false
      end
      metas[key] = m
    end
  end
end

-- The branch's puts are written together, with one MSET (see `flush_puts`): when the user
-- may run it on all of their keys, one check covers them; otherwise each put is checked on
-- its own and written with SET. Servers before Redis 7 cannot check, so they write with SET,
-- the command a user's older ACL rules grant.
local mset = false
if redis.acl_check_cmd then
  local put_pairs, n = {}, 0
  for _, p in ipairs(ops) do
    if ARGV[p] == 'p' then
      put_pairs[n + 1], put_pairs[n + 2] = ARGV[p + 1], ARGV[p + 2]
      n = n + 2
    end
  end
  mset = n > 0 and redis.acl_check_cmd('MSET', unpack(put_pairs))
end

-- Checks, before any write: types (as they evolve through the branch), leases, and how many
-- keys the prefix deletes would remove (the server serves nobody else while they do: a
-- larger delete is refused rather than blocking it).
local function type_of(key)
  local t = types[key]
  if t == nil then
    t = redis.call('TYPE', key)['ok']
    types[key] = t
  end
  return t
end
local prefix_deletes = 0
for i, p in ipairs(ops) do
  local code, key, a2, a3 = ARGV[p], ARGV[p + 1], ARGV[p + 2], ARGV[p + 3]
  if code == 'p' then
    if not mset and not may('SET', key, a2) then
      return no_permission(i, 'write')
    end
    local t = types[key]
    if t ~= 'none' and t ~= 'string' then
      return redis.error_reply('KVWRONGTYPE ' .. i .. ' holds a ' .. t)
    end
    local err = check_lease(i, a3)
    if err then
      return err
    end
    types[key] = 'string'
  elseif code == 'D' then
    -- The index is counted a bucket at a time, and only as far as the limit.
    local n = redis.call('ZLEXCOUNT', K_CIDX, key, a2)
    n = n + ix_count(P, key, a2, MAX_PREFIX_DELETE_KEYS - prefix_deletes - n)
    prefix_deletes = prefix_deletes + n
    if prefix_deletes > MAX_PREFIX_DELETE_KEYS then
      return redis.error_reply('KVTOOLARGE ' .. i .. ' would delete at least ' .. prefix_deletes
        .. ' keys, more than the ' .. MAX_PREFIX_DELETE_KEYS .. ' one transaction may')
    end
    if redis.acl_check_cmd then
      for _, keys in ipairs({ ix_range(P, key, a2, -1), redis.call('ZRANGEBYLEX', K_CIDX, key, a2) }) do
        for _, k in ipairs(keys) do
          if not may('DEL', k) then
            return no_permission(i, 'delete')
          end
        end
      end
    end
  elseif code == 'd' or code == 'g' then
    if code == 'd' then
      if not may('DEL', key) then
        return no_permission(i, 'delete')
      end
      types[key] = 'none'
    end
  else
    if not KIND then
      collection_ops()
    end
    local t = type_of(key)
    if t ~= 'none' and t ~= KIND[code] then
      return redis.error_reply('KVWRONGTYPE ' .. i .. ' holds a ' .. t)
    end
    local write = WRITE_CHECK[code]
    -- LMOVE's destination is the list itself.
    if write and not may(write[1], key, write[2] == '' and key or write[2], unpack(write, 3)) then
      return no_permission(i, 'write')
    end
    if code == 'lk' then
      -- The map the rotation will read: the one of the list's head (no earlier op of the
      -- branch writes the list: `Txn::validate` refuses it). Its type is checked (and the
      -- user's permission to read it, by reading) before any write.
      local head = redis.call('LINDEX', key, 0)
      if head then
        local map = ARGV[p + 3] .. head .. ARGV[p + 4]
        local mt = type_of(map)
        if mt ~= 'none' and mt ~= 'hash' then
          return redis.error_reply('KVWRONGTYPE ' .. i .. ' names a map that holds a ' .. mt)
        end
      end
    end
    if CREATES[code] then
      types[key] = KIND[code]
    end
  end
end

-- Writes.
if #fixes > 0 then
  current = absorb(fixes)
end
local rev = current + 1
-- Formatted once for every put's metadata.
local rev_text = string.format('%d', rev)
local changed = false
local results = {}

-- The puts not yet written: values (key, value pairs), metadata (key, metadata pairs) and the
-- new keys, for the index. They are written together (one call each, and one index command
-- per bucket) before any other op runs, so that every other op sees them.
local put_values, put_metas, new_keys = {}, {}, {}
local function flush_puts()
  if #put_values == 0 then
    return
  end
  if mset then
    redis.call('MSET', unpack(put_values))
  else
    for j = 1, #put_values, 2 do
      redis.call('SET', put_values[j], put_values[j + 1])
    end
  end
  redis.call('HSET', K_META, unpack(put_metas))
  if #new_keys > 0 then
    ix_add_many(P, new_keys, #new_keys)
  end
  put_values, put_metas, new_keys = {}, {}, {}
end

-- Adds a collection key to the collection index, once per transaction.
local tracked = {}
local function track(key)
  if not tracked[key] then
    tracked[key] = true
    redis.call('ZADD', K_CIDX, '0', key)
  end
end

local function untrack_if_empty(key)
  if redis.call('EXISTS', key) == 0 then
    redis.call('ZREM', K_CIDX, key)
    tracked[key] = nil
  end
end

for i, p in ipairs(ops) do
  local code, key, a2, a3 = ARGV[p], ARGV[p + 1], ARGV[p + 2], ARGV[p + 3]
  local r
  if code ~= 'p' then
    flush_puts()
  end
  if code == 'p' then
    -- What was read before the writes, or what the branch's last put of the key wrote,
    -- unless a delete came between them.
    local old, prev = metas[key], values[key]
    if old == nil then
      old = redis.call('HGET', K_META, key)
    end
    if old and prev == nil then
      prev = redis.call('GET', key)
    end
    old = old or nil
    local m = record_put(key, a2, ARGV[p + 4], a3, old, prev or '', rev_text)
    local n = #put_values
    put_values[n + 1], put_values[n + 2] = key, a2
    put_metas[n + 1], put_metas[n + 2] = key, m
    if not old then
      new_keys[#new_keys + 1] = key
    end
    metas[key], values[key] = m, a2
    changed = true
    r = 1
  elseif code == 'g' then
    local m = redis.call('HGET', K_META, key)
    if m then
      r = { redis.call('GET', key) or '', m }
    else
      r = false
    end
  elseif code == 'd' then
    metas[key], values[key] = nil, nil
    tracked[key] = nil
    r = delete_key(key)
  elseif code == 'D' then
    r = 0
    tracked = {}
    metas, values = {}, {}
    for _, k in ipairs(ix_range(P, key, a2, -1)) do
      r = r + delete_key(k)
    end
    for _, k in ipairs(redis.call('ZRANGEBYLEX', K_CIDX, key, a2)) do
      r = r + delete_key(k)
    end
  elseif code == 'sa' then
    ctouch(key, 's')
    r = redis.call('SADD', key, a2)
    if r > 0 then
      track(key)
      cchange(key, 's', 'a', a2)
    end
  elseif code == 'sr' then
    ctouch(key, 's')
    r = redis.call('SREM', key, a2)
    if r > 0 then
      untrack_if_empty(key)
      cchange(key, 's', 'r', a2)
    end
  elseif code == 'sc' then
    r = redis.call('SISMEMBER', key, a2)
  elseif code == 'sm' then
    r = redis.call('SMEMBERS', key)
  elseif code == 'ss' then
    r = redis.call('SSCAN', key, a2, 'COUNT', a3)
  elseif code == 'mp' then
    local old = redis.call('HGET', key, a2)
    if old == a3 then
      r = 0
    else
      ctouch(key, 'm')
      redis.call('HSET', key, a2, a3)
      cchange(key, 'm', old and 'P' or 'p', a2, a3, old)
      track(key)
      r = old and 0 or 1
      changed = true
    end
  elseif code == 'mg' then
    r = redis.call('HGET', key, a2)
  elseif code == 'md' then
    local old = redis.call('HGET', key, a2)
    r = 0
    if old then
      ctouch(key, 'm')
      r = redis.call('HDEL', key, a2)
      cchange(key, 'm', 'd', a2, old)
      untrack_if_empty(key)
    end
  elseif code == 'ma' then
    r = redis.call('HGETALL', key)
  elseif code == 'lp' then
    ctouch(key, 'l')
    r = redis.call('RPUSH', key, a2)
    cchange(key, 'l', 'l', a2)
    track(key)
  elseif code == 'lf' then
    ctouch(key, 'l')
    r = redis.call('LPUSH', key, a2)
    cchange(key, 'l', 'f', a2)
    track(key)
  elseif code == 'lr' then
    ctouch(key, 'l')
    r = redis.call('LREM', key, 0, a2)
    if r > 0 then
      untrack_if_empty(key)
      cchange(key, 'l', 'x', a2, tostring(r))
    end
  elseif code == 'lg' then
    r = redis.call('LRANGE', key, a2, a3)
  elseif code == 'lo' or code == 'lk' then
    -- A one-item list is its own rotation: no change.
    local item
    if redis.call('LLEN', key) > 1 then
      ctouch(key, 'l')
      item = redis.call('LMOVE', key, key, 'LEFT', 'RIGHT')
      cchange(key, 'l', 'o', item)
      changed = true
    else
      item = redis.call('LINDEX', key, 0)
    end
    if code == 'lo' then
      r = item
    else
      -- And field `a2` of the moved item's map: prefix `a3`, the item, the suffix.
      local map = item and (a3 .. item .. ARGV[p + 4])
      r = { item or false, map and redis.call('HGET', map, a2) or false }
    end
  elseif code == 'll' then
    r = redis.call('LLEN', key)
  end
  if (code == 'd' or code == 'D' or code == 'sa' or code == 'sr' or code == 'md' or code == 'lr') and r > 0 then
    changed = true
  elseif code == 'lp' or code == 'lf' then
    changed = true
  end
  results[i] = r
end

flush_puts()
if changed then
  commit(rev)
  current = rev
end
return { succeeded and 1 or 0, current, results }
