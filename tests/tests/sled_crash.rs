//! SledStore under `kill -9`: a child process makes acknowledged writes and is killed at a
//! random moment, round after round over one database; after each restart every acknowledged
//! write is there, no transaction is half applied, what survived is a prefix of the writes
//! and the consistency check passes (`keyplane_tests::crash`).
//!
//! The child is the `crash_child` binary of this package (tests/src/bin/).

keyplane_tests::crash_suite!(keyplane_tests::embedded::Engine::Sled, 20);
