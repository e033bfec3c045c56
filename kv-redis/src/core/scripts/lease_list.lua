-- The ids of the live leases: those whose deadline is after now (an expired lease the sweeper
-- has not dropped yet is not listed). ARGV: prefix, retention.
return redis.call('ZRANGEBYSCORE', K_LEASES, '(' .. now_ms(), '+inf')
