-- Discards log entries before revision ARGV[3]. ARGV: prefix, retention, revision.
local target = tonumber(ARGV[3])
local rev = current_revision()
if target > rev then
  return redis.error_reply('KVINVALID compaction revision ' .. target .. ' is in the future (current ' .. rev .. ')')
end
local first = redis.call('XRANGE', K_LOG, '-', '+', 'COUNT', 1)
if #first > 0 then
  local first_rev = tonumber(string.match(first[1][1], '^(%d+)'))
  if target < first_rev then
    return redis.error_reply('KVCOMPACTED ' .. first_rev)
  end
end
redis.call('XTRIM', K_LOG, 'MINID', target .. '-0')
return rev
