//! The model-based property test on RedisStore, against a harness-started `redis-server`.

use kv_tests::backends::redis;

#[test]
fn redis_store_matches_the_model() {
    kv_tests::model::check(redis, 128);
}
