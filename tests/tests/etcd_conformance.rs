//! The conformance suite and the model-based property test on a harness-started etcd.

use kv_tests::backends::etcd;

kv_tests::conformance_suite!(etcd);

#[test]
fn model_sequences_match_the_reference_model() {
    kv_tests::model::check(etcd, 64);
}
