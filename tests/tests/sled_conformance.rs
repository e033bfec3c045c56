//! The conformance suite and the model-based property test on `SledStore`, each store in its
//! own temporary directory.

use kv_tests::backends::sled;

kv_tests::conformance_suite!(sled);

#[test]
fn model_sequences_match_the_reference_model() {
    kv_tests::model::check(sled, 256);
}
