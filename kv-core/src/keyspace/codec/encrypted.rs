//! `Encrypted<C>`: AES-256-GCM around another codec, with a key id in every value so that
//! keys can rotate. The envelope format is documented on [`Encrypted`].

use super::traits::{BuildCodec, Codec, CodecContext, codec_error};
use crate::{Error, ErrorKind, Result};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use rand::RngCore;
use std::fmt;
use std::sync::Arc;

/// The envelope format version written by this crate: the storage key is authenticated with
/// the value.
pub const ENVELOPE_VERSION: u8 = 2;

/// The first envelope format, which did not bind a value to its storage key. Such values open
/// only with [`Keyring::accept_unbound`], to be re-encrypted ([`reencrypt_prefix`]).
pub const UNBOUND_ENVELOPE_VERSION: u8 = 1;

const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// A 256-bit AES key. Its bytes never appear in `Debug` output or in errors.
#[derive(Clone)]
pub struct EncryptionKey([u8; 32]);

impl EncryptionKey {
    /// A key from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        EncryptionKey(bytes)
    }

    /// A key from a slice, which must be exactly 32 bytes long.
    ///
    /// # Errors
    /// [`ErrorKind::Config`] for any other length (the message gives only the length).
    pub fn from_slice(bytes: &[u8]) -> Result<Self> {
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| {
            Error::new(
                ErrorKind::Config,
                format!("an AES-256 key is 32 bytes, this one has {}", bytes.len()),
            )
        })?;
        Ok(EncryptionKey(bytes))
    }

    /// A fresh random key from the thread-local CSPRNG.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        EncryptionKey(bytes)
    }
}

impl fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EncryptionKey(..)")
    }
}

/// The keys an [`Encrypted`] codec uses: several keys by id, one of them current.
///
/// Values are encrypted with the current key and decrypted with whichever key their envelope
/// names, so a key can be rotated without rewriting stored values first: add the new key as
/// current with [`Keyring::rotate`], re-encrypt the stored values ([`reencrypt_prefix`],
/// `kvctl reencrypt`), then build the keyring without the old one. `Debug` shows the key ids
/// only.
///
/// Each value is bound to the storage key it was sealed for ([`encrypt_for`](Self::encrypt_for)):
/// the key is authenticated as associated data, so a ciphertext copied to another key fails
/// to decrypt there.
///
/// ```
/// use keyplane_core::keyspace::{EncryptionKey, Keyring};
/// let old = Keyring::new("2025-01", EncryptionKey::generate())?;
/// let sealed = old.encrypt_for(b"nxc:pool:wx:prod", b"token")?;
/// let new = old.clone().rotate("2026-01", EncryptionKey::generate())?;
/// assert_eq!(new.current_id(), "2026-01");
/// assert_eq!(Keyring::envelope_key_id(&sealed)?, "2025-01");
/// assert_eq!(new.decrypt_for(b"nxc:pool:wx:prod", &sealed)?, b"token");
/// // Copied to another key, it does not open.
/// assert!(new.decrypt_for(b"nxc:pool:wx:test", &sealed).is_err());
/// # Ok::<(), keyplane_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Keyring {
    keys: Vec<(String, Aes256Gcm)>,
    current: usize,
    accept_unbound: bool,
}

impl Keyring {
    /// A keyring with one key, `id`, which is current.
    ///
    /// # Errors
    /// [`ErrorKind::Config`] when `id` is empty, longer than 255 bytes or not printable ASCII.
    pub fn new(id: impl Into<String>, key: EncryptionKey) -> Result<Self> {
        let id = checked_id(id.into())?;
        Ok(Keyring {
            keys: vec![(id, cipher(&key))],
            current: 0,
            accept_unbound: false,
        })
    }

    /// Adds a key that decrypts values but does not encrypt new ones (an older key).
    ///
    /// # Errors
    /// [`ErrorKind::Config`] for a bad id or an id already in the keyring.
    pub fn with_key(mut self, id: impl Into<String>, key: EncryptionKey) -> Result<Self> {
        self.insert(id.into(), key)?;
        Ok(self)
    }

    /// Adds a key and makes it current; the previous keys still decrypt.
    ///
    /// # Errors
    /// [`ErrorKind::Config`] for a bad id or an id already in the keyring.
    pub fn rotate(mut self, id: impl Into<String>, key: EncryptionKey) -> Result<Self> {
        self.current = self.insert(id.into(), key)?;
        Ok(self)
    }

    fn insert(&mut self, id: String, key: EncryptionKey) -> Result<usize> {
        let id = checked_id(id)?;
        if self.keys.iter().any(|(known, _)| *known == id) {
            return Err(
                Error::new(ErrorKind::Config, "the keyring already has this key id")
                    .with_context("key_id", id),
            );
        }
        self.keys.push((id, cipher(&key)));
        Ok(self.keys.len() - 1)
    }

    /// The id of the key new values are encrypted with.
    pub fn current_id(&self) -> &str {
        &self.keys[self.current].0
    }

    /// The ids of every key, in the order they were added.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|(id, _)| id.as_str())
    }

    /// Also opens values of the first envelope format
    /// ([`UNBOUND_ENVELOPE_VERSION`]), which are not bound to their storage key (a copy of
    /// one to another key would open there too). Off by default; a keyring that accepts them
    /// is meant for [`reencrypt_prefix`], which rewrites them in the current format.
    pub fn accept_unbound(mut self, accept: bool) -> Self {
        self.accept_unbound = accept;
        self
    }

    /// Seals `plaintext` for the storage key `key` with the current key and a fresh random
    /// nonce: `key` is authenticated with the value, which then opens only for that key.
    ///
    /// # Errors
    /// [`ErrorKind::Codec`] if the cipher refuses the input (longer than AES-GCM allows).
    pub fn encrypt_for(&self, key: &[u8], plaintext: &[u8]) -> Result<Vec<u8>> {
        let (id, cipher) = &self.keys[self.current];
        let mut out = Vec::with_capacity(2 + id.len() + NONCE_LEN + plaintext.len() + TAG_LEN);
        out.push(ENVELOPE_VERSION);
        out.push(id.len() as u8);
        out.extend_from_slice(id.as_bytes());
        let header_len = out.len();
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let sealed = cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: &associated(&out[..header_len], key),
                },
            )
            .map_err(|_| codec_error("encrypted", "AES-256-GCM refused to encrypt the value"))?;
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Opens an envelope sealed for the storage key `key`, with the key it names.
    ///
    /// # Errors
    /// [`ErrorKind::Codec`] for a truncated envelope, an unknown format version, an unbound
    /// envelope this keyring does not [accept](Self::accept_unbound), a key id this keyring
    /// does not hold, or a value that fails authentication (tampered, sealed with another key
    /// of the same id, or sealed for another storage key).
    pub fn decrypt_for(&self, key: &[u8], envelope: &[u8]) -> Result<Vec<u8>> {
        let parsed = parse_envelope(envelope)?;
        if parsed.version == UNBOUND_ENVELOPE_VERSION && !self.accept_unbound {
            return Err(codec_error(
                "encrypted",
                "the value is in the first envelope format, which is not bound to its key: \
                 re-encrypt it (kvctl reencrypt, or reencrypt_prefix with a keyring that \
                 accepts unbound values)",
            )
            .with_context("key_id", String::from_utf8_lossy(parsed.key_id)));
        }
        let cipher = self
            .keys
            .iter()
            .find(|(id, _)| id.as_bytes() == parsed.key_id)
            .map(|(_, cipher)| cipher)
            .ok_or_else(|| {
                codec_error(
                    "encrypted",
                    "the value was sealed with a key this keyring lacks",
                )
                .with_context("key_id", String::from_utf8_lossy(parsed.key_id))
                .with_context("keyring", self.ids().collect::<Vec<_>>().join(","))
            })?;
        let aad = if parsed.version == UNBOUND_ENVELOPE_VERSION {
            parsed.header.to_vec()
        } else {
            associated(parsed.header, key)
        };
        cipher
            .decrypt(
                Nonce::from_slice(parsed.nonce),
                Payload {
                    msg: parsed.sealed,
                    aad: &aad,
                },
            )
            .map_err(|_| {
                codec_error(
                    "encrypted",
                    "the value failed authentication: tampered, sealed with another key, or \
                     sealed for another storage key (copied)",
                )
                .with_context("key_id", String::from_utf8_lossy(parsed.key_id))
            })
    }

    /// Seals `plaintext` bound to no storage key ([`encrypt_for`](Self::encrypt_for) with an
    /// empty key): for values kept outside a store.
    ///
    /// # Errors
    /// As [`encrypt_for`](Self::encrypt_for).
    pub fn encrypt(&self, plaintext: &[u8]) -> Result<Vec<u8>> {
        self.encrypt_for(b"", plaintext)
    }

    /// Opens an envelope sealed by [`encrypt`](Self::encrypt) (bound to no storage key).
    ///
    /// # Errors
    /// As [`decrypt_for`](Self::decrypt_for).
    pub fn decrypt(&self, envelope: &[u8]) -> Result<Vec<u8>> {
        self.decrypt_for(b"", envelope)
    }

    /// Whether `envelope` is sealed with the current key in the current format (nothing for
    /// a re-encryption to do).
    ///
    /// # Errors
    /// [`ErrorKind::Codec`] for a truncated envelope or an unknown format version.
    pub fn is_current(&self, envelope: &[u8]) -> Result<bool> {
        let parsed = parse_envelope(envelope)?;
        Ok(parsed.version == ENVELOPE_VERSION && parsed.key_id == self.current_id().as_bytes())
    }

    /// The key id an envelope names, without decrypting it (to find values that still need
    /// re-encryption after a rotation).
    ///
    /// # Errors
    /// [`ErrorKind::Codec`] for a truncated envelope or an unknown format version.
    pub fn envelope_key_id(envelope: &[u8]) -> Result<&str> {
        let parsed = parse_envelope(envelope)?;
        std::str::from_utf8(parsed.key_id)
            .map_err(|_| codec_error("encrypted", "the envelope's key id is not ASCII"))
    }
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring")
            .field("current", &self.current_id())
            .field("ids", &self.ids().collect::<Vec<_>>())
            .finish()
    }
}

/// The associated data of a bound envelope: its header, then the storage key (the header
/// fixes its own length, so the two never run together ambiguously).
fn associated(header: &[u8], key: &[u8]) -> Vec<u8> {
    let mut aad = Vec::with_capacity(header.len() + key.len());
    aad.extend_from_slice(header);
    aad.extend_from_slice(key);
    aad
}

fn cipher(key: &EncryptionKey) -> Aes256Gcm {
    Aes256Gcm::new(&key.0.into())
}

fn checked_id(id: String) -> Result<String> {
    if id.is_empty() || id.len() > 255 || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::new(
            ErrorKind::Config,
            "a key id is 1 to 255 printable ASCII characters without spaces",
        )
        .with_context("key_id", id.escape_debug()));
    }
    Ok(id)
}

struct Envelope<'a> {
    version: u8,
    header: &'a [u8],
    key_id: &'a [u8],
    nonce: &'a [u8],
    sealed: &'a [u8],
}

fn parse_envelope(bytes: &[u8]) -> Result<Envelope<'_>> {
    let truncated = || {
        codec_error(
            "encrypted",
            "the value is too short to be an encrypted envelope",
        )
        .with_context("len", bytes.len())
    };
    let (&version, rest) = bytes.split_first().ok_or_else(truncated)?;
    if version != ENVELOPE_VERSION && version != UNBOUND_ENVELOPE_VERSION {
        return Err(
            codec_error("encrypted", "unknown encrypted envelope version")
                .with_context("version", version),
        );
    }
    let (&id_len, rest) = rest.split_first().ok_or_else(truncated)?;
    let id_len = usize::from(id_len);
    if id_len == 0 || rest.len() < id_len + NONCE_LEN + TAG_LEN {
        return Err(truncated());
    }
    let (key_id, rest) = rest.split_at(id_len);
    let (nonce, sealed) = rest.split_at(NONCE_LEN);
    Ok(Envelope {
        version,
        header: &bytes[..2 + id_len],
        key_id,
        nonce,
        sealed,
    })
}

/// Encrypts the bytes of an inner codec with a [`Keyring`]: values at rest are AES-256-GCM
/// envelopes naming the key that sealed them.
///
/// A codec with state: the typed store builds it from the [`Keyring`] it was given with
/// [`TypedStore::with_codec_state`](crate::keyspace::TypedStore::with_codec_state) ([`BuildCodec`]);
/// a typed store without one refuses encrypted keys with `Config`, writing nothing. Use one
/// typed store per keyring (clones share the store). Built by hand with [`Encrypted::new`],
/// it is a plain [`Codec`].
///
/// The envelope of an encrypted value is
///
/// | bytes | content |
/// |---|---|
/// | 1 | format version, [`ENVELOPE_VERSION`] (2) |
/// | 1 | length `n` of the key id (1–255) |
/// | `n` | the key id, printable ASCII |
/// | 12 | a random 96-bit nonce |
/// | rest | the AES-256-GCM ciphertext of the inner codec's bytes, then the 16-byte tag |
///
/// The header (version, length and key id) and then the storage key the value was written at
/// are authenticated as associated data: a value whose key id was rewritten, or a ciphertext
/// copied to another key, fails to decrypt like any other tampered value. The typed store
/// binds each value to its key as the store it was given names it (under a
/// [`NamespaceLayer`](crate::layer::NamespaceLayer), the key within the namespace). Used by
/// hand, [`Codec::encode`] binds to no key; [`Codec::encode_for`] binds to the key given.
///
/// ```
/// use keyplane_core::keyspace::{Codec, Encrypted, EncryptionKey, Json, Keyring};
/// use std::sync::Arc;
/// let keyring = Arc::new(Keyring::new("k1", EncryptionKey::generate())?);
/// let codec = Encrypted::new(keyring, Json::<Vec<String>>::new());
/// let sealed = codec.encode(&vec!["sub_mchid".to_string()])?;
/// assert!(!sealed.windows(9).any(|w| w == b"sub_mchid"));
/// assert_eq!(codec.decode(&sealed)?, vec!["sub_mchid".to_string()]);
/// # Ok::<(), keyplane_core::Error>(())
/// ```
///
/// With the typed facade, the key declares the codec and the typed store holds the keyring:
///
/// ```
/// use keyplane_core::keyspace::{Encrypted, EncryptionKey, Json, Key, Keyring, TypedStore};
/// use std::sync::Arc;
///
/// keyplane_core::text_segment!(pub Code, charset = "[a-z0-9_-]", max_len = 63, policy = Reject);
///
/// #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// struct PoolSettings { token: String }
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "nxc:pool:{realm}:{provider}", value = Encrypted<Json<PoolSettings>>)]
/// struct PoolKey { realm: Code, provider: Code }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let keyring = Arc::new(Keyring::new("2026-01", EncryptionKey::generate())?);
/// let store = Arc::new(keyplane_mem::MemStore::new());
/// let typed = TypedStore::new(store.clone()).with_codec_state(keyring);
/// let key = PoolKey { realm: Code::new("prod").unwrap(), provider: Code::new("wx").unwrap() };
///
/// typed.put(&key, &PoolSettings { token: "t0p-secret".into() }).await?;
/// let stored = typed.store().get(b"nxc:pool:prod:wx").await?.unwrap();
/// assert_eq!(Keyring::envelope_key_id(&stored.value)?, "2026-01");
/// let settings = typed.get(&key).await?.unwrap();
/// assert_eq!(settings.token, "t0p-secret");
///
/// // Without the keyring, the key is refused before anything is read or written.
/// let bare = TypedStore::new(store);
/// assert_eq!(bare.get(&key).await.unwrap_err().kind(), keyplane_core::ErrorKind::Config);
/// # Ok(())
/// # }
/// ```
pub struct Encrypted<C> {
    keyring: Arc<Keyring>,
    inner: C,
}

impl<C> Encrypted<C> {
    /// Encrypts `inner`'s bytes with `keyring`.
    pub fn new(keyring: Arc<Keyring>, inner: C) -> Self {
        Encrypted { keyring, inner }
    }

    /// The keyring.
    pub fn keyring(&self) -> &Arc<Keyring> {
        &self.keyring
    }

    /// The inner codec.
    pub fn inner(&self) -> &C {
        &self.inner
    }
}

impl<C: Clone> Clone for Encrypted<C> {
    fn clone(&self) -> Self {
        Encrypted {
            keyring: Arc::clone(&self.keyring),
            inner: self.inner.clone(),
        }
    }
}

impl<C: fmt::Debug> fmt::Debug for Encrypted<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encrypted")
            .field("keyring", &self.keyring)
            .field("inner", &self.inner)
            .finish()
    }
}

impl<C: BuildCodec> BuildCodec for Encrypted<C> {
    fn build(context: &CodecContext) -> Result<Self> {
        let keyring = context.require::<Keyring>("encrypted")?;
        Ok(Encrypted::new(keyring, C::build(context)?))
    }
}

impl<C: Codec> Codec for Encrypted<C> {
    type Value = C::Value;
    const ENCRYPTED: bool = true;

    fn encode(&self, value: &C::Value) -> Result<Vec<u8>> {
        self.encode_for(b"", value)
    }

    fn decode(&self, bytes: &[u8]) -> Result<C::Value> {
        self.decode_for(b"", bytes)
    }

    fn encode_for(&self, key: &[u8], value: &C::Value) -> Result<Vec<u8>> {
        self.keyring
            .encrypt_for(key, &self.inner.encode_for(key, value)?)
    }

    fn decode_for(&self, key: &[u8], bytes: &[u8]) -> Result<C::Value> {
        self.inner
            .decode_for(key, &self.keyring.decrypt_for(key, bytes)?)
    }
}

/// What [`reencrypt_prefix`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReencryptReport {
    /// Plain keys read under the prefix.
    pub scanned: u64,
    /// Values rewritten with the current key in the current format.
    pub reencrypted: u64,
    /// Values already sealed with the current key in the current format (left alone).
    pub current: u64,
    /// Values that are not encrypted envelopes (left alone).
    pub not_encrypted: u64,
    /// Values another writer changed while they were being re-encrypted; each was read
    /// again and handled (re-encrypted, or found current).
    pub raced: u64,
}

/// How many times one key is re-read when other writers keep changing it.
const REENCRYPT_RACES: u32 = 8;

/// Keys read per page (each rewrite is a transaction of its own).
const REENCRYPT_PAGE: usize = 256;

/// Re-encrypts every encrypted value under `prefix` (plain keys) with `keyring`'s current
/// key, in the current envelope format, bound to its key. Values sealed with an older key of
/// the keyring, and (when the keyring [accepts them](Keyring::accept_unbound)) values of the
/// first, unbound format, are opened and sealed again; nothing else is touched.
///
/// Each rewrite is guarded by the value's mod revision and keeps the key's lease, so a value
/// another writer replaced meanwhile is never overwritten: it is read again. Only sealed
/// values are ever written, never a plaintext. It is resumable: a value already current is
/// skipped, so running it again after an interruption finishes the job, and a second run
/// writes nothing. Values in sets, maps and lists are not covered.
///
/// ```
/// use keyplane_core::keyspace::{EncryptionKey, Keyring, reencrypt_prefix};
/// use keyplane_core::{PutOptions, Store};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let store = keyplane_mem::MemStore::new();
/// let old = Keyring::new("2025", EncryptionKey::generate())?;
/// let sealed = old.encrypt_for(b"pool/wx", b"token")?;
/// store.put(b"pool/wx", &sealed, PutOptions::default()).await?;
///
/// let new = old.rotate("2026", EncryptionKey::generate())?;
/// let report = reencrypt_prefix(&store, &new, b"pool/").await?;
/// assert_eq!(report.reencrypted, 1);
/// let stored = store.get(b"pool/wx").await?.unwrap().value;
/// assert_eq!(Keyring::envelope_key_id(&stored)?, "2026");
/// assert_eq!(new.decrypt_for(b"pool/wx", &stored)?, b"token");
/// assert_eq!(reencrypt_prefix(&store, &new, b"pool/").await?.reencrypted, 0);
/// # Ok(()) }
/// ```
///
/// # Errors
/// `InvalidKey` for an empty prefix; backend errors (what was re-encrypted stays so: run it
/// again). When some values cannot be opened (a key id the keyring lacks, a failed
/// authentication, an unbound value the keyring does not accept), every other value is still
/// re-encrypted, then a [`ErrorKind::Codec`] error counts them and names the first few keys.
pub async fn reencrypt_prefix<S: crate::Store + ?Sized>(
    store: &S,
    keyring: &Keyring,
    prefix: &[u8],
) -> Result<ReencryptReport> {
    use crate::{Continuation, RangeOptions};
    crate::raw::validate_prefix(prefix, false)?;
    let mut report = ReencryptReport::default();
    let mut failed: Vec<(Vec<u8>, Error)> = Vec::new();
    let mut after: Option<Vec<u8>> = None;
    loop {
        let mut opts = RangeOptions::prefix(prefix).limit(REENCRYPT_PAGE);
        if let Some(last) = &after {
            opts = opts.after(Continuation::after_key(last));
        }
        let page = store.range(opts).await?;
        for entry in &page.entries {
            report.scanned += 1;
            if let Err(e) = reencrypt_one(store, keyring, entry.clone(), &mut report).await {
                if e.kind() != ErrorKind::Codec {
                    return Err(e);
                }
                failed.push((entry.key.clone(), e));
            }
        }
        match page.entries.last() {
            Some(last) if page.more() => after = Some(last.key.clone()),
            _ => break,
        }
    }
    if failed.is_empty() {
        return Ok(report);
    }
    let first: Vec<String> = failed
        .iter()
        .take(5)
        .map(|(key, _)| crate::raw::escape_bytes(key))
        .collect();
    Err(codec_error(
        "encrypted",
        format!(
            "{} values could not be opened with the keyring; the other {} were handled",
            failed.len(),
            report.scanned - failed.len() as u64
        ),
    )
    .with_context("keys", first.join(", "))
    .with_context("first_error", failed[0].1.message())
    .with_context("reencrypted", report.reencrypted))
}

/// Re-encrypts one entry, re-reading it while other writers change it.
async fn reencrypt_one<S: crate::Store + ?Sized>(
    store: &S,
    keyring: &Keyring,
    mut entry: crate::Entry,
    report: &mut ReencryptReport,
) -> Result<()> {
    use crate::{Compare, CompareOp, Txn, TxnOp};
    for _ in 0..REENCRYPT_RACES {
        match keyring.is_current(&entry.value) {
            Err(_) => {
                report.not_encrypted += 1;
                return Ok(());
            }
            Ok(true) => {
                report.current += 1;
                return Ok(());
            }
            Ok(false) => {}
        }
        let plaintext = keyring.decrypt_for(&entry.key, &entry.value)?;
        let sealed = keyring.encrypt_for(&entry.key, &plaintext)?;
        let put = match entry.lease {
            Some(lease) => TxnOp::put_with_lease(&entry.key, sealed, lease),
            None => TxnOp::put(&entry.key, sealed),
        };
        let resp = store
            .txn(
                Txn::new()
                    .when([Compare::mod_revision(
                        &entry.key,
                        CompareOp::Equal,
                        entry.mod_revision,
                    )])
                    .and_then([put])
                    .or_else([TxnOp::get(&entry.key)]),
            )
            .await?;
        if resp.succeeded {
            report.reencrypted += 1;
            return Ok(());
        }
        report.raced += 1;
        match resp.results.into_iter().next() {
            Some(crate::OpResult::Get(Some(now))) => entry = now,
            // Deleted meanwhile: nothing left to re-encrypt.
            Some(crate::OpResult::Get(None)) => return Ok(()),
            other => {
                return Err(Error::internal(format!(
                    "re-encryption: unexpected transaction result {other:?}"
                )));
            }
        }
    }
    Err(Error::new(
        ErrorKind::ConditionFailed,
        "other writers kept changing the value while it was being re-encrypted",
    )
    .set_retryable(true)
    .with_context("key", crate::raw::escape_bytes(&entry.key)))
}
