//! [`ResolverCache`]: the resolver's L1 cache of the map layer (the document's §7.3), kept
//! current by a watch instead of a TTL. Every key under `nxc:` (maps, default markers,
//! instance hashes, pool secrets) lives in one [`Mirror`] with its collections; a view
//! answers [`resolve`](ResolverView::resolve) exactly as the live
//! [`resolve_profile`](super::resolve_profile) does, ownership check included, with no round
//! trip. A profile created or deleted in one transaction (map member, marker and instance
//! hash) appears or disappears in one view.

use super::keys::{DefaultProfileKey, InstanceKey, NxcKeyspace, PoolKey, ProfileMapKey};
use super::resolve::{no_profile, unauthorized};
use super::segments::{ProfileId, ProviderName, RealmId};
use super::values::{Identity, ResolvedProfile};
use crate::{ReaderOptions, decode_as, encode_as};
use keyplane_core::keyspace::{Codec, Key, TypedStore};
use keyplane_core::mirror::{Mirror, MirrorHealth, MirrorSnapshot};
use keyplane_core::{Error, ErrorKind, Result};
use std::sync::Arc;
use std::time::Duration;

/// The decoded value of a plain key of the nxc keyspace. The maps and instance hashes are
/// collections, read from the view with their own codecs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NxcValue {
    /// `nxc:map:{realm}:{provider}:default`: the default profile id.
    Default(ProfileId),
    /// `nxc:pool:{provider}:{profile}`: the encrypted secret, as stored (decrypted on read
    /// with [`ResolverView::pool_secret`]).
    Pool(Vec<u8>),
    /// A plain value at a map or instance key (another program's data): kept as bytes.
    Other(Vec<u8>),
}

fn decode(key: &NxcKeyspace, bytes: &[u8]) -> Result<NxcValue> {
    Ok(match key {
        NxcKeyspace::Default(_) => NxcValue::Default(decode_as::<DefaultProfileKey>(bytes)?),
        NxcKeyspace::Pool(_) => NxcValue::Pool(bytes.to_vec()),
        NxcKeyspace::Map(_) | NxcKeyspace::Inst(_) => NxcValue::Other(bytes.to_vec()),
    })
}

type PoolCodec = <PoolKey as Key>::Value;

/// The pool's codec, or why it could not be built (no keyring), which a pool read returns.
type PoolDecoder = std::result::Result<Arc<PoolCodec>, Error>;

/// The nxc resolver's cache: every key under `nxc:` mirrored with its sets and hashes.
/// Cheap to clone.
///
/// ```
/// use keyplane_core::keyspace::TypedStore;
/// use keyplane_schemas::nxc::{
///     create_profile, resolve_profile, Identity, NewProfile, ProfileId, ProviderName, RealmId,
///     ResolverCache,
/// };
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// let cache = ResolverCache::start(&typed).await?;
/// let realm = RealmId::new("realm_a").unwrap();
/// let provider = ProviderName::new("alipay").unwrap();
/// let profile = ProfileId::new("app_001").unwrap();
/// let new = NewProfile {
///     realm: realm.clone(),
///     provider: provider.clone(),
///     profile: profile.clone(),
///     params: [("sub_mchid".to_string(), "1900".to_string())].into(),
///     default: true,
/// };
/// create_profile(&typed, &new).await?;
///
/// let view = cache.wait_for(typed.revision().await?).await?; // read your own write
/// let asked = Identity { realm: realm.clone(), provider: provider.clone(), profile: None };
/// let resolved = view.resolve(&asked)?;
/// assert_eq!(resolved, resolve_profile(&typed, &asked).await?); // as the live resolver
/// assert_eq!(resolved.params["sub_mchid"], "1900");
///
/// // Another realm asking for this profile fails the ownership check, as it does live.
/// let other = Identity {
///     realm: RealmId::new("realm_b").unwrap(),
///     provider,
///     profile: Some(profile),
/// };
/// assert_eq!(view.resolve(&other).unwrap_err().kind(), keyplane_core::ErrorKind::Unauthorized);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ResolverCache {
    mirror: Mirror<NxcKeyspace, NxcValue>,
    pool: PoolDecoder,
}

impl std::fmt::Debug for ResolverCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolverCache")
            .field("mirror", &self.mirror)
            .field("keyring", &self.pool.is_ok())
            .finish()
    }
}

impl ResolverCache {
    /// Mirrors `nxc:` through `store`, with a full resync every ten minutes. On Redis, the
    /// maps and hashes other programs write with raw commands reach the cache through the
    /// store's reconciler: give it `nxc:` as a reconcile root. Pool secrets decrypt with the
    /// typed store's keyring when it has one.
    ///
    /// # Errors
    /// The first load's errors.
    pub async fn start(store: &TypedStore) -> Result<Self> {
        ResolverCache::start_with(store, ReaderOptions::default()).await
    }

    /// [`start`](Self::start) with another resync period.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub async fn start_with_resync(store: &TypedStore, resync: Duration) -> Result<Self> {
        ResolverCache::start_with(store, ReaderOptions::default().resync_every(resync)).await
    }

    /// [`start`](Self::start) with other options: the resync period (ten minutes unless
    /// set) and the listings' page size.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub async fn start_with(store: &TypedStore, options: ReaderOptions) -> Result<Self> {
        let builder = store
            .mirror_keyspace::<NxcKeyspace>()
            .with_collections()
            .decode_with(decode);
        let mirror = options
            .apply(builder, Duration::from_secs(600))
            .start()
            .await?;
        let pool = store.codec::<PoolKey>().map(Arc::new);
        Ok(ResolverCache { mirror, pool })
    }

    /// The current view.
    pub fn view(&self) -> ResolverView {
        ResolverView {
            snapshot: self.mirror.snapshot(),
            pool: self.pool.clone(),
        }
    }

    /// The view once it reflects `revision` (the revision a write returned).
    ///
    /// # Errors
    /// `Unavailable` when the mirror has stopped.
    pub async fn wait_for(&self, revision: i64) -> Result<ResolverView> {
        Ok(ResolverView {
            snapshot: self.mirror.wait_for(revision).await?,
            pool: self.pool.clone(),
        })
    }

    /// The mirror's health.
    pub fn health(&self) -> MirrorHealth {
        self.mirror.health()
    }

    /// The mirror underneath, for subscriptions (its batches carry the collection changes
    /// that invalidate resolutions).
    pub fn mirror(&self) -> &Mirror<NxcKeyspace, NxcValue> {
        &self.mirror
    }
}

/// One consistent view of the nxc layers at [`revision`](Self::revision): resolutions read
/// maps, markers and hashes from it without a round trip. Cheap to clone and to keep.
#[derive(Clone)]
pub struct ResolverView {
    snapshot: Arc<MirrorSnapshot<NxcKeyspace, NxcValue>>,
    pool: PoolDecoder,
}

impl std::fmt::Debug for ResolverView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolverView")
            .field("snapshot", &self.snapshot)
            .finish_non_exhaustive()
    }
}

impl ResolverView {
    /// The store revision the view reflects.
    pub fn revision(&self) -> i64 {
        self.snapshot.revision()
    }

    /// What [`resolve_profile`](super::resolve_profile) answers on the store at
    /// [`revision`](Self::revision): the asked profile when the realm's map holds it
    /// (`Unauthorized` otherwise), or the default (the marker when it names a member, else
    /// the smallest id; `NotFound` for an empty map), with its instance parameters.
    ///
    /// # Errors
    /// `Unauthorized`, `NotFound` as above; `Codec` for a stored id or parameter that does
    /// not decode.
    pub fn resolve(&self, identity: &Identity) -> Result<ResolvedProfile> {
        let profile = match &identity.profile {
            Some(profile) => {
                if !self.owns(&identity.realm, &identity.provider, profile) {
                    return Err(unauthorized(&identity.realm, &identity.provider, profile));
                }
                profile.clone()
            }
            None => self
                .default_profile(&identity.realm, &identity.provider)?
                .ok_or_else(|| no_profile(&identity.realm, &identity.provider))?,
        };
        let instance = ProfileMapKey::new(&identity.realm, &identity.provider).instance(&profile);
        let mut params = super::values::InstanceParams::new();
        for (field, value) in self.snapshot.map(&instance).into_iter().flatten() {
            let field = String::from_utf8(field.clone()).map_err(|_| {
                Error::new(ErrorKind::Codec, "an instance field is not UTF-8")
                    .with_context("key", instance.encode())
            })?;
            params.insert(field, decode_as::<InstanceKey>(value)?);
        }
        Ok(ResolvedProfile {
            realm: identity.realm.clone(),
            provider: identity.provider.clone(),
            profile,
            params,
        })
    }

    /// Whether the realm's map for the provider holds `profile` (the ownership check).
    pub fn owns(&self, realm: &RealmId, provider: &ProviderName, profile: &ProfileId) -> bool {
        let Ok(member) = encode_as::<ProfileMapKey>(profile) else {
            return false;
        };
        self.snapshot
            .set(&ProfileMapKey::new(realm, provider))
            .is_some_and(|members| members.contains(&member))
    }

    /// The realm's profile ids for the provider, in byte order.
    ///
    /// # Errors
    /// `Codec` for a stored member that is not a valid [`ProfileId`].
    pub fn profiles(&self, realm: &RealmId, provider: &ProviderName) -> Result<Vec<ProfileId>> {
        self.snapshot
            .set(&ProfileMapKey::new(realm, provider))
            .into_iter()
            .flatten()
            .map(|member| decode_as::<ProfileMapKey>(member))
            .collect()
    }

    /// What [`default_profile`](super::default_profile) answers at the view's revision.
    ///
    /// # Errors
    /// `Codec` for a stored id that does not decode.
    pub fn default_profile(
        &self,
        realm: &RealmId,
        provider: &ProviderName,
    ) -> Result<Option<ProfileId>> {
        let map = ProfileMapKey::new(realm, provider);
        let members = self.profiles(realm, provider)?;
        let marker = self
            .snapshot
            .get_raw(map.default_marker().encode().as_bytes());
        if let Some((_, marked)) = marker
            && let NxcValue::Default(marked) = &marked.value
            && members.contains(marked)
        {
            return Ok(Some(marked.clone()));
        }
        Ok(members.into_iter().min())
    }

    /// The decrypted pool secret of `profile` for a realm that owns it: the pool is shared
    /// by every realm of the provider, so the same ownership check as
    /// [`resolve`](Self::resolve) comes first. `None` when the pool has no secret for it.
    ///
    /// # Errors
    /// `Unauthorized` when the realm does not own the profile; `Config` when the typed store
    /// the cache started from has no keyring; `Codec` when the secret does not decrypt.
    pub fn pool_secret(
        &self,
        realm: &RealmId,
        provider: &ProviderName,
        profile: &ProfileId,
    ) -> Result<Option<String>> {
        if !self.owns(realm, provider, profile) {
            return Err(unauthorized(realm, provider, profile));
        }
        let key = PoolKey::new(provider, profile).encode();
        let Some((_, stored)) = self.snapshot.get_raw(key.as_bytes()) else {
            return Ok(None);
        };
        let NxcValue::Pool(bytes) = &stored.value else {
            return Err(Error::internal("a pool key held another template's value"));
        };
        // Without a keyring: the error the live read gives.
        let codec = self.pool.as_ref().map_err(Error::clone)?;
        // The secret is bound to its key.
        codec.decode_for(key.as_bytes(), bytes).map(Some)
    }

    /// The keys under `nxc:` that did not parse or decode, and the collections whose keys
    /// did not parse: reported, never dropped.
    pub fn unreadable(&self) -> usize {
        self.snapshot.unreadable().count() + self.snapshot.unreadable_collections().count()
    }
}
