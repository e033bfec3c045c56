-- Brings what other programs wrote, changed or deleted at the given keys into the metadata,
-- the index and the log: a string without metadata is adopted (put event), a string whose
-- digest no longer matches its metadata was overwritten (put event, the next version), a
-- key with metadata that no longer holds a string was deleted or replaced (delete event),
-- and collections are tracked in the collection index. Every change found is one revision;
-- keys already matching their metadata cost no event, so running it again, or from
-- several stores, never repeats an event.
--
-- ARGV after the two shared ones: the mode ('a' checks only keys without metadata, 'f'
-- every key), then the keys. Returns { adopted, changed, deleted, revision }.
local full = ARGV[3] == 'f'
local rev = current_revision() + 1
local adopted, changed, deleted = 0, 0, 0
for i = 4, #ARGV do
  local key = ARGV[i]
  local internal = string.sub(key, 1, #P) == P
  local m = not internal and redis.call('HGET', K_META, key)
  -- Keys under the internal prefix are the store's own.
  if not internal and (full or not m) then
    local t = redis.call('TYPE', key)['ok']
    if t == 'string' then
      local value = redis.call('GET', key)
      local d = digest(value)
      if not m then
        local nm = adopted_meta(rev, value)
        redis.call('HSET', K_META, key, nm)
        redis.call('ZADD', K_IDX, 0, key)
        redis.call('ZREM', K_CIDX, key)
        push_event('p', key, value, nm)
        adopted = adopted + 1
      else
        local c, _, v, l, old = parse_meta(m)
        if old == '' then
          -- Metadata from before digests were kept: record the digest, nothing changed.
          redis.call('HSET', K_META, key, m .. ':' .. d)
        elseif old ~= d then
          local nm = make_meta(c, rev, v + 1, l, value)
          redis.call('HSET', K_META, key, nm)
          push_event('p', key, value, nm)
          changed = changed + 1
        end
      end
    else
      if m then
        forget_plain(key, m)
        push_event('d', key, '', '')
        deleted = deleted + 1
      end
      if COLLECTION[t] then
        redis.call('ZADD', K_CIDX, 0, key)
      else
        redis.call('ZREM', K_CIDX, key)
      end
    end
  end
end
if #events > 0 then
  commit(rev)
  return { adopted, changed, deleted, rev }
end
return { adopted, changed, deleted, rev - 1 }
