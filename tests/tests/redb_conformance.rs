//! The conformance suite and the model-based property test on `RedbStore`, each store in its
//! own temporary directory: durable (the default), and buffered, whose writers commit on
//! their own threads.

use keyplane_tests::backends::redb;

keyplane_tests::conformance_suite!(redb);

#[test]
fn model_sequences_match_the_reference_model() {
    keyplane_tests::model::check(redb, 256);
}

mod buffered {
    use keyplane_tests::backends::redb_buffered;

    keyplane_tests::conformance_suite!(redb_buffered);

    #[test]
    fn model_sequences_match_the_reference_model() {
        keyplane_tests::model::check(redb_buffered, 256);
    }
}
