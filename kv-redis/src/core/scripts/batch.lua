-- The group commit's function (see `commit.rs`), appended to the library after the writing
-- functions. ARGV is the prefix and the retention, then each write as its function's name,
-- its argument count and its arguments. It runs the writes in order and answers three values
-- per write, in one flat array (Redis converts every table of a reply at a cost of its own,
-- about 0.35 µs, more than most commands):
--   a put or delete: its revision, and its previous value and metadata (false, false when
--   it reports none), as `put.lua` and `delete.lua` answer { revision, { value, meta } };
--   a rotation: -3, its revision, the item moved to the end (false for none), or for a
--   rotation that reads the moved item's map, { item, value } (false for none each);
--   a transaction: -1, its reply, false;
--   a write that failed: -2, the text of the error reply it returned or raised, false.
-- So one write's failure is its own (a write checks everything before its first write, so a
-- failed write wrote nothing).
--
-- Consecutive plain puts and list rotations go as one run (see `run.lua`), sharing one HMGET
-- of the puts' metadata, the revision counter, one HSET, one ZADD and one log entry; each
-- still has its own revision, events and reply, exactly as `put.lua` or `rotate.lua` would
-- give them.

-- The error text of a failed write: the `err` of an error reply, or a raised Lua error.
local function error_text(e)
  if type(e) == 'table' and e.err then
    return e.err
  end
  return 'ERR ' .. tostring(e)
end

-- Appends the three values of a write that failed with `e` to `out`.
local function failed(out, e)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3] = -2, error_text(e), false
end

-- Whether ARGV[i] starts a write a run takes: a plain put or a rotation.
local function in_run(argv, i)
  local name, argc = argv[i], argv[i + 1]
  return (name == 'put' and argc == '5') or name == 'rotate'
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
  run_start()
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
      local argc = tonumber(argv[i + 1])
      local ok, rev, item
      if argc == 1 then
        ok, rev, item = pcall(run_rotate, argv[a])
      else
        ok, rev, item = pcall(run_rotate_get, argv[a], argv[a + 1], argv[a + 2], argv[a + 3])
      end
      if not ok or type(rev) == 'table' then
        failed(out, rev)
      else
        out[o + 1], out[o + 2], out[o + 3] = -3, rev, item
      end
      i = i + 2 + argc
    end
  end
  run_flush()
  events = {}
  return last
end

-- The writes that run on their own inside a batch (puts and rotations go in runs).
local BATCHED = { delete = f_delete, txn = f_txn }

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
      elseif name == 'txn' then
        out[n + 1], out[n + 2], out[n + 3] = -1, reply, false
      else
        -- A delete: { revision, { value, meta } or false }.
        local p = reply[2] or { false, false }
        out[n + 1], out[n + 2], out[n + 3] = reply[1], p[1], p[2]
      end
    end
  end
  return out
end}
