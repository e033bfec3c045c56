#!lua flags=no-writes
-- Where a watch from revision ARGV[2] starts: { current revision, first revision in the log
-- (0 when the log is empty), compaction floor (0 when never compacted), up to ARGV[3] log
-- entries from the one holding ARGV[2] on }. ARGV[1]: prefix. An entry holds one revision
-- (its id's, field `e`) or a batch's consecutive revisions (a field each, named by the
-- revision; the id is the last one's).
local P, from, count = ARGV[1], ARGV[2], ARGV[3]
local rev = tonumber(redis.call('GET', P .. 'rev') or '0')
local compacted = tonumber(redis.call('GET', P .. 'compacted') or '0')
local first_rev = 0
local entries = {}
-- A watch from after the current revision replays nothing, and needs no first revision:
-- reading the log's first entry copies its whole payload (a large value costs milliseconds
-- per call).
if tonumber(from) <= rev then
  local first = redis.call('XRANGE', P .. 'log', '-', '+', 'COUNT', 1)
  if #first > 0 then
    local fields = first[1][2]
    if fields[1] == 'e' then
      first_rev = tonumber(string.match(first[1][1], '^(%d+)'))
    else
      first_rev = tonumber(fields[1])
    end
  end
  entries = redis.call('XRANGE', P .. 'log', from .. '-0', '+', 'COUNT', count)
end
return { rev, first_rev, compacted, entries }
