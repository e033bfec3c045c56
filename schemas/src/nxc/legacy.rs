//! The legacy layout the document replaces (§1, "旧设计"), so that old data can be parsed
//! and migrated:
//!
//! ```text
//! nexus:config:group:{provider}:{realm}       LegacyGroupKey   HASH: profile ids, `default`
//! nexus:config:index:{provider}:{realm}       LegacyIndexKey   SET of profile ids
//! nexus:config:{provider}:{realm}:{profile}   LegacyConfigKey  STRING: encrypted settings
//! ```
//!
//! The templates are read-only: the typed store reads, lists and watches them but never
//! writes them ([`NxcLegacy`](super::NxcLegacy) migrates them; old data comes from the
//! programs that wrote it).
//!
//! Provider comes before realm here (the new layout swaps them). The config key's
//! `{provider}` sits where the other two have the literals `group` and `index`, so a provider
//! of either name would make `nexus:config:group:a:b` two keys at once: legacy provider
//! names exclude both ([`LegacyProvider`]), which keeps the legacy templates disjoint.

use super::segments::{ProfileId, ProviderName, RealmId};
use keyplane_core::keyspace::{
    Bytes, Key, Keyspace, Segment, SegmentCodec, SegmentError, SegmentSpec, Separator, Text,
};

/// A provider name in the legacy layout: a [`ProviderName`] other than `group` and `index`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LegacyProvider(ProviderName);

/// The literals a legacy provider name cannot be.
const LEGACY_LITERALS: [&str; 2] = ["group", "index"];

impl LegacyProvider {
    /// The legacy form of `provider`.
    ///
    /// # Errors
    /// [`SegmentError`] for `group` and `index`.
    pub fn new(provider: ProviderName) -> Result<Self, SegmentError> {
        if LEGACY_LITERALS.contains(&provider.as_str()) {
            return Err(SegmentError::new(
                provider.as_str(),
                "`group` and `index` are literals of the legacy layout",
            ));
        }
        Ok(LegacyProvider(provider))
    }

    /// The provider name.
    pub fn provider(&self) -> &ProviderName {
        &self.0
    }
}

impl Segment for LegacyProvider {
    fn encode(&self, sep: Separator, out: &mut String) {
        self.0.encode(sep, out);
    }

    fn decode(raw: &str, sep: Separator) -> Result<Self, SegmentError> {
        LegacyProvider::new(ProviderName::decode(raw, sep)?)
    }

    fn describe() -> String {
        format!("{}, except `group` and `index`", ProviderName::describe())
    }

    fn spec() -> SegmentSpec {
        ProviderName::spec().with_except(&LEGACY_LITERALS)
    }
}

impl std::fmt::Display for LegacyProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

keyplane_core::__kv_if_proptest! {
    impl keyplane_core::keyspace::SegmentStrategy for LegacyProvider {
        fn strategy() -> keyplane_core::derive_support::proptest::strategy::BoxedStrategy<Self> {
            use keyplane_core::derive_support::proptest::strategy::Strategy;
            <ProviderName as keyplane_core::keyspace::SegmentStrategy>::strategy()
                .prop_filter_map("a legacy literal", |p| LegacyProvider::new(p).ok())
                .boxed()
        }
    }
}

/// `nexus:config:group:{provider}:{realm}`: the legacy HASH whose fields are the realm's
/// profile ids, plus the field `default` naming the default one.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "nexus:config:group:{provider}:{realm}", hash = Text, read_only)]
pub struct LegacyGroupKey {
    /// The provider.
    pub provider: LegacyProvider,
    /// The realm.
    pub realm: RealmId,
}

/// `nexus:config:index:{provider}:{realm}`: the legacy SET of the realm's profile ids (the
/// ownership whitelist).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "nexus:config:index:{provider}:{realm}", set = SegmentCodec<ProfileId>, read_only)]
pub struct LegacyIndexKey {
    /// The provider.
    pub provider: LegacyProvider,
    /// The realm.
    pub realm: RealmId,
}

/// `nexus:config:{provider}:{realm}:{profile}`: the legacy STRING of encrypted provider
/// settings, opaque here.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "nexus:config:{provider}:{realm}:{profile}", value = Bytes, read_only)]
pub struct LegacyConfigKey {
    /// The provider.
    pub provider: LegacyProvider,
    /// The realm.
    pub realm: RealmId,
    /// The profile.
    pub profile: ProfileId,
}

/// Every key of the legacy layout.
#[derive(Keyspace, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(naming = "[a-z]")]
pub enum NxcLegacyKeyspace {
    /// `nexus:config:group:{provider}:{realm}` (HASH)
    Group(LegacyGroupKey),
    /// `nexus:config:index:{provider}:{realm}` (SET)
    Index(LegacyIndexKey),
    /// `nexus:config:{provider}:{realm}:{profile}` (STRING)
    Config(LegacyConfigKey),
}
