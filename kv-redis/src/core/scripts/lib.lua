-- Shared by every writing script, which starts with `begin(ARGV)`: ARGV[1] is the internal
-- prefix, ARGV[2] the number of revisions the event log retains. The same text serves both
-- ways the store runs its scripts: each script alone (EVALSHA), this library before it; or
-- every script as a function of one library (FUNCTION LOAD once, then FCALL), where what this
-- file declares lives between calls, so that `begin` sets each call's state afresh.
--
-- Layout under the prefix P:
--   P.."rev"      string: the store revision
--   P.."meta"     hash: user key -> "create:mod:version:lease:digest", the digest being the
--                 first 16 hex digits of the value's SHA-1, so that a reconciler can tell
--                 another program's write from the store's own (older entries may lack it)
--   P.."ixd", P.."ix:"..bound  the ordered index of every plain key, in buckets (see
--                 `index.lua`, which comes before this file)
--   P.."cidx"     zset (score 0): every collection key, so prefix deletes find them
--   P.."log"      stream: the revisions' events, in entries "<revision>-0": an entry holds
--                 one revision, in its field "e", or a batch's consecutive revisions, a
--                 field each named by the revision (its id is the last one's)
--   P.."compacted" string: no watch starts before this revision
--   P.."leases"   zset: lease id -> deadline (server time, ms)
--   P.."lttl"     hash: lease id -> granted TTL (ms)
--   P.."lk:"..id  set: keys attached to a lease
--   P.."leaseid"  string: the last lease id granted
--   P.."reconciler:"..digest  string: the id of the store whose reconciler runs for one set
--                 of roots (expires unless renewed)
--
-- Redis is the source of truth for what exists: a plain string at a user key without
-- metadata was written by another program, and the first script that touches it adopts it
-- (metadata, index, and a put event at a revision of its own) before acting on it.
local P, RETENTION, K_REV, K_META, K_CIDX, K_LOG, K_LEASES, K_LTTL

local function lease_set(id)
  return P .. 'lk:' .. id
end

-- The fields of metadata `m`: create revision, mod revision, version (numbers), lease id
-- (the decimal string, '0' for none) and the value's digest ('' when not recorded).
local function parse_meta(m)
  local c, r, v, l, d = string.match(m, '^(%d+):(%d+):(%d+):(%-?%d+):?(%x*)$')
  return tonumber(c), tonumber(r), tonumber(v), l, d
end

local function meta_lease(m)
  local _, _, _, l = parse_meta(m)
  return l
end

-- The digest of a value kept in its metadata. The client sends the digest of the values it
-- writes (the same function: `value_digest` in core.rs), so that the server computes only
-- those of values other programs wrote.
local function digest(value)
  return string.sub(redis.sha1hex(value), 1, 16)
end

-- Metadata of a key written at revision `rev` as version `version`.
local function make_meta(create, rev, version, lease, value)
  return create .. ':' .. rev .. ':' .. version .. ':' .. lease .. ':' .. digest(value)
end

-- Whether the connection's ACL user may run `cmd` with `...` (servers before Redis 7 lack the
-- check and refuse a command as it runs). Writing scripts check each write before the first
-- one, so that a key outside the user's ACL fails the whole operation and writes nothing (a
-- put needs no check: its first write is the user's key, see `checked_set`);
-- reads need no check, as each key is first read (`MGET`, `TYPE`) before any write.
local function may(cmd, ...)
  return not redis.acl_check_cmd or redis.acl_check_cmd(cmd, ...)
end

-- The error of op `i` that the user may not run.
local function no_permission(i, what)
  return redis.error_reply('NOPERM op ' .. i .. ': this user has no permission to ' .. what .. ' the key')
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function current_revision()
  return tonumber(redis.call('GET', K_REV) or '0')
end

-- The events of the revision being written. Each is encoded as one kind byte ('p' or 'd';
-- 'P' or 'D' when the previous value is unknown, see `absorb`)
-- followed by five length-prefixed strings `<decimal length>:<bytes>` (key, value, meta,
-- previous value, previous meta); the revision's log entry holds them concatenated in one
-- field, so a transaction of any size is one XADD.
local events = {}

-- Numbers formatted once (Lua formats a number as a float, which costs more than the rest of
-- building an event): `LEN[n]` is `<n>:`, an event field's length, and `DECIMAL[n]` the
-- decimal text of n. A function library keeps them between calls, up to FORMATTED_MAX
-- numbers (`begin` starts afresh past it).
local FORMATTED_MAX = 4096
local formatted_count = 0
local function formatted(suffix)
  return setmetatable({}, { __index = function(t, n)
    local s = string.format('%d', n) .. suffix
    t[n] = s
    formatted_count = formatted_count + 1
    return s
  end })
end
local LEN, DECIMAL

local function push_event(kind, key, value, meta, prev_value, prev_meta)
  prev_value, prev_meta = prev_value or '', prev_meta or ''
  events[#events + 1] = kind .. LEN[#key] .. key .. LEN[#value] .. value .. LEN[#meta] .. meta
    .. LEN[#prev_value] .. prev_value .. LEN[#prev_meta] .. prev_meta
end

-- Drops the metadata, index entry and lease attachment of a plain key with metadata `m`.
local function forget_plain(key, m)
  redis.call('HDEL', K_META, key)
  ix_rem(P, key)
  local lease = meta_lease(m)
  if lease ~= '0' then
    redis.call('SREM', lease_set(lease), key)
  end
end

-- Deletes a plain key that has metadata `m`, recording its delete event.
local function delete_plain(key, m)
  local value = redis.call('GET', key) or ''
  redis.call('DEL', key)
  forget_plain(key, m)
  push_event('d', key, '', '', value, m)
end

-- The metadata a foreign string with `value` gets when adopted at revision `rev`.
local function adopted_meta(rev, value)
  return make_meta(rev, rev, 1, '0', value)
end

-- What Redis holds at `key`, against the store's metadata. Returns the metadata (nil when
-- the key does not exist for the store once reconciled), the key's type, and the fix that
-- reconciling it needs, if any, with its data:
--   'adopt', value: a string without metadata (another program wrote it);
--   'forget', metadata: metadata without a string (another program deleted the key or
--   replaced it with another type);
--   'change', { value, metadata }: with `deep`, a string whose digest differs from the one
--   in its metadata (another program overwrote it).
-- With `deep`, a string's value comes last when it needs no fix.
local function inspect(key, deep)
  local m = redis.call('HGET', K_META, key)
  local t = redis.call('TYPE', key)['ok']
  if t == 'string' then
    if not m then
      return nil, t, 'adopt', redis.call('GET', key)
    end
    if deep then
      local _, _, _, _, d = parse_meta(m)
      local value = redis.call('GET', key)
      if d ~= '' and d ~= digest(value) then
        return m, t, 'change', { value, m }
      end
      return m, t, nil, nil, value
    end
    return m, t
  end
  if m then
    return nil, t, 'forget', m
  end
  return nil, t
end

-- The metadata of `key` once `fix` is applied at revision `rev` (see `absorb`).
local function fixed_meta(fix, data, rev)
  if fix == 'adopt' then
    return adopted_meta(rev, data)
  elseif fix == 'change' then
    local c, _, v, l = parse_meta(data[2])
    return make_meta(c, rev, v + 1, l, data[1])
  end
  return nil
end

-- An error reply naming op `i` unless `lease` is '0' or a lease whose deadline has not passed.
local function check_lease(i, lease)
  if lease == '0' then
    return nil
  end
  local deadline = redis.call('ZSCORE', K_LEASES, lease)
  if not deadline or tonumber(deadline) <= now_ms() then
    return redis.error_reply('KVLEASE ' .. i .. ' lease ' .. lease .. ' not found')
  end
  return nil
end

-- Whether `err`, the error of a command the script ran, is the ACL's refusal: Redis 7.0 says
-- the user "can't access" a key or "can't run" the command, later versions "ACL failure".
local function acl_refusal(err)
  return string.sub(err, 1, 6) == 'NOPERM' or string.find(err, "script can't", 1, true) ~= nil
    or string.find(err, 'ACL failure', 1, true) ~= nil
end

-- The write of a put of the plain key `key`, after its lease's check: the value with
-- `SET ... GET`, which writes nothing when it refuses the key, for its type (a collection) or
-- because the user's ACL does not allow it, and is the put's first write, so that it needs no
-- permission check of its own. Returns the previous value (false for none), or nil and the
-- error reply.
local function checked_set(key, value, lease)
  local err = check_lease(1, lease)
  if err then
    return nil, err
  end
  local prev = redis.pcall('SET', key, value, 'GET')
  if type(prev) == 'table' then
    if string.sub(prev.err, 1, 9) == 'WRONGTYPE' then
      return nil, redis.error_reply('KVWRONGTYPE 1 holds a ' .. redis.call('TYPE', key)['ok'])
    elseif acl_refusal(prev.err) then
      return nil, no_permission(1, 'write')
    end
    return nil, prev
  end
  return prev
end

-- Records the put of the plain key `key` at revision `rev` (a string), attached to `lease`
-- ('0' for none): moves its lease attachment and pushes its put event. `hash` is the value's
-- digest (the client computes it: see `digest`), `old` the key's metadata before the write
-- (nil when it had none) and `prev_value` its value then; the caller has checked the type and
-- the lease, and writes the value and the metadata this returns (and adds the key to the
-- index when `old` is nil), so that a transaction writes all of its puts together.
local function record_put(key, value, hash, lease, old, prev_value, rev)
  local create, version, old_lease = rev, '1', '0'
  if old then
    local c, v, l = string.match(old, '^(%d+):%d+:(%d+):(%-?%d+)')
    create, version, old_lease = c, DECIMAL[v + 1], l
  end
  if old_lease ~= '0' and old_lease ~= lease then
    redis.call('SREM', lease_set(old_lease), key)
  end
  if lease ~= '0' then
    redis.call('SADD', lease_set(lease), key)
  end
  local m = create .. ':' .. rev .. ':' .. version .. ':' .. lease .. ':' .. hash
  push_event('p', key, value, m, prev_value, old)
  return m
end

-- The Redis types of collections, with their kind tags (as kv-core's `CollectionKind::tag`).
local COLLECTION_TAG = { set = 's', hash = 'm', list = 'l' }
local TYPE_OF_TAG = { s = 'set', m = 'hash', l = 'list' }

-- The collection changes of the revision being written, per collection: `corder` lists
-- each collection once ({ id, key, tag }) in the order it was first touched, `cgroups[id]`
-- its changes ({ code, a1, a2, a3 }), `cexisted[id]` whether it existed before. `commit`
-- logs them after the plain events, each as a 'c' event whose five strings are the key, the
-- kind tag and change code, and up to three arguments:
--   sa member | sr member | mp field value | mP field value prev | md field prev
--   ll item | lx item count | lo item | sD size, mD size, lD size (deleted)
-- A collection the revision leaves empty logs one D (nothing when it did not exist before).
-- A D carries the size the collection had before the revision, `csize[id]`, so that reads
-- at a past revision can rewind a listing through the delete. The tables exist once a
-- collection is touched (most runs touch none, and every table costs every run).
local corder, cgroups, cexisted, csize
local SIZE_OF_TAG = { s = 'SCARD', m = 'HLEN', l = 'LLEN' }

-- Notes that the collection of `tag` at `key` is about to be written (call it before the
-- write, so that whether it existed is known).
local function ctouch(key, tag)
  local id = tag .. key
  if not corder then
    corder, cgroups, cexisted, csize = {}, {}, {}, {}
  end
  if cgroups[id] == nil then
    cgroups[id] = {}
    corder[#corder + 1] = { id, key, tag }
    cexisted[id] = redis.call('TYPE', key)['ok'] == TYPE_OF_TAG[tag]
    csize[id] = cexisted[id] and redis.call(SIZE_OF_TAG[tag], key) or 0
  end
  return id
end

-- Records a change of the collection (touched before the write).
local function cchange(key, tag, code, a1, a2, a3)
  local id = ctouch(key, tag)
  if code == 'D' then
    cgroups[id] = {}
    a1 = tostring(csize[id])
  end
  local g = cgroups[id]
  g[#g + 1] = { code, a1 or '', a2 or '', a3 or '' }
end

-- Moves the collection changes into the revision's events.
local function flush_collections()
  if not corder then
    return
  end
  for _, c in ipairs(corder) do
    local id, key, tag = c[1], c[2], c[3]
    if redis.call('TYPE', key)['ok'] ~= TYPE_OF_TAG[tag] then
      if cexisted[id] then
        push_event('c', key, tag .. 'D', tostring(csize[id]), '', '')
      end
    else
      for _, e in ipairs(cgroups[id]) do
        push_event('c', key, tag .. e[1], e[2], e[3], e[4])
      end
    end
  end
  corder, cgroups, cexisted, csize = nil, nil, nil, nil
end

-- Deletes the plain key or the collection at `key`, whoever wrote the collection; returns 1
-- if there was one, else 0. A foreign string must have been adopted first.
local function delete_key(key)
  local m = redis.call('HGET', K_META, key)
  if m then
    delete_plain(key, m)
    return 1
  end
  redis.call('ZREM', K_CIDX, key)
  local t = redis.call('TYPE', key)['ok']
  local tag = COLLECTION_TAG[t]
  if tag then
    ctouch(key, tag)
    redis.call('DEL', key)
    cchange(key, tag, 'D')
    return 1
  end
  return 0
end

-- Writes the log entry of revision `rev` (a number; `string.format` writes it faster than
-- Lua's own number-to-string conversion) (every revision has exactly one entry, so readers
-- can tell a trimmed gap from a quiet range) and trims the log to the retention. The trim is
-- approximate (whole stream nodes, far cheaper than exact trimming): at least RETENTION
-- revisions stay, and what remains is always a contiguous run of the latest revisions.
local function append_log(rev)
  -- A revision of one event logs that event's string itself: concatenating it would make
  -- Lua hash and compare an equal string of some hundreds of bytes again.
  local blob = events[1]
  if #events ~= 1 then
    blob = table.concat(events)
  end
  redis.call('XADD', K_LOG, string.format('%d-0', rev), 'e', blob)
  -- Trimming works on whole nodes, so once every 32 revisions is as good as every time.
  if RETENTION > 0 and rev > RETENTION and rev % 32 == 0 then
    redis.call('XTRIM', K_LOG, 'MINID', '~', string.format('%d-0', rev - RETENTION + 1))
  end
end

-- Writes one log entry holding the revisions of a batch of writes, `first` to `last`:
-- `fields` is each revision's decimal text followed by its events' string. Trims as
-- `append_log` does, once the batch passes a multiple of 32.
local function append_batch_log(fields, first, last)
  if first == last then
    redis.call('XADD', K_LOG, string.format('%d-0', last), 'e', fields[2])
  else
    redis.call('XADD', K_LOG, string.format('%d-0', last), unpack(fields))
  end
  if RETENTION > 0 and last > RETENTION and math.floor(last / 32) > math.floor((first - 1) / 32) then
    redis.call('XTRIM', K_LOG, 'MINID', '~', string.format('%d-0', last - RETENTION + 1))
  end
end

-- The first revision a stream entry of the log holds (see the layout above).
local function first_logged(entry)
  local fields = entry[2]
  if fields[1] == 'e' then
    return tonumber(string.match(entry[1], '^(%d+)'))
  end
  return tonumber(fields[1])
end

-- Sets the store revision to `rev` and writes its log entry.
local function commit(rev)
  flush_collections()
  redis.call('SET', K_REV, string.format('%d', rev))
  append_log(rev)
end

-- Applies the fixes found by `inspect` ({ key, fix, data } each) at the next revision,
-- committed on its own before the caller's revision, with a put event per adopted or
-- changed string (its metadata becomes `fixed_meta`) and a delete event per forgotten key.
-- Returns that revision.
local function absorb(fixes)
  local rev = current_revision() + 1
  for _, f in ipairs(fixes) do
    local key, fix, data = f[1], f[2], f[3]
    -- Another program's overwrite or delete leaves no previous value: those events are
    -- 'P' and 'D', with the previous metadata only, so that no read at an earlier revision
    -- makes one up.
    if fix == 'forget' then
      forget_plain(key, data)
      push_event('D', key, '', '', '', data)
    elseif fix == 'change' then
      local m = fixed_meta(fix, data, rev)
      redis.call('HSET', K_META, key, m)
      push_event('P', key, data[1], m, '', data[2])
    else
      local m = fixed_meta(fix, data, rev)
      redis.call('HSET', K_META, key, m)
      ix_add(P, key)
      redis.call('ZREM', K_CIDX, key)
      push_event('p', key, data, m)
    end
  end
  commit(rev)
  events = {}
  return rev
end

-- Deletes every key still attached to the lease `id` and forgets the lease. Returns the
-- number of keys deleted; their delete events are pushed.
local function drop_lease(id)
  local keys = redis.call('SMEMBERS', lease_set(id))
  local deleted = 0
  for _, key in ipairs(keys) do
    local m = redis.call('HGET', K_META, key)
    if m and meta_lease(m) == id then
      delete_plain(key, m)
      deleted = deleted + 1
    end
  end
  redis.call('DEL', lease_set(id))
  redis.call('ZREM', K_LEASES, id)
  redis.call('HDEL', K_LTTL, id)
  return deleted
end

-- Expires every lease whose deadline has passed, one revision per lease that had keys.
local function sweep_expired(now, max)
  local ids = redis.call('ZRANGEBYSCORE', K_LEASES, '-inf', now, 'LIMIT', 0, max)
  for _, id in ipairs(ids) do
    events = {}
    if drop_lease(id) > 0 then
      commit(current_revision() + 1)
    end
  end
  events = {}
  return #ids
end

-- Sets the state of a call from its arguments: the prefix and the names under it, the
-- retention, and an empty revision (a function library keeps these between calls, and a call
-- that failed may have left events behind).
local function begin(argv)
  if argv[1] ~= P then
    P = argv[1]
    K_REV, K_META, K_CIDX, K_LOG = P .. 'rev', P .. 'meta', P .. 'cidx', P .. 'log'
    K_LEASES, K_LTTL = P .. 'leases', P .. 'lttl'
  end
  RETENTION = tonumber(argv[2])
  if not LEN or formatted_count > FORMATTED_MAX then
    LEN, DECIMAL, formatted_count = formatted(':'), formatted(''), 0
  end
  events = {}
  corder, cgroups, cexisted, csize = nil, nil, nil, nil
end
