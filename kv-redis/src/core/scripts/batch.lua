-- The group commit's function (see `commit.rs`), appended to the library after the writing
-- functions. ARGV is the prefix and the retention, then each write as its function's name,
-- its argument count and its arguments. It runs the writes in order and answers three values
-- per write, in one flat array (Redis converts every table of a reply at a cost of its own,
-- about 0.35 µs, more than most commands):
--   a put or delete: its revision, and its previous value and metadata (false, false when
--   it reports none), as `put.lua` and `delete.lua` answer { revision, { value, meta } };
--   a transaction (a rotation too): -1, its reply, false;
--   a write that failed: -2, the text of the error reply it returned or raised, false.
-- So one write's failure is its own (a write checks everything before its first write, so a
-- failed write wrote nothing).
--
-- A run of consecutive plain puts shares what its puts would each repeat: one HMGET of their
-- metadata, the revision counter read once and written once, one HSET of their metadata, one
-- ZADD of their new keys, and one log entry holding their revisions (a field each). Each put
-- still has its own revision, its own events and its own reply, exactly as `put.lua` would
-- give them.

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
  if #run_log == 0 then
    run_first = rev
  end
  run_log[#run_log + 1] = text
  run_log[#run_log + 1] = events[1]
  if want_prev and old then
    return rev, prev, old
  end
  return rev, false, false
end

-- Appends the three values of a write that failed with `e` to `out`.
local function failed(out, e)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3] = -2, error_text(e), false
end

-- Runs the puts whose arguments start at ARGV[first], `count` of them (5 arguments each),
-- appending their three values each to `out`.
local function put_run(argv, first, count, out)
  local keys, distinct = {}, {}
  for j = 0, count - 1 do
    local key = argv[first + j * 7 + 2]
    if not distinct[key] then
      distinct[key] = true
      keys[#keys + 1] = key
    end
  end
  local found = redis.call('HMGET', K_META, unpack(keys))
  local metas = {}
  for i, key in ipairs(keys) do
    metas[key] = found[i] or nil
  end
  run_rev, run_meta, run_new, run_new_count, run_dirty, run_log = current_revision(), {}, {}, 0, false, {}
  for j = 0, count - 1 do
    local a = first + j * 7 + 2
    local ok, rev, prev, old = pcall(run_put, argv[a], argv[a + 1], argv[a + 2], argv[a + 3] == '1', argv[a + 4], metas)
    if not ok or type(rev) == 'table' then
      failed(out, rev)
    else
      local n = #out
      out[n + 1], out[n + 2], out[n + 3] = rev, prev, old
    end
  end
  run_flush()
  events = {}
end

local BATCHED = { put = f_put, delete = f_delete, txn = f_txn, rotate = f_rotate }

redis.register_function{function_name='@V@_batch', callback=function(KEYS, ARGV)
  begin(ARGV)
  local out, i, n = {}, 3, #ARGV
  while i <= n do
    local name, argc = ARGV[i], tonumber(ARGV[i + 1])
    if name == 'put' and argc == 5 then
      -- The run of consecutive puts starting here.
      local count, j = 0, i
      while j <= n and ARGV[j] == 'put' and ARGV[j + 1] == '5' do
        count, j = count + 1, j + 7
      end
      put_run(ARGV, i, count, out)
      i = j
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
