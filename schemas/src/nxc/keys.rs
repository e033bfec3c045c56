//! Typed keys of the nxc keyspace, one per line of the document's §4.1, and the keyspace
//! enum [`NxcKeyspace`].

use super::segments::{ProfileId, ProviderName, RealmId};
use keyplane_core::keyspace::{Encrypted, Key, Keyspace, SegmentCodec, Text};

/// `nxc:map:{realm}:{provider}`: a Redis SET of the profile ids the realm owns for the
/// provider; the single source of truth for the ownership check (`SISMEMBER`) and for
/// discovery (`SMEMBERS`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "nxc:map:{realm}:{provider}", set = SegmentCodec<ProfileId>)]
pub struct ProfileMapKey {
    /// The realm.
    pub realm: RealmId,
    /// The provider.
    pub provider: ProviderName,
}

/// `nxc:map:{realm}:{provider}:default`: a Redis STRING holding the realm's default profile
/// id for the provider.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "nxc:map:{realm}:{provider}:default", value = SegmentCodec<ProfileId>)]
pub struct DefaultProfileKey {
    /// The realm.
    pub realm: RealmId,
    /// The provider.
    pub provider: ProviderName,
}

/// `nxc:inst:{realm}:{provider}:{profile}`: a Redis HASH of the profile's instance
/// parameters (`sub_mchid`, `access_token`, `gateway_url`...), fields and values as text.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "nxc:inst:{realm}:{provider}:{profile}", hash = Text)]
pub struct InstanceKey {
    /// The realm.
    pub realm: RealmId,
    /// The provider.
    pub provider: ProviderName,
    /// The profile.
    pub profile: ProfileId,
}

/// `nxc:pool:{provider}:{profile}`: a Redis STRING holding the provider's shared secret
/// material (private key, certificate), encrypted with a
/// [`Keyring`](keyplane_core::keyspace::Keyring).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "nxc:pool:{provider}:{profile}", value = Encrypted<Text>)]
pub struct PoolKey {
    /// The provider.
    pub provider: ProviderName,
    /// The profile.
    pub profile: ProfileId,
}

/// Every key of nxc.
///
/// The document's layout nests one key under another: the default marker
/// `nxc:map:{realm}:{provider}:default` extends the map key `nxc:map:{realm}:{provider}` by
/// one segment, so the map key is also the directory of its marker. That is the document's
/// own design (§4.1: the marker is named after the map it belongs to) and is declared here
/// with `allow_dir(Map, Default)` instead of changing the layout.
#[derive(Keyspace, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(naming = "[a-z]", allow_dir(Map, Default), value_enum = NxcValue)]
pub enum NxcKeyspace {
    /// `nxc:map:{realm}:{provider}` (SET). A plain value here is another program's data:
    /// the mirror keeps it as bytes.
    #[kv(raw)]
    Map(ProfileMapKey),
    /// `nxc:map:{realm}:{provider}:default` (STRING)
    Default(DefaultProfileKey),
    /// `nxc:inst:{realm}:{provider}:{profile}` (HASH). A plain value here is another
    /// program's data: the mirror keeps it as bytes.
    #[kv(raw)]
    Inst(InstanceKey),
    /// `nxc:pool:{provider}:{profile}` (encrypted STRING). The secret is bound to its key,
    /// so the mirror keeps it encrypted, as stored; a view decrypts it on read
    /// ([`pool_secret`](crate::nxc::ResolverView::pool_secret)).
    #[kv(raw)]
    Pool(PoolKey),
}

impl ProfileMapKey {
    /// The map of `realm` for `provider`.
    pub fn new(realm: &RealmId, provider: &ProviderName) -> Self {
        ProfileMapKey {
            realm: realm.clone(),
            provider: provider.clone(),
        }
    }

    /// The default marker of this map.
    pub fn default_marker(&self) -> DefaultProfileKey {
        DefaultProfileKey {
            realm: self.realm.clone(),
            provider: self.provider.clone(),
        }
    }

    /// The instance key of `profile` in this map's realm and provider.
    pub fn instance(&self, profile: &ProfileId) -> InstanceKey {
        InstanceKey {
            realm: self.realm.clone(),
            provider: self.provider.clone(),
            profile: profile.clone(),
        }
    }
}

impl PoolKey {
    /// The pool key of `profile` for `provider`.
    pub fn new(provider: &ProviderName, profile: &ProfileId) -> Self {
        PoolKey {
            provider: provider.clone(),
            profile: profile.clone(),
        }
    }
}
