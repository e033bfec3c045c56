-- The ordered index of the plain keys under the internal prefix P, in buckets small enough
-- for Redis to keep each in its compact encoding (a listpack: up to the server's
-- `zset-max-listpack-entries`, 128 by default, members of at most 64 bytes), where a key
-- costs about a quarter of its memory in one large sorted set. Buckets hold at most 32 keys:
-- Redis inserts into a listpack after scanning the members before it, so that a smaller
-- bucket makes an insert cheaper (as cheap as into one large sorted set at 32) for about the
-- same memory (the directory grows instead):
--   P.."ixd"         zset (score 0): the directory, each bucket's bound (the least key it may
--                    hold; the first bucket's bound is the empty string)
--   P.."ix:"..bound  zset (score 0): the keys k with bound <= k < the next bound
-- A bucket that grows past IX_MAX keys is cut into buckets of at most IX_FILL keys (moving at
-- most IX_STEP keys per cut); one that shrinks to IX_LOW keys or fewer joins the bucket before
-- it when they fit in IX_FILL together, and an empty one leaves the directory.
--
-- The layout before buckets had one sorted set, P.."idx": the first write finds no directory
-- and makes that set the first bucket as it is (RENAME), which the writes that follow and
-- `ix_upgrade` then cut; reads before that read it as the only bucket.
--
-- Every helper takes the prefix, so that the read-only scripts, which run without the shared
-- library (`lib.lua`), use the same code.
local IX_MAX, IX_FILL, IX_STEP, IX_LOW = 32, 24, 1024, 4
-- Command arguments are given as strings: Lua turns a number into text with printf's
-- floating-point conversion, which costs more than most commands.
local IX_STEP_FROM_END = '-1024'
-- A member longer than the compact limit that no user key can be, 65 NULs (see
-- `ix_add_many`; a library's top level has no `string.rep`).
local IX_CONVERT = '\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0'
IX_CONVERT = IX_CONVERT .. IX_CONVERT .. '\0'

local function ix_name(p, bound)
  return p .. 'ix:' .. bound
end

-- The bound of the bucket that holds `key` or would, nil when there is no directory.
local function ix_find(p, key)
  return redis.call('ZREVRANGEBYLEX', p .. 'ixd', '[' .. key, '-', 'LIMIT', '0', '1')[1]
end

-- As `ix_find`, for a write: a missing directory is started (see above).
local function ix_bucket(p, key)
  local bound = ix_find(p, key)
  if bound then
    return bound
  end
  if redis.call('EXISTS', p .. 'idx') == 1 then
    redis.call('RENAME', p .. 'idx', ix_name(p, ''))
  end
  redis.call('ZADD', p .. 'ixd', '0', '')
  return ''
end

-- Cuts the bucket of `bound` if it holds more than IX_MAX keys: the whole bucket into buckets
-- of at most IX_FILL keys (the first keeps the bound) when it holds at most IX_MAX + IX_STEP,
-- else its last IX_STEP keys. Returns whether the bucket is still too large.
local function ix_cut(p, bound)
  local name = ix_name(p, bound)
  local n = redis.call('ZCARD', name)
  if n <= IX_MAX then
    return false
  end
  local moved, whole
  if n <= IX_MAX + IX_STEP then
    moved, whole = redis.call('ZRANGE', name, '0', '-1'), true
    redis.call('DEL', name)
  else
    moved, whole = redis.call('ZRANGE', name, IX_STEP_FROM_END, '-1'), false
    redis.call('ZREMRANGEBYRANK', name, IX_STEP_FROM_END, '-1')
  end
  local m = #moved
  local parts = math.ceil(m / IX_FILL)
  local size = math.ceil(m / parts)
  local bounds = {}
  for first = 1, m, size do
    local b = moved[first]
    if whole and first == 1 then
      b = bound
    else
      bounds[#bounds + 1] = '0'
      bounds[#bounds + 1] = b
    end
    -- Descending: Redis inserts each member of a compact sorted set after scanning those
    -- before it, so that the last key first makes each insertion find its place at once.
    local args = {}
    for j = math.min(first + size - 1, m), first, -1 do
      args[#args + 1] = '0'
      args[#args + 1] = moved[j]
    end
    redis.call('ZADD', ix_name(p, b), unpack(args))
  end
  if #bounds > 0 then
    redis.call('ZADD', p .. 'ixd', unpack(bounds))
  end
  return not whole
end

-- Adds `key` to the index.
local function ix_add(p, key)
  local bound = ix_bucket(p, key)
  local name = ix_name(p, bound)
  if redis.call('ZADD', name, '0', key) == 1 and redis.call('ZCARD', name) > IX_MAX then
    ix_cut(p, bound)
  end
end

-- The first `n` keys of `keys` (distinct, in any order) by bucket: `groups[bound]` the ZADD
-- arguments of the bucket's keys, `order` the bounds. Many keys are put in order by Redis (in
-- a scratch sorted set, with the bounds among them), so that when they fall in fewer buckets
-- than there are keys, as a load of consecutive keys does, they cost a few commands in all
-- rather than one lookup each.
local function ix_group(p, keys, n)
  local groups, order = {}, {}
  local function add(bound, key)
    local g = groups[bound]
    if not g then
      g = {}
      groups[bound] = g
      order[#order + 1] = bound
    end
    g[#g + 1] = '0'
    g[#g + 1] = key
  end
  if n >= 8 then
    local scratch = p .. 'ixsort'
    local args = { '0', IX_CONVERT }
    for i = 1, n do
      args[#args + 1] = '0'
      args[#args + 1] = keys[i]
    end
    redis.call('ZADD', scratch, unpack(args))
    local first = redis.call('ZRANGE', scratch, '1', '1')[1]
    local last = redis.call('ZRANGE', scratch, '-1', '-1')[1]
    local bound = ix_bucket(p, first)
    local bounds = redis.call('ZRANGEBYLEX', p .. 'ixd', '(' .. bound, '[' .. last, 'LIMIT', '0', string.format('%d', n))
    if #bounds < n then
      local is_bound, is_key = { [bound] = true }, {}
      args = { '0', bound }
      for _, b in ipairs(bounds) do
        is_bound[b] = true
        args[#args + 1] = '0'
        args[#args + 1] = b
      end
      redis.call('ZADD', scratch, unpack(args))
      redis.call('ZREM', scratch, IX_CONVERT)
      for i = 1, n do
        is_key[keys[i]] = true
      end
      for _, m in ipairs(redis.call('ZRANGE', scratch, '0', '-1')) do
        if is_bound[m] then
          bound = m
        end
        if is_key[m] then
          add(bound, m)
        end
      end
      redis.call('DEL', scratch)
      return groups, order
    end
    redis.call('DEL', scratch)
  end
  for i = 1, n do
    add(ix_bucket(p, keys[i]), keys[i])
  end
  return groups, order
end

-- Adds the first `n` keys of `keys` (distinct, in any order) to the index: one ZADD per
-- bucket they fall in.
local function ix_add_many(p, keys, n)
  local groups, order = ix_group(p, keys, n)
  for _, bound in ipairs(order) do
    local name, g = ix_name(p, bound), groups[bound]
    if redis.call('ZCARD', name) + #g / 2 > IX_MAX then
      -- The bucket is cut next: its keys and these go through the large encoding, where an
      -- insertion costs O(log n) rather than a scan (a member longer than the compact limit
      -- converts it; no user key holds a NUL).
      redis.call('ZADD', name, '0', IX_CONVERT)
      redis.call('ZADD', name, unpack(g))
      redis.call('ZREM', name, IX_CONVERT)
    else
      redis.call('ZADD', name, unpack(g))
    end
    -- As many cuts as the keys added could call for (an index of the layout before buckets
    -- is left to `ix_upgrade`).
    for _ = 0, #g / 2 / IX_STEP do
      if not ix_cut(p, bound) then
        break
      end
    end
  end
end

-- Removes `key` from the index.
local function ix_rem(p, key)
  local bound = ix_bucket(p, key)
  local name = ix_name(p, bound)
  if redis.call('ZREM', name, key) == 0 or bound == '' then
    return
  end
  local n = redis.call('ZCARD', name)
  if n > IX_LOW then
    return
  end
  local dir = p .. 'ixd'
  if n == 0 then
    redis.call('ZREM', dir, bound)
    return
  end
  local before = redis.call('ZREVRANGEBYLEX', dir, '(' .. bound, '-', 'LIMIT', '0', '1')[1]
  local into = ix_name(p, before)
  if redis.call('ZCARD', into) + n > IX_FILL then
    return
  end
  local args = {}
  for _, k in ipairs(redis.call('ZRANGE', name, '0', '-1')) do
    args[#args + 1] = '0'
    args[#args + 1] = k
  end
  redis.call('ZADD', into, unpack(args))
  redis.call('DEL', name)
  redis.call('ZREM', dir, bound)
end

-- The bound of the first bucket that may hold keys from the lex spec `min` on, nil when there
-- is no directory.
local function ix_first(p, min)
  local bound
  if min ~= '-' then
    bound = ix_find(p, string.sub(min, 2))
  end
  return bound or redis.call('ZRANGE', p .. 'ixd', '0', '0')[1]
end

-- Calls `visit(name)` on each bucket that may hold keys between the lex specs `min` and `max`
-- (as ZRANGEBYLEX takes them), in key order, until it returns true.
local function ix_walk(p, min, max, visit)
  if min == '+' or max == '-' then
    return
  end
  local dir = p .. 'ixd'
  local bound = ix_first(p, min)
  if not bound then
    if redis.call('EXISTS', p .. 'idx') == 1 then
      visit(p .. 'idx')
    end
    return
  end
  if visit(ix_name(p, bound)) then
    return
  end
  while true do
    local after = redis.call('ZRANGEBYLEX', dir, '(' .. bound, max, 'LIMIT', '0', '16')
    for i = 1, #after do
      if visit(ix_name(p, after[i])) then
        return
      end
    end
    if #after < 16 then
      return
    end
    bound = after[#after]
  end
end

-- The keys between the lex specs `min` and `max`, in order, at most `limit` of them (all for
-- a negative limit).
local function ix_range(p, min, max, limit)
  local keys = {}
  ix_walk(p, min, max, function(name)
    local got
    if limit < 0 then
      got = redis.call('ZRANGEBYLEX', name, min, max)
    else
      got = redis.call('ZRANGEBYLEX', name, min, max, 'LIMIT', '0', string.format('%d', limit - #keys))
    end
    for i = 1, #got do
      keys[#keys + 1] = got[i]
    end
    return limit >= 0 and #keys >= limit
  end)
  return keys
end

-- How many keys lie between the lex specs `min` and `max`: the buckets between the first
-- and the last are counted whole (ZCARD, O(1)), the directory read 256 bounds at a time. A
-- count costs a command per bucket, about 3 µs per 24 keys. With `cap`, counting stops once
-- past it (the count returned is then more than `cap`, not all).
local function ix_count(p, min, max, cap)
  if min == '+' or max == '-' then
    return 0
  end
  local dir = p .. 'ixd'
  local bound = ix_first(p, min)
  if not bound then
    if redis.call('EXISTS', p .. 'idx') == 1 then
      return redis.call('ZLEXCOUNT', p .. 'idx', min, max)
    end
    return 0
  end
  local n = redis.call('ZLEXCOUNT', ix_name(p, bound), min, max)
  local last
  while true do
    local after = redis.call('ZRANGEBYLEX', dir, '(' .. bound, max, 'LIMIT', '0', '256')
    for i = 1, #after do
      if last then
        n = n + redis.call('ZCARD', ix_name(p, last))
        if cap and n > cap then
          return n
        end
      end
      last = after[i]
    end
    if #after < 256 then
      break
    end
    bound = after[#after]
  end
  if last then
    n = n + redis.call('ZLEXCOUNT', ix_name(p, last), min, max)
  end
  return n
end

-- One step of bringing an index of the layout before buckets into buckets (see above), which
-- writes nothing when there is nothing to do: the old set becomes the first bucket, keys an
-- older version indexed in it since then move into their buckets, IX_STEP at a time, and the
-- first bucket is cut. Returns whether steps remain.
local function ix_upgrade(p)
  local legacy = p .. 'idx'
  if redis.call('EXISTS', legacy) == 1 then
    if not ix_find(p, '') then
      ix_bucket(p, '')
      return true
    end
    local keys = redis.call('ZRANGE', legacy, 0, IX_STEP - 1)
    ix_add_many(p, keys, #keys)
    redis.call('ZREMRANGEBYRANK', legacy, 0, #keys - 1)
    return true
  end
  return ix_cut(p, '')
end
