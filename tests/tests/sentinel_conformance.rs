//! The conformance suite on RedisStore through `redis+sentinel://`: a harness-started master,
//! two replicas and three sentinels.

use keyplane_tests::backends::redis_sentinel;

keyplane_tests::conformance_suite!(redis_sentinel);
