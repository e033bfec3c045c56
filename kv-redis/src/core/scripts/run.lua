-- Runs of plain puts and list rotations, after the shared library (`lib.lua`): a run reads
-- and writes the revision counter once, writes the metadata of its puts with one HSET and
-- their new keys with one ZADD, and logs its revisions in one entry (a field each, see
-- `append_batch_log`), while each write keeps its own revision, events and reply.
-- `rotate.lua` is a run of one write (`put.lua` is a lone put's straight line, which gives
-- what a run of one would); the group commit's `batch` function (`batch.lua`) runs many.

-- What a run holds back until it ends (or until a put needs the store as its own script
-- would find it): the revision, the metadata written, the keys new to the index, and the log
-- fields of its revisions from `run_first` on.
local run_rev, run_meta, run_new, run_new_count, run_dirty, run_log, run_first

-- Starts a run at the current revision.
local function run_start()
  run_rev, run_meta, run_new, run_new_count, run_dirty, run_log = current_revision(), {}, {}, 0, false, {}
end

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
    ix_add_many(P, run_new, run_new_count)
  end
  redis.call('SET', K_REV, string.format('%d', run_rev))
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

-- One put of a run: what `put.lua` does, with the metadata from `metas` (the run's view) and the
-- revision from `run_rev`. Returns its revision and its previous value and metadata (false
-- when not asked for or none), or an error reply.
local function run_put(key, value, lease, want_prev, hash, metas)
  local prev, err = checked_set(key, value, lease)
  if err then
    return err
  end
  local old = metas[key]
  if (prev and not old) or (old and not prev) then
    -- Another program wrote or deleted the key: reconciling it is a revision of its own,
    -- written by the shared helpers on the store as it stands, so the run writes what it
    -- holds back first.
    run_flush()
    if prev and not old then
      run_rev = absorb({ { key, 'adopt', prev } })
      old = adopted_meta(run_rev, prev)
    else
      run_rev = absorb({ { key, 'forget', old } })
      old = nil
    end
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

-- One rotation of a run that also reads `field` of the map the moved item names (a
-- `ListRotateGet`): the map at `prefix`, the item, `suffix`. The field of the map of the item
-- about to move is read before the rotation writes (which also checks the map's type, and
-- that the user may read it); the rotation moves that item, and changes no map. Returns the
-- revision, then the item moved and the field's value as one table ({ false, false } for an
-- empty list), or an error reply.
local function run_rotate_get(key, field, prefix, suffix)
  local head = redis.pcall('LINDEX', key, 0)
  local value = false
  if type(head) == 'string' then
    local map = prefix .. head .. suffix
    value = redis.pcall('HGET', map, field)
    if type(value) == 'table' then
      if string.sub(value.err, 1, 9) == 'WRONGTYPE' then
        return redis.error_reply('KVWRONGTYPE 1 names a map that holds a '
          .. redis.call('TYPE', map)['ok'])
      end
      return value
    end
  end
  local rev, item = run_rotate(key)
  if type(rev) == 'table' then
    return rev
  end
  return rev, { item or false, value or false }
end
