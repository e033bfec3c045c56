//! The conformance suite and the model-based property test on RedisStore, against a
//! harness-started `redis-server`.

use keyplane_tests::backends::redis;

keyplane_tests::conformance_suite!(redis);

#[test]
fn model_sequences_match_the_reference_model() {
    keyplane_tests::model::check(redis, 128);
}
