//! The three-layer configuration model (`nxc:`, Redis): map, instance, pool.
//!
//! ```text
//! nxc:map:{realm}:{provider}               ProfileMapKey      SET of profile ids
//! nxc:map:{realm}:{provider}:default       DefaultProfileKey  STRING: the default profile id
//! nxc:inst:{realm}:{provider}:{profile}    InstanceKey        HASH: sub_mchid, access_token, ...
//! nxc:pool:{provider}:{profile}            PoolKey            STRING, encrypted (private key, cert)
//! ```
//!
//! Realm comes before provider, as the document decides (§4.1). The map is the single source
//! of truth for which profiles a realm owns: the ownership check and discovery both read it.
//! On Redis every key is the native type above; ordered backends emulate the SET and HASH.
//!
//! The document's own layout makes the map key the directory of its default marker
//! (`…:{provider}` and `…:{provider}:default`); [`NxcKeyspace`] declares that nesting.
//! Segments: realm, provider and profile ids are 1-64 bytes of `[a-zA-Z0-9_.-]` (never `:`).
//!
//! Operations: [`create_profile`], [`delete_profile`] and [`set_default_profile`] (one
//! transaction each; even when they race, none leaves the default marker naming a profile
//! outside the map), [`resolve_profile`] (ownership check: `Unauthorized`),
//! [`default_profile`] (marker, else the smallest id), [`list_profiles`] (paged),
//! [`put_pool_secret`] / [`pool_secret`] (encrypted with the typed store's
//! [`Keyring`](keyplane_core::keyspace::Keyring)), [`owned_pool_secret`] (the pool read with
//! the ownership check), [`write_example`] for a demo dataset.
//!
//! Reading: [`ResolverCache`] is the resolver's L1 cache of every layer (§7.3), a watched
//! mirror of `nxc:` with its sets and hashes; its views resolve exactly as
//! [`resolve_profile`] does, without a round trip.
//!
//! On Redis Cluster the layout is [`NxcClusterKeyspace`], the same templates with each
//! key's co-location group declared as its hash tag: the realm for the map, the marker and the
//! instances (`nxc:map:{shop-1}:Alipay`), so that every profile operation is one slot's
//! transaction, and the profile for a pool secret (`nxc:pool:Alipay:{app_001}`).
//!
//! The legacy layout the document replaces (`nexus:config:group|index:{provider}:{realm}`,
//! `nexus:config:{provider}:{realm}:{profile}`) is its own keyspace, [`NxcLegacyKeyspace`];
//! [`NxcLegacy`] migrates the whole legacy layout (every group, index and config string,
//! found by scanning) with plan, verify, finalize and rollback; [`migrate_legacy`] is the
//! one-realm, one-shot form of the document's §5.2 script.

mod cache;
mod cluster;
mod example;
mod keys;
mod legacy;
mod legacy_migration;
mod migrate;
mod pool;
mod profile;
mod resolve;
mod segments;
mod values;

pub use cache::{ResolverCache, ResolverView};
pub use cluster::{
    ClusterDefaultProfileKey, ClusterInstanceKey, ClusterPoolKey, ClusterProfileMapKey,
    NxcClusterKeyspace,
};
pub use example::{NxcExample, write_cluster_example, write_example};
pub use keys::{DefaultProfileKey, InstanceKey, NxcKeyspace, NxcValue, PoolKey, ProfileMapKey};
pub use legacy::{
    LegacyConfigKey, LegacyGroupKey, LegacyIndexKey, LegacyProvider, NxcLegacyKeyspace,
};
pub use legacy_migration::{NxcLegacy, SettingsDecoder};
pub use migrate::{LegacyMigration, migrate_legacy};
pub use pool::{owned_pool_secret, pool_secret, put_pool_secret};
pub use profile::{create_profile, delete_profile, set_default_profile};
pub use resolve::{default_profile, list_profiles, resolve_profile};
pub use segments::{ProfileId, ProviderName, RealmId};
pub use values::{
    Identity, InstanceParams, MAX_FIELD_LEN, NewProfile, ResolvedProfile, validate_params,
};

use keyplane_core::keyspace::Schema;

/// The nxc catalog entry.
pub fn schema() -> Schema {
    Schema::of::<NxcKeyspace>("nxc")
        .with_store("redis")
        .with_summary("three-layer config model: realm profile map (SET) + default marker, instance HASH, encrypted pool")
}

/// The catalog entry of the cluster variant ([`NxcClusterKeyspace`]).
pub fn cluster_schema() -> Schema {
    Schema::of::<NxcClusterKeyspace>("nxc-cluster")
        .with_store("redis-cluster")
        .with_summary("nxc on Redis Cluster: the document's templates grouped by realm (map, marker, instance) and by profile (pool)")
}

/// The catalog entry of the legacy layout ([`NxcLegacyKeyspace`], read-only).
pub fn legacy_schema() -> Schema {
    Schema::read_only::<NxcLegacyKeyspace>("nxc-legacy")
        .with_store("redis")
        .with_summary("the layout nxc replaces: nexus:config:group|index|{provider} (read-only; `kvctl migrate apply nxc-legacy` moves it)")
}
