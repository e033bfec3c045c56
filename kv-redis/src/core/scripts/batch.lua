-- The group commit's function (see `commit.rs`), appended to the library after the writing
-- functions. ARGV is the prefix and the retention, then each write as its function's name,
-- its argument count and its arguments. It runs the writes in order and answers three values
-- per write, in one flat array (Redis converts every table of a reply at a cost of its own,
-- about 0.35 µs, more than most commands):
--   a put or delete: its revision, and its previous value and metadata (false, false when
--   it reports none), as `put.lua` and `delete.lua` answer { revision, { value, meta } };
--   a rotation: -3, its revision, the item moved to the end (false for none);
--   a transaction: -1, its reply, false;
--   a write that failed: -2, the text of the error reply it returned or raised, false.
-- So one write's failure is its own (a write checks everything before its first write, so a
-- failed write wrote nothing).
--
-- A run of consecutive plain puts and list rotations shares what its writes would each
-- repeat: one HMGET of the puts' metadata, the revision counter read once and written once,
-- one HSET of the metadata, one ZADD of the new keys, and one log entry holding the run's
-- revisions (a field each). Each write still has its own revision, its own events and its
-- own reply, exactly as `put.lua` or `rotate.lua` would give them.

-- The error text of a failed write: the `err` of an error reply, or a raised Lua error.
local function error_text(e)
  if type(e) == 'table' and e.err then
    return e.err
  end
  return 'ERR ' .. tostring(e)
end

-- What a put run holds back until it ends (or until a put needs the store as its own script
-- would find it): the revision, the metadata written, the keys new to the index, and the log
-- fields of its revisions from `run_first` on.
local run_rev, run_meta, run_new, run_new_count, run_dirty, run_log, run_first

local function run_flush()
  if not run_dirty then
    return
  end
  local fields = {}
  for key, m in pairs(run_meta) do
    fields[#fields + 1] = key
    fields[#fields + 1] = m
  end
  if #fields > 0 then
    redis.call('HSET', K_META, unpack(fields))
  end
  if run_new_count > 0 then
    local args = {}
    for i = 1, run_new_count do
      args[#args + 1] = 0
      args[#args + 1] = run_new[i]
    end
    redis.call('ZADD', K_IDX, unpack(args))
  end
  redis.call('SET', K_REV, run_rev)
  if #run_log > 0 then
    append_batch_log(run_log, run_first, run_rev)
  end
  run_meta, run_new, run_new_count, run_dirty, run_log = {}, {}, 0, false, {}
end

-- Logs the revision the run just took, `run_rev` (its decimal `text`), whose one event is
-- `events[1]`.
local function run_logged(text)
  if #run_log == 0 then
    run_first = run_rev
  end
  run_log[#run_log + 1] = text
  run_log[#run_log + 1] = events[1]
end

-- One put of a run: as `put.lua`, with the metadata from `metas` (the run's view) and the
-- revision from `run_rev`. Returns its revision and its previous value and metadata (false
-- when not asked for or none), or an error reply.
local function run_put(key, value, lease, want_prev, hash, metas)
  if not may('SET', key, value) then
    return no_permission(1, 'write')
  end
  local err = check_lease(1, lease)
  if err then
    return err
  end
  local old = metas[key]
  local prev = redis.pcall('SET', key, value, 'GET')
  if type(prev) == 'table' then
    if string.sub(prev.err, 1, 9) == 'WRONGTYPE' then
      return redis.error_reply('KVWRONGTYPE 1 holds a ' .. redis.call('TYPE', key)['ok'])
    end
    return prev
  end
  if (prev and not old) or (old and not prev) then
    -- Another program wrote or deleted the key: reconciling it is a revision of its own,
    -- written by the shared helpers on the store as it stands, so the run writes what it
    -- holds back first.
    run_flush()
    if prev and not old then
      old = adopted_meta(absorb({ { key, 'adopt', prev } }), prev)
    else
      absorb({ { key, 'forget', old } })
      old = nil
    end
    run_rev = current_revision()
  end
  events = {}
  run_rev = run_rev + 1
  run_dirty = true
  local rev = run_rev
  local text = string.format('%d', rev)
  local m = record_put(key, value, hash, lease, old, prev or '', text)
  metas[key] = m
  run_meta[key] = m
  if not old then
    run_new_count = run_new_count + 1
    run_new[run_new_count] = key
  end
  run_logged(text)
  if want_prev and old then
    return rev, prev, old
  end
  return rev, false, false
end

-- One rotation of a run: as `rotate.lua`, with the revision from `run_rev`. Returns its
-- revision and the item moved to the end (false for none), or an error reply.
local function run_rotate(key)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= 'list' then
    return redis.error_reply('KVWRONGTYPE 1 holds a ' .. t)
  end
  if not may('LMOVE', key, key, 'LEFT', 'RIGHT') then
    return no_permission(1, 'write')
  end
  if t == 'none' or redis.call('LLEN', key) < 2 then
    return run_rev, redis.call('LINDEX', key, 0)
  end
  local item = redis.call('LMOVE', key, key, 'LEFT', 'RIGHT')
  events = {}
  push_event('c', key, 'lo', item, '', '')
  run_rev = run_rev + 1
  run_dirty = true
  run_logged(string.format('%d', run_rev))
  return run_rev, item
end

-- Appends the three values of a write that failed with `e` to `out`.
local function failed(out, e)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3] = -2, error_text(e), false
end

-- Whether ARGV[i] starts a write a run takes: a plain put or a rotation.
local function in_run(argv, i)
  local name, argc = argv[i], argv[i + 1]
  return (name == 'put' and argc == '5') or (name == 'rotate' and argc == '1')
end

-- Runs the consecutive puts and rotations whose arguments start at ARGV[first], appending
-- their three values each to `out`; returns where the next write starts.
local function run(argv, first, out)
  local n = #argv
  local keys, distinct = {}, {}
  local i = first
  while i <= n and in_run(argv, i) do
    local key = argv[i + 2]
    if argv[i] == 'put' and not distinct[key] then
      distinct[key] = true
      keys[#keys + 1] = key
    end
    i = i + 2 + tonumber(argv[i + 1])
  end
  local last = i
  local metas = {}
  if #keys > 0 then
    local found = redis.call('HMGET', K_META, unpack(keys))
    for k, key in ipairs(keys) do
      metas[key] = found[k] or nil
    end
  end
  run_rev, run_meta, run_new, run_new_count, run_dirty, run_log = current_revision(), {}, {}, 0, false, {}
  i = first
  while i < last do
    local a, o = i + 2, #out
    if argv[i] == 'put' then
      local ok, rev, prev, old = pcall(run_put, argv[a], argv[a + 1], argv[a + 2], argv[a + 3] == '1', argv[a + 4], metas)
      if not ok or type(rev) == 'table' then
        failed(out, rev)
      else
        out[o + 1], out[o + 2], out[o + 3] = rev, prev, old
      end
      i = i + 7
    else
      local ok, rev, item = pcall(run_rotate, argv[a])
      if not ok or type(rev) == 'table' then
        failed(out, rev)
      else
        out[o + 1], out[o + 2], out[o + 3] = -3, rev, item
      end
      i = i + 3
    end
  end
  run_flush()
  events = {}
  return last
end

local BATCHED = { put = f_put, delete = f_delete, txn = f_txn, rotate = f_rotate }

redis.register_function{function_name='@V@_batch', callback=function(KEYS, ARGV)
  begin(ARGV)
  local out, i, n = {}, 3, #ARGV
  while i <= n do
    local name, argc = ARGV[i], tonumber(ARGV[i + 1])
    if in_run(ARGV, i) then
      i = run(ARGV, i, out)
    else
      local sub = { ARGV[1], ARGV[2] }
      for j = 1, argc do
        sub[j + 2] = ARGV[i + 1 + j]
      end
      i = i + 2 + argc
      local ok, reply = pcall(BATCHED[name], KEYS, sub)
      local n = #out
      if not ok or type(reply) ~= 'table' or reply.err then
        failed(out, reply)
      elseif name == 'txn' or name == 'rotate' then
        out[n + 1], out[n + 2], out[n + 3] = -1, reply, false
      else
        local p = reply[2] or { false, false }
        out[n + 1], out[n + 2], out[n + 3] = reply[1], p[1], p[2]
      end
    end
  end
  return out
end}
