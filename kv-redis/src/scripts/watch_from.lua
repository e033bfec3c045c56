-- Where a watch from revision ARGV[2] starts: { current revision, first retained revision
-- (0 when the log is empty), up to ARGV[3] log entries from ARGV[2] on }. ARGV[1]: prefix.
local P, from, count = ARGV[1], ARGV[2], ARGV[3]
local rev = tonumber(redis.call('GET', P .. 'rev') or '0')
local first = redis.call('XRANGE', P .. 'log', '-', '+', 'COUNT', 1)
local first_rev = 0
if #first > 0 then
  first_rev = tonumber(string.match(first[1][1], '^(%d+)'))
end
return { rev, first_rev, redis.call('XRANGE', P .. 'log', from .. '-0', '+', 'COUNT', count) }
