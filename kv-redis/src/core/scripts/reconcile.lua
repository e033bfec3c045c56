-- Brings what other programs wrote, changed or deleted at the given keys into the metadata,
-- the index and the log (see `inspect` and `absorb`): a string without metadata is adopted
-- (put event), a string whose digest no longer matches its metadata was overwritten (put
-- event, the next version), a key with metadata that no longer holds a string was deleted
-- or replaced (delete event); collections are tracked in the collection index. Every change
-- found is one revision. Keys that already match their metadata cost no event, so running
-- it again, or from several stores, never repeats an event.
--
-- ARGV after the two shared ones: the mode ('a' checks only keys without metadata, 'f'
-- every key), then the keys. Returns { adopted, changed, deleted, revision }.
local full = ARGV[3] == 'f'
local fixes = {}
local counts = { adopt = 0, change = 0, forget = 0 }
for i = 4, #ARGV do
  local key = ARGV[i]
  -- Keys under the internal prefix are the store's own.
  if string.sub(key, 1, #P) ~= P and (full or redis.call('HEXISTS', K_META, key) == 0) then
    local m, t, fix, data = inspect(key, true)
    if fix then
      fixes[#fixes + 1] = { key, fix, data }
      counts[fix] = counts[fix] + 1
    elseif m and t == 'string' then
      local _, _, _, _, d = parse_meta(m)
      if d == '' then
        -- Metadata from before digests were kept: record the digest; nothing changed.
        redis.call('HSET', K_META, key, m .. ':' .. digest(redis.call('GET', key)))
      end
    end
    if COLLECTION_TAG[t] then
      redis.call('ZADD', K_CIDX, 0, key)
    elseif t ~= 'string' then
      redis.call('ZREM', K_CIDX, key)
    end
  end
end
local rev = current_revision()
if #fixes > 0 then
  rev = absorb(fixes)
end
return { counts.adopt, counts.change, counts.forget, rev }
