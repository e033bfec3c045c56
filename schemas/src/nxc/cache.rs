//! [`ResolverCache`]: the resolver's L1 cache of the map layer (the document's §7.3), kept
//! current by a watch instead of a TTL. Every key under `nxc:` (maps, default markers,
//! instance hashes, pool secrets) lives in one [`LiveReader`] with its collections; a view
//! answers [`resolve`](ResolverView::resolve) exactly as the live
//! [`resolve_profile`](super::resolve_profile) does, ownership check included, with no round
//! trip. A profile created or deleted in one transaction (map member, marker and instance
//! hash) appears or disappears in one view.

use super::keys::{InstanceKey, NxcKeyspace, NxcValue, PoolKey, ProfileMapKey};
use super::resolve::{no_profile, unauthorized};
use super::segments::{ProfileId, ProviderName, RealmId};
use super::values::{Identity, ResolvedProfile};
use crate::{LiveKeyspace, LiveReader, LiveView, decode_as, encode_as};
use keyplane_core::keyspace::{BuildCodec, Codec, Key};
use keyplane_core::{Error, ErrorKind, Result};
use std::time::Duration;

impl LiveKeyspace for NxcKeyspace {
    /// A full resync every ten minutes.
    const RESYNC: Option<Duration> = Some(Duration::from_secs(600));
    /// The maps and instance hashes are what a resolution reads.
    const COLLECTIONS: bool = true;
}

type PoolCodec = <PoolKey as Key>::Value;

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
pub type ResolverCache = LiveReader<NxcKeyspace>;

/// One consistent view of the nxc layers at [`revision`](LiveView::revision): resolutions
/// read maps, markers and hashes from it without a round trip. Cheap to clone and to keep.
pub type ResolverView = LiveView<NxcKeyspace>;

impl LiveView<NxcKeyspace> {
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
        for (field, value) in self.snapshot().map(&instance).into_iter().flatten() {
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
        self.snapshot()
            .set(&ProfileMapKey::new(realm, provider))
            .is_some_and(|members| members.contains(&member))
    }

    /// The realm's profile ids for the provider, in byte order.
    ///
    /// # Errors
    /// `Codec` for a stored member that is not a valid [`ProfileId`].
    pub fn profiles(&self, realm: &RealmId, provider: &ProviderName) -> Result<Vec<ProfileId>> {
        self.snapshot()
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
        if let Some(NxcValue::Default(marked)) = self.value(&map.default_marker())
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
        let key = PoolKey::new(provider, profile);
        let Some(stored) = self.value(&key) else {
            return Ok(None);
        };
        let NxcValue::Pool(bytes) = stored else {
            return Err(Error::internal("a pool key held another template's value"));
        };
        // Without a keyring: the error the live read gives.
        let codec = PoolCodec::build(self.codec_context())?;
        let key = key.encode();
        // The secret is bound to its key.
        codec.decode_for(key.as_bytes(), bytes).map(Some)
    }
}
