//! The conformance suite and the model-based property test on RedisStore, against a
//! harness-started `redis-server`.

use kv_tests::backends::redis;

kv_tests::conformance_suite!(redis);

#[test]
fn model_sequences_match_the_reference_model() {
    kv_tests::model::check(redis, 128);
}
