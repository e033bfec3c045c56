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

/// How `#[derive(Key)]` finds the JSON Schema of a key's value without asking for a bound:
/// `(&&Probe::<V>::new()).json_schema()` picks `HasJsonSchema` when `V` is `Json<T>` with
/// `T: schemars::JsonSchema` (feature `json-schema`), else `NoJsonSchema`'s `None`. So a
/// value type without `JsonSchema` still derives, with or without the feature anywhere in
/// the build.
#[doc(hidden)]
pub mod json_schema {
    use std::marker::PhantomData;

    /// Stands for the value codec `C` in the method lookup.
    pub struct Probe<C>(PhantomData<fn() -> C>);

    impl<C> Probe<C> {
        /// The probe of codec `C`.
        #[allow(clippy::new_without_default)]
        pub const fn new() -> Self {
            Probe(PhantomData)
        }
    }

    /// The fallback: no JSON Schema is known.
    pub trait NoJsonSchema {
        /// `None`.
        fn json_schema(&self) -> Option<serde_json::Value> {
            None
        }
    }

    impl<C> NoJsonSchema for Probe<C> {}

    /// A `Json<T>` value whose `T` describes itself with `schemars`.
    #[cfg(feature = "json-schema")]
    pub trait HasJsonSchema {
        /// The JSON Schema of the value type.
        fn json_schema(&self) -> Option<serde_json::Value>;
    }

    #[cfg(feature = "json-schema")]
    impl<T: schemars::JsonSchema> HasJsonSchema for &Probe<crate::keyspace::Json<T>> {
        fn json_schema(&self) -> Option<serde_json::Value> {
            Some(schemars::schema_for!(T).to_value())
        }
    }
}
