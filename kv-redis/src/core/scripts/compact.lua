-- Compacts the history before revision ARGV[3]: watches may no longer start before it. The
-- compaction is logical (P.."compacted"): entries below it leave the log as the retention
-- trims it, so that established watches still read every revision they have not yet seen,
-- as etcd's synced watchers do. ARGV: prefix, retention, revision.
local target = tonumber(ARGV[3])
local rev = current_revision()
if target > rev then
  return redis.error_reply('KVINVALID compaction revision ' .. target .. ' is in the future (current ' .. rev .. ')')
end
local floor = tonumber(redis.call('GET', P .. 'compacted') or '0')
local first = redis.call('XRANGE', K_LOG, '-', '+', 'COUNT', 1)
if #first > 0 then
  floor = math.max(floor, first_logged(first[1]))
end
if target < floor then
  return redis.error_reply('KVCOMPACTED ' .. floor)
end
redis.call('SET', P .. 'compacted', target)
return rev
