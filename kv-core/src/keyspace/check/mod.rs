//! Checks: the schema checker, and with feature `proptest` the invariant harness.
//!
//! [`check`] and [`check_keyspace`] find what makes a schema ambiguous (overlapping
//! templates, undeclared nesting, names against the naming rule); the invariant harness
//! (`verify_*`, `assert_*_invariants`) checks a segment, key, prefix or keyspace type against
//! the invariants every key type keeps.

mod checker;
#[cfg(feature = "proptest")]
mod invariants;
#[cfg(feature = "proptest")]
mod keyspace_invariants;
mod overlap;

pub use checker::{Finding, FindingKind, check, check_keyspace};
#[cfg(feature = "proptest")]
pub use invariants::{
    DEFAULT_CASES, assert_key_invariants, assert_segment_invariants, verify_key, verify_key_order,
    verify_segment, verify_segment_order,
};
#[cfg(feature = "proptest")]
pub use keyspace_invariants::{
    assert_keyspace_invariants, assert_prefix_invariants, verify_keyspace, verify_prefix,
};
