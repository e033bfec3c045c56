//! The conformance suite and the model-based property test on `SledStore`, each store in its
//! own temporary directory.

use keyplane_tests::backends::sled;

keyplane_tests::conformance_suite!(sled);

#[test]
fn model_sequences_match_the_reference_model() {
    keyplane_tests::model::check(sled, 256);
}
