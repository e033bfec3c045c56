//! RedbStore under `kill -9`: a child process makes acknowledged writes (puts, two-key
//! transactions, leases and leased puts) and is killed at a random moment, round after round
//! over one database file; after each restart the consistency check passes, no transaction is
//! half applied, what survived is a prefix of the writes, and with the default durability
//! every acknowledged write is there (`keyplane_tests::crash`).
//!
//! The child is the `crash_child` binary of this package (tests/src/bin/).

keyplane_tests::crash_suite!(keyplane_tests::embedded::Engine::Redb, 30);
