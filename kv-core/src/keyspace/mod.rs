//! The typed keyspace DSL: segments, templates, keys, prefixes, keyspaces, the schema checker
//! and codecs.
//!
//! A schema declares its keys once, as templates written like the seed documents
//! (`jxt/tenants/{id}/database/{service}`, `nxc:map:{realm}:{provider}`), with a typed
//! [`Segment`] per variable. Keys encode canonically and parse strictly; the [`check`]er finds
//! templates that overlap or nest, and the invariant harness (feature `proptest`) fuzzes them.

mod charset;
mod checker;
mod checker_match;
mod codec;
mod codec_json;
mod codec_plain;
mod codec_segment;
mod encrypted;
mod escape;
mod facade;
mod hash_slot;
#[cfg(feature = "proptest")]
mod invariants;
#[cfg(feature = "proptest")]
mod invariants_keyspace;
mod key;
mod key_error;
#[allow(clippy::module_inception)]
mod keyspace;
mod segment;
mod segment_hostport;
mod segment_int;
mod segment_padded;
mod segment_uuid;
#[cfg(feature = "proptest")]
mod strategy;
mod template;
mod template_match;
mod template_parse;
mod text;

pub use charset::Charset;
pub use checker::{Finding, FindingKind, check, check_keyspace};
pub use codec::Codec;
pub use codec_json::Json;
pub use codec_plain::{Bytes, Empty, Text};
pub use codec_segment::SegmentCodec;
pub use encrypted::{ENVELOPE_VERSION, Encrypted, EncryptionKey, Keyring};
pub use escape::{escape_into, path_escape, should_escape, unescape_strict};
pub use facade::{
    ListHandle, ListOptions, MapHandle, Page, SetHandle, SetPage, Skipped, TxnOutcome, TxnRead,
    TypedBatch, TypedEvent, TypedStore, TypedTxn, TypedWatch, ValueOf, Versioned,
};
pub use hash_slot::{redis_hash_tag, redis_key_slot};
#[cfg(feature = "proptest")]
pub use invariants::{
    DEFAULT_CASES, assert_key_invariants, assert_segment_invariants, verify_key, verify_key_order,
    verify_segment, verify_segment_order,
};
#[cfg(feature = "proptest")]
pub use invariants_keyspace::{
    assert_keyspace_invariants, assert_prefix_invariants, verify_keyspace, verify_prefix,
};
pub use key::{Key, Prefix, decode_field};
pub use key_error::{KeyError, KeyErrorReason};
pub use keyspace::{FieldInfo, Keyspace, NamingRule, NoMatch, TemplateInfo};
pub use kv_core_derive::{Key, Keyspace, Prefix};
pub use segment::{EncodeSegment, Segment, SegmentError, Separator, check_not_reserved};
pub use segment_hostport::{Host, HostPort};
pub use segment_padded::{Padded, PaddedInt};
#[cfg(feature = "proptest")]
pub use strategy::{
    ADVERSARIAL_PIECES, KeyStrategy, KeyspaceStrategy, PrefixStrategy, SegmentStrategy, mutations,
    segment,
};
pub use template::{Part, Template, TemplateError, TemplateKind, TemplateSegment};
pub use text::{TextPolicy, TextRule, TextSegment};
