//! The conformance suite and the model-based property test on a harness-started etcd.

use keyplane_tests::backends::etcd;

keyplane_tests::conformance_suite!(etcd);

#[test]
fn model_sequences_match_the_reference_model() {
    keyplane_tests::model::check(etcd, 64);
}
