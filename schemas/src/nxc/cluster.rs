//! The cluster variant of nxc's layout, for a store on Redis Cluster: the document's
//! templates with each one's co-location group declared as a hash tag, so that every
//! operation's keys share a slot.
//!
//! ```text
//! nxc:map:{shop-1}:Alipay                 ClusterProfileMapKey      group: the realm
//! nxc:map:{shop-1}:Alipay:default         ClusterDefaultProfileKey  group: the realm
//! nxc:inst:{shop-1}:Alipay:app_001        ClusterInstanceKey        group: the realm
//! nxc:pool:Alipay:{app_001}               ClusterPoolKey            group: the profile
//! ```
//!
//! (The braces are Redis Cluster's hash tag around the group variable's value; the templates
//! are the document's, with `hash_tag` declared beside them.)
//!
//! Why these groups: the document puts the realm first "so that Redis Cluster can shard by
//! realm" (§4.1), and every write that must be atomic touches one realm's keys: creating or
//! deleting a profile writes the realm's map, its default marker and the instance together,
//! and the ownership check reads the map before the instance. A pool secret is shared by every
//! realm that holds its profile and is read and written alone, by provider and profile: it
//! gets a group of its own per profile, which spreads the pools over the slots (grouping by
//! provider would put every secret of one provider on one master). The single-server layout
//! stays the document's bytes ([`NxcKeyspace`](super::NxcKeyspace)); this one is the explicit
//! cluster variant of it, used only where the store is a cluster.

use super::segments::{ProfileId, ProviderName, RealmId};
use keyplane_core::keyspace::{Encrypted, Key, Keyspace, SegmentCodec, Text};

/// `nxc:map:{realm}:{provider}` with the realm as hash tag (`nxc:map:{shop-1}:Alipay`): the
/// realm's SET of profile ids.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(
    template = "nxc:map:{realm}:{provider}",
    set = SegmentCodec<ProfileId>,
    hash_tag = "realm"
)]
pub struct ClusterProfileMapKey {
    /// The realm.
    pub realm: RealmId,
    /// The provider.
    pub provider: ProviderName,
}

/// `nxc:map:{realm}:{provider}:default` with the realm as hash tag: the realm's default
/// profile id.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(
    template = "nxc:map:{realm}:{provider}:default",
    value = SegmentCodec<ProfileId>,
    hash_tag = "realm"
)]
pub struct ClusterDefaultProfileKey {
    /// The realm.
    pub realm: RealmId,
    /// The provider.
    pub provider: ProviderName,
}

/// `nxc:inst:{realm}:{provider}:{profile}` with the realm as hash tag: the profile's instance
/// parameters (HASH).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(
    template = "nxc:inst:{realm}:{provider}:{profile}",
    hash = Text,
    hash_tag = "realm"
)]
pub struct ClusterInstanceKey {
    /// The realm.
    pub realm: RealmId,
    /// The provider.
    pub provider: ProviderName,
    /// The profile.
    pub profile: ProfileId,
}

/// `nxc:pool:{provider}:{profile}` with the profile as hash tag (`nxc:pool:Alipay:{app_001}`):
/// the profile's encrypted secret.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(
    template = "nxc:pool:{provider}:{profile}",
    value = Encrypted<Text>,
    hash_tag = "profile"
)]
pub struct ClusterPoolKey {
    /// The provider.
    pub provider: ProviderName,
    /// The profile.
    pub profile: ProfileId,
}

/// Every key of nxc's cluster variant (the map is the directory of its default marker, as in
/// the document's layout).
#[derive(Keyspace, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(naming = "[a-z]", allow_dir(Map, Default))]
pub enum NxcClusterKeyspace {
    /// `nxc:map:{realm}:{provider}` (SET), tagged by realm
    Map(ClusterProfileMapKey),
    /// `nxc:map:{realm}:{provider}:default` (STRING), tagged by realm
    Default(ClusterDefaultProfileKey),
    /// `nxc:inst:{realm}:{provider}:{profile}` (HASH), tagged by realm
    Inst(ClusterInstanceKey),
    /// `nxc:pool:{provider}:{profile}` (encrypted STRING), tagged by profile
    Pool(ClusterPoolKey),
}

impl ClusterProfileMapKey {
    /// The map of `realm` for `provider`.
    pub fn new(realm: &RealmId, provider: &ProviderName) -> Self {
        ClusterProfileMapKey {
            realm: realm.clone(),
            provider: provider.clone(),
        }
    }

    /// The default marker of this map (same group).
    pub fn default_marker(&self) -> ClusterDefaultProfileKey {
        ClusterDefaultProfileKey {
            realm: self.realm.clone(),
            provider: self.provider.clone(),
        }
    }

    /// The instance key of `profile` in this map's realm and provider (same group).
    pub fn instance(&self, profile: &ProfileId) -> ClusterInstanceKey {
        ClusterInstanceKey {
            realm: self.realm.clone(),
            provider: self.provider.clone(),
            profile: profile.clone(),
        }
    }
}

impl ClusterPoolKey {
    /// The pool key of `profile` for `provider`.
    pub fn new(provider: &ProviderName, profile: &ProfileId) -> Self {
        ClusterPoolKey {
            provider: provider.clone(),
            profile: profile.clone(),
        }
    }
}
