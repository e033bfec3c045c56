//! The [`Codec`] trait: how a key's value is turned into bytes and back; [`BuildCodec`] and
//! [`CodecContext`]: how the typed store builds a key's codec, state included.

use crate::{Error, ErrorKind, Result};
use std::any::{Any, TypeId, type_name};
use std::fmt;
use std::sync::Arc;

/// Encodes and decodes the values stored under a key.
///
/// A key type names its codec ([`Key::Value`](crate::keyspace::Key::Value)); the typed facade
/// encodes every value before it writes anything, so a value that fails to encode writes
/// nothing. The facade builds the codec itself ([`BuildCodec`]): stateless codecs
/// ([`Json`](crate::keyspace::Json), [`Text`](crate::keyspace::Text), [`Bytes`](crate::keyspace::Bytes),
/// [`Empty`](crate::keyspace::Empty)) implement `Default`, and codecs with state (`Encrypted`, feature
/// `encryption`) take it from the typed store's [`CodecContext`].
///
/// Decoding is strict: bytes that are not a value of the codec's format are an error of kind
/// [`ErrorKind::Codec`], never a default value.
///
/// ```
/// use keyplane_core::keyspace::{Codec, Text};
/// let bytes = Text.encode(&"on".to_string())?;
/// assert_eq!(Text.decode(&bytes)?, "on");
/// # Ok::<(), keyplane_core::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a value codec",
    label = "`value = ..`, `hash = ..`, `set = ..` and `list = ..` name a codec, not a value type",
    note = "wrap the type in a codec: `Json<{Self}>` (serde), `Text` for a `String`, `Bytes` for raw bytes, `SegmentCodec<T>` for a segment type such as `u64`, `Empty` for no value"
)]
pub trait Codec: Send + Sync + 'static {
    /// The value type.
    type Value: Send + Sync + 'static;

    /// Whether the codec seals what it stores (an `Encrypted` codec, feature `encryption`):
    /// tools that show values (`kvctl`, its UI) learn from the schema
    /// ([`TemplateInfo::encrypted`](crate::keyspace::TemplateInfo::encrypted)) which values need a
    /// keyring. `false` unless a codec says otherwise.
    const ENCRYPTED: bool = false;

    /// How the stored bytes read, for tools that show and check values without the codec's
    /// type ([`ValueInfo`](crate::keyspace::ValueInfo)): [`Bytes`](crate::keyspace::ValueFormat::Bytes) unless a
    /// codec says otherwise.
    const FORMAT: crate::keyspace::ValueFormat = crate::keyspace::ValueFormat::Bytes;

    /// Encodes a value into the bytes stored.
    ///
    /// # Errors
    /// [`ErrorKind::Codec`] when the value cannot be encoded.
    fn encode(&self, value: &Self::Value) -> Result<Vec<u8>>;

    /// Decodes stored bytes into a value.
    ///
    /// # Errors
    /// [`ErrorKind::Codec`] when the bytes are not a value.
    fn decode(&self, bytes: &[u8]) -> Result<Self::Value>;

    /// Encodes a value to be stored at `key`. The typed store always calls this; a codec
    /// whose bytes depend on where they are stored (`Encrypted` binds them to the key)
    /// overrides it, every other codec keeps the default, [`encode`](Self::encode).
    ///
    /// # Errors
    /// As [`encode`](Self::encode).
    fn encode_for(&self, key: &[u8], value: &Self::Value) -> Result<Vec<u8>> {
        let _ = key;
        self.encode(value)
    }

    /// Decodes bytes read at `key` (see [`encode_for`](Self::encode_for)).
    ///
    /// # Errors
    /// As [`decode`](Self::decode).
    fn decode_for(&self, key: &[u8], bytes: &[u8]) -> Result<Self::Value> {
        let _ = key;
        self.decode(bytes)
    }
}

/// A codec the typed store can build for an operation: every key's codec
/// ([`Key::Value`](crate::keyspace::Key::Value)) is one.
///
/// Every `Default` codec is built with `Default` and needs nothing more. A codec with state
/// implements `build` and takes its state from the [`CodecContext`] of the typed store (set
/// with [`TypedStore::with_codec_state`](crate::keyspace::TypedStore::with_codec_state)); `Encrypted`
/// (feature `encryption`) takes its `Keyring` that way.
///
/// ```
/// use keyplane_core::keyspace::{BuildCodec, Codec, CodecContext, Key, TypedStore};
/// use std::sync::Arc;
///
/// /// A value prefixed with the namespace this deployment writes under.
/// struct Namespaced { namespace: Arc<Namespace> }
/// struct Namespace(String);
///
/// impl Codec for Namespaced {
///     type Value = String;
///     fn encode(&self, value: &String) -> keyplane_core::Result<Vec<u8>> {
///         Ok(format!("{}:{value}", self.namespace.0).into_bytes())
///     }
///     fn decode(&self, bytes: &[u8]) -> keyplane_core::Result<String> {
///         let text = String::from_utf8_lossy(bytes);
///         let prefix = format!("{}:", self.namespace.0);
///         text.strip_prefix(&prefix).map(str::to_string).ok_or_else(|| {
///             let kind = keyplane_core::ErrorKind::Codec;
///             keyplane_core::Error::new(kind, "another namespace's value")
///         })
///     }
/// }
///
/// impl BuildCodec for Namespaced {
///     fn build(context: &CodecContext) -> keyplane_core::Result<Self> {
///         Ok(Namespaced { namespace: context.require::<Namespace>("namespaced")? })
///     }
/// }
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "cfg/{name}", value = Namespaced)]
/// struct CfgKey { name: u64 }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let store = Arc::new(keyplane_mem::MemStore::new());
/// let typed = TypedStore::new(store.clone())
///     .with_codec_state(Arc::new(Namespace("blue".into())));
/// typed.put(&CfgKey { name: 1 }, &"on".to_string()).await?;
/// assert_eq!(typed.store().get(b"cfg/1").await?.unwrap().value, b"blue:on");
///
/// // A typed store without the state refuses the key, and writes nothing.
/// let bare = TypedStore::new(store);
/// let err = bare.put(&CfgKey { name: 2 }, &"off".to_string()).await.unwrap_err();
/// assert_eq!(err.kind(), keyplane_core::ErrorKind::Config);
/// # Ok(()) }
/// ```
pub trait BuildCodec: Codec + Sized {
    /// The codec, with its state taken from `context`.
    ///
    /// # Errors
    /// [`ErrorKind::Config`] when `context` lacks the state the codec needs
    /// ([`CodecContext::require`]).
    fn build(context: &CodecContext) -> Result<Self>;
}

impl<C: Codec + Default> BuildCodec for C {
    fn build(_: &CodecContext) -> Result<Self> {
        Ok(C::default())
    }
}

/// The state a typed store gives the codecs it builds ([`BuildCodec`]): at most one shared
/// value of each type, such as the `Keyring` of `Encrypted` (feature `encryption`).
///
/// Cheap to clone: the values are shared. `Debug` names the types held, never their contents.
///
/// ```
/// use keyplane_core::keyspace::CodecContext;
/// use std::sync::Arc;
/// struct Region(&'static str);
/// let context = CodecContext::new().with(Arc::new(Region("eu")));
/// assert_eq!(context.get::<Region>().unwrap().0, "eu");
/// assert!(context.get::<String>().is_none());
/// assert_eq!(context.require::<String>("my-codec").unwrap_err().kind(),
///            keyplane_core::ErrorKind::Config);
/// ```
#[derive(Clone, Default)]
pub struct CodecContext {
    entries: Vec<State>,
}

#[derive(Clone)]
struct State {
    id: TypeId,
    name: &'static str,
    value: Arc<dyn Any + Send + Sync>,
}

impl CodecContext {
    /// An empty context: only stateless codecs can be built from it.
    pub fn new() -> Self {
        CodecContext::default()
    }

    /// The context with `state` added, replacing any earlier value of the same type.
    pub fn with<T: Send + Sync + 'static>(mut self, state: Arc<T>) -> Self {
        let id = TypeId::of::<T>();
        self.entries.retain(|entry| entry.id != id);
        self.entries.push(State {
            id,
            name: type_name::<T>(),
            value: state,
        });
        self
    }

    /// The value of type `T`, if the context holds one.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let id = TypeId::of::<T>();
        let entry = self.entries.iter().find(|entry| entry.id == id)?;
        Arc::clone(&entry.value).downcast::<T>().ok()
    }

    /// The value of type `T` that `codec` needs.
    ///
    /// # Errors
    /// [`ErrorKind::Config`] naming the codec and the missing type when the context holds
    /// no `T`.
    pub fn require<T: Send + Sync + 'static>(&self, codec: &'static str) -> Result<Arc<T>> {
        self.get::<T>().ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                "the codec needs state the typed store was not given \
                 (TypedStore::with_codec_state)",
            )
            .with_context("codec", codec)
            .with_context("state", type_name::<T>())
        })
    }
}

impl fmt::Debug for CodecContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.entries.iter().map(|entry| entry.name))
            .finish()
    }
}

/// An [`ErrorKind::Codec`] error naming the codec that raised it.
pub(crate) fn codec_error(codec: &'static str, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Codec, message).with_context("codec", codec)
}
