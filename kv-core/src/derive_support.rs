//! Support for the code that `keyplane-derive` generates; not part of the public API.
//!
//! The derives emit strategy impls (feature `proptest`) inside
//! [`__kv_if_proptest!`](crate::__kv_if_proptest), which expands its input only when keyplane-core
//! itself is built with that feature: a user crate's own features do not decide whether
//! `KeyStrategy` exists.

/// proptest, as the generated strategy impls name it.
#[cfg(feature = "proptest")]
pub use proptest;

/// Expands its input when keyplane-core is built with feature `proptest`.
#[cfg(feature = "proptest")]
#[doc(hidden)]
#[macro_export]
macro_rules! __kv_if_proptest {
    ($($tokens:tt)*) => { $($tokens)* };
}

/// Expands to nothing: keyplane-core is built without feature `proptest`.
#[cfg(not(feature = "proptest"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __kv_if_proptest {
    ($($tokens:tt)*) => {};
}
