//! `Encrypted<C>`: AES-256-GCM around another codec, with a key id in every value so that
//! keys can rotate. The envelope format is documented on [`Encrypted`].

use super::codec::{BuildCodec, Codec, CodecContext, codec_error};
use crate::error::{Error, ErrorKind, Result};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use rand::RngCore;
use std::fmt;
use std::sync::Arc;

/// The envelope format version written by this crate.
pub const ENVELOPE_VERSION: u8 = 1;

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
/// current with [`Keyring::rotate`], keep the old one until every value has been re-written,
/// then build the keyring without it. `Debug` shows the key ids only.
///
/// ```
/// use keyplane_core::keyspace::{EncryptionKey, Keyring};
/// let old = Keyring::new("2025-01", EncryptionKey::generate())?;
/// let sealed = old.encrypt(b"token")?;
/// let new = old.clone().rotate("2026-01", EncryptionKey::generate())?;
/// assert_eq!(new.current_id(), "2026-01");
/// assert_eq!(Keyring::envelope_key_id(&sealed)?, "2025-01");
/// assert_eq!(new.decrypt(&sealed)?, b"token");
/// # Ok::<(), keyplane_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Keyring {
    keys: Vec<(String, Aes256Gcm)>,
    current: usize,
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

    /// Seals `plaintext` with the current key and a fresh random nonce.
    ///
    /// # Errors
    /// [`ErrorKind::Codec`] if the cipher refuses the input (longer than AES-GCM allows).
    pub fn encrypt(&self, plaintext: &[u8]) -> Result<Vec<u8>> {
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
                    aad: &out[..header_len],
                },
            )
            .map_err(|_| codec_error("encrypted", "AES-256-GCM refused to encrypt the value"))?;
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Opens an envelope with the key it names.
    ///
    /// # Errors
    /// [`ErrorKind::Codec`] for a truncated envelope, an unknown format version, a key id
    /// this keyring does not hold, or a value that fails authentication (tampered, or sealed
    /// by another key of the same id).
    pub fn decrypt(&self, envelope: &[u8]) -> Result<Vec<u8>> {
        let parsed = parse_envelope(envelope)?;
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
        cipher
            .decrypt(
                Nonce::from_slice(parsed.nonce),
                Payload {
                    msg: parsed.sealed,
                    aad: parsed.header,
                },
            )
            .map_err(|_| {
                codec_error(
                    "encrypted",
                    "the value failed authentication: tampered or sealed with another key",
                )
                .with_context("key_id", String::from_utf8_lossy(parsed.key_id))
            })
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
    if version != ENVELOPE_VERSION {
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
/// [`TypedStore::with_codec_state`](super::TypedStore::with_codec_state) ([`BuildCodec`]);
/// a typed store without one refuses encrypted keys with `Config`, writing nothing. Use one
/// typed store per keyring (clones share the store). Built by hand with [`Encrypted::new`],
/// it is a plain [`Codec`].
///
/// The envelope of an encrypted value is
///
/// | bytes | content |
/// |---|---|
/// | 1 | format version, [`ENVELOPE_VERSION`] |
/// | 1 | length `n` of the key id (1–255) |
/// | `n` | the key id, printable ASCII |
/// | 12 | a random 96-bit nonce |
/// | rest | the AES-256-GCM ciphertext of the inner codec's bytes, then the 16-byte tag |
///
/// The header (version, length and key id) is authenticated as associated data: a value whose
/// key id was rewritten fails to decrypt like any other tampered value.
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

    fn encode(&self, value: &C::Value) -> Result<Vec<u8>> {
        self.keyring.encrypt(&self.inner.encode(value)?)
    }

    fn decode(&self, bytes: &[u8]) -> Result<C::Value> {
        self.inner.decode(&self.keyring.decrypt(bytes)?)
    }
}
