//! The conformance suite on RedisStore, against a harness-started `redis-server`.

use kv_tests::backends::redis;

kv_tests::conformance_suite!(redis);
