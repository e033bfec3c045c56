//! The typed keyspace DSL: segments, templates, keys, prefixes, keyspaces, the schema checker
//! and codecs.
//!
//! A schema declares its keys once, as templates written like the seed documents
//! (`jxt/tenants/{id}/database/{service}`, `/registry/{group}/{service}/{addr}/status`,
//! `nxc:map:{realm}:{provider}`), with a typed [`Segment`] per variable:
//!
//! - [`Segment`]: canonical encoding, strict decoding. Built-ins: integers (canonical
//!   decimal), [`Padded`] (zero-padded, sorts by value), [`uuid::Uuid`] (lowercase hyphenated),
//!   [`HostPort`] and [`std::net::Ipv4Addr`], and text newtypes declared with
//!   [`text_segment!`](crate::text_segment) that either reject what a key cannot hold or
//!   percent-escape it exactly like Go's `url.PathEscape` ([`path_escape`]).
//! - [`Template`]: the parsed layout (separator, leading separator, literals, variables, Redis
//!   Cluster hash tag declared beside it).
//! - [`Key`] / [`Prefix`] / [`Keyspace`]: typed keys, directories (always ending with the
//!   separator) and a schema's enum of keys; `#[derive(Key, Prefix, Keyspace)]` writes them.
//! - [`check`] / [`check_keyspace`]: the schema checker (overlapping templates, undeclared
//!   nesting, naming rule, unsafe literals).
//! - With feature `proptest`: strategies for every built-in segment (`SegmentStrategy`
//!   and friends) and the invariant harness (`verify_key`, `verify_prefix`,
//!   `verify_keyspace`, `assert_*_invariants`) checking DESIGN §4's invariants 1–11.
//!
//! ```
//! use keyplane_core::keyspace::{HostPort, Key, Text};
//! keyplane_core::text_segment!(pub Group, charset = "[a-z0-9_-]", max_len = 64, policy = Reject);
//! keyplane_core::text_segment!(pub Service, max_len = 128, policy = Escape);
//!
//! #[derive(Key, Debug, Clone, PartialEq)]
//! #[kv(template = "/registry/{group}/{service}/{addr}/status", value = Text)]
//! struct InstanceStatusKey { group: Group, service: Service, addr: HostPort }
//!
//! let key = InstanceStatusKey {
//!     group: Group::new("prod")?,
//!     service: Service::new("默认租户")?,
//!     addr: HostPort::parse("10.0.0.1:8080")?,
//! };
//! let raw = key.encode();
//! assert_eq!(raw, "/registry/prod/%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7/10.0.0.1:8080/status");
//! assert_eq!(InstanceStatusKey::parse(&raw)?, key);
//! assert!(InstanceStatusKey::parse("/registry/prod/x/10.0.0.1:08080/status").is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod check;
mod codec;
mod info;
mod key;
mod key_error;
#[allow(clippy::module_inception)]
mod keyspace;
mod schema;
mod segment;
#[cfg(feature = "proptest")]
mod strategies;
mod template;
mod typed;
mod values;

#[cfg(feature = "proptest")]
pub use check::{
    DEFAULT_CASES, assert_key_invariants, assert_keyspace_invariants, assert_prefix_invariants,
    assert_segment_invariants, verify_key, verify_key_order, verify_keyspace, verify_prefix,
    verify_segment, verify_segment_order,
};
pub use check::{Finding, FindingKind, check, check_keyspace};
pub use codec::{
    BuildCodec, Bytes, Codec, CodecContext, Empty, Json, SegmentCodec, Text, ValueFormat, ValueInfo,
};
#[cfg(feature = "encryption")]
pub use codec::{
    ENVELOPE_VERSION, Encrypted, EncryptionKey, Keyring, ReencryptReport, UNBOUND_ENVELOPE_VERSION,
    reencrypt_prefix,
};
pub use info::{FieldInfo, TemplateInfo};
pub use key::{Key, ListKey, ListPrefix, MapKey, PlainKey, Prefix, SetKey, ValueOf, decode_field};
pub use key_error::{KeyError, KeyErrorReason};
pub use keyplane_derive::{Key, Keyspace, Prefix};
pub use keyspace::{Keyspace, NamingRule, NoMatch};
pub use schema::{ParsedKey, Schema};
pub use segment::{
    Charset, EncodeSegment, Host, HostPort, Padded, PaddedInt, Segment, SegmentError, SegmentSpec,
    Separator, TextPolicy, TextRule, TextSegment, check_not_reserved, escape_into, path_escape,
    should_escape, unescape_strict,
};
#[cfg(feature = "proptest")]
pub use strategies::{
    ADVERSARIAL_PIECES, KeyStrategy, KeyspaceStrategy, PrefixStrategy, SegmentStrategy, mutations,
    segment,
};
pub use template::{Part, Template, TemplateError, TemplateKind, TemplateSegment};
pub use typed::{
    CollectionRead, ItemMaps, ListHandle, ListOptions, MapHandle, Page, SetHandle, SetPage,
    Skipped, TxnOutcome, TxnRead, TypedBatch, TypedEvent, TypedStore, TypedTxn, TypedWatch,
    Versioned,
};
pub use values::{KeyspaceValues, decode_plain};
