#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod balancer;
mod catalog;
pub mod cronix;
mod leased;
mod live;
pub mod nxc;
mod reader;
pub mod registry;
pub mod tenant;

pub use catalog::{all, every, find, legacy, parse_any, variants};
pub use live::{LiveKeyspace, LiveReader, LiveView};
pub use reader::ReaderOptions;

/// The error that carries a schema's own condition (`CronixError`, `RegistryError`): of
/// `kind`, saying what the condition says, with the condition as its
/// [`condition`](keyplane_core::Error::condition) (not its cause, which would show the same
/// text twice) so that a caller can recover it.
pub(crate) fn condition_error<C>(
    kind: keyplane_core::ErrorKind,
    condition: C,
) -> keyplane_core::Error
where
    C: std::error::Error + Send + Sync + 'static,
{
    keyplane_core::Error::from_condition(kind, condition)
}

/// Decodes `bytes` with the codec of key type `K`, built without state: how the readers
/// decode each template of a keyspace mirror.
pub(crate) fn decode_as<K: keyplane_core::keyspace::Key>(
    bytes: &[u8],
) -> keyplane_core::Result<<K::Value as keyplane_core::keyspace::Codec>::Value> {
    use keyplane_core::keyspace::{BuildCodec, Codec, CodecContext};
    K::Value::build(&CodecContext::new())?.decode(bytes)
}

/// Encodes `value` with the codec of key type `K`, built without state: how the readers
/// look up a set member or a list item in a mirror.
pub(crate) fn encode_as<K: keyplane_core::keyspace::Key>(
    value: &<K::Value as keyplane_core::keyspace::Codec>::Value,
) -> keyplane_core::Result<Vec<u8>> {
    use keyplane_core::keyspace::{BuildCodec, Codec, CodecContext};
    K::Value::build(&CodecContext::new())?.encode(value)
}
