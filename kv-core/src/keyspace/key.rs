//! The [`Key`] and [`Prefix`] traits: typed keys and typed directories of one template.

use super::codec::BuildCodec;
use super::info::{FieldInfo, TemplateInfo};
use super::key_error::{KeyError, KeyErrorReason};
use super::segment::Segment;
use super::template::Template;
use crate::CollectionKind;
use std::borrow::Cow;
use std::fmt;

/// A full key of one template, with the codec of its value.
///
/// The derive `#[derive(Key)]` generates impls; a hand-written one keeps the same rules:
/// `parse(encode(k)) == k`, and `parse(raw)` succeeds only when `encode` gives back `raw`.
/// [`Template::captures`] and [`decode_field`] do the matching, [`Template::write`] or
/// [`Segment::encode`] the writing.
///
/// ```
/// use keyplane_core::keyspace::{decode_field, FieldInfo, Key, KeyError, Template, Text};
/// use std::sync::LazyLock;
///
/// #[derive(Debug, Clone, PartialEq)]
/// struct TenantMetaKey { id: u64 }
///
/// impl Key for TenantMetaKey {
///     const TEMPLATE: &'static str = "jxt/tenants/{id}/meta";
///     type Value = Text;
///     fn template() -> &'static Template {
///         static T: LazyLock<Template> =
///             LazyLock::new(|| Template::key(TenantMetaKey::TEMPLATE, None).unwrap());
///         &T
///     }
///     fn write(&self, out: &mut String) {
///         Self::template().write(out, &[&self.id]);
///     }
///     fn parse(raw: &str) -> Result<Self, KeyError> {
///         let t = Self::template();
///         let [id] = t.captures(raw)?;
///         Ok(TenantMetaKey { id: decode_field(t, raw, 1, "id", id)? })
///     }
///     fn fields(&self) -> Vec<(&'static str, String)> {
///         vec![("id", self.id.to_string())]
///     }
///     fn field_infos() -> Vec<FieldInfo> {
///         vec![FieldInfo::of::<u64>("id")]
///     }
/// }
/// // A plain value, for the typed facade's `get` and `put` (a set key would implement
/// // `SetKey` and set `KIND`).
/// impl keyplane_core::keyspace::PlainKey for TenantMetaKey {}
///
/// let key = TenantMetaKey { id: 7 };
/// assert_eq!(key.encode(), "jxt/tenants/7/meta");
/// assert_eq!(TenantMetaKey::parse("jxt/tenants/7/meta"), Ok(key));
/// assert!(TenantMetaKey::parse("jxt/tenants/07/meta").is_err());
/// ```
pub trait Key: Sized + Clone + fmt::Debug + PartialEq + Send + Sync + 'static {
    /// The template as written (`jxt/tenants/{id}/database/{service}`).
    const TEMPLATE: &'static str;

    /// The variable or literal segment wrapped in a Redis Cluster hash tag, if any.
    const HASH_TAG: Option<&'static str> = None;

    /// Templates (as written) of keys that may live under this key as if it were a
    /// directory; the schema checker reports any other such nesting.
    const DIRECTORY_OF: &'static [&'static str] = &[];

    /// What the key holds: `None` for a plain value (read and written with `get` and `put`),
    /// or the kind of collection, whose members, field values or items `Value` encodes.
    const KIND: Option<CollectionKind> = None;

    /// The codec of the key's value, or of its collection's members; the typed store builds
    /// it for each operation ([`BuildCodec`]).
    type Value: BuildCodec;

    /// The parsed template (built once).
    fn template() -> &'static Template;

    /// Appends the key to `out`; allocates nothing beyond `out`.
    fn write(&self, out: &mut String);

    /// The key as a new string.
    fn encode(&self) -> String {
        let mut out = String::with_capacity(64);
        self.write(&mut out);
        out
    }

    /// Parses a raw key of this template, strictly.
    ///
    /// # Errors
    /// [`KeyError`] saying where and why `raw` is not a key of this template.
    fn parse(raw: &str) -> Result<Self, KeyError>;

    /// The variables as `(name, encoded segment)`, in template order (for display and
    /// `kvctl parse`).
    fn fields(&self) -> Vec<(&'static str, String)>;

    /// The variables' names and types, in template order.
    fn field_infos() -> Vec<FieldInfo>;

    /// Checks that `value` agrees with the key: a value that repeats some of the key's
    /// segments (a tenant meta's `id`, an FTP user's `username`) must repeat them exactly.
    /// The schema declares it once (`#[kv(agrees = path::to::fn)]`); the typed store checks
    /// it on every put, so a disagreeing value is never written. Every value agrees unless
    /// the schema says otherwise.
    ///
    /// ```
    /// use keyplane_core::keyspace::{Json, Key, TypedStore};
    ///
    /// #[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
    /// struct User { id: u64, name: String }
    ///
    /// fn same_id(key: &UserKey, user: &User) -> Result<(), String> {
    ///     if user.id == key.id { Ok(()) } else { Err(format!("its id is {}", user.id)) }
    /// }
    ///
    /// #[derive(Key, Debug, Clone, PartialEq)]
    /// #[kv(template = "users/{id}", value = Json<User>, agrees = same_id)]
    /// struct UserKey { id: u64 }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> keyplane_core::Result<()> {
    /// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
    /// let ada = User { id: 1, name: "ada".into() };
    /// typed.put(&UserKey { id: 1 }, &ada).await?;
    /// let err = typed.put(&UserKey { id: 2 }, &ada).await.unwrap_err();
    /// assert_eq!(err.kind(), keyplane_core::ErrorKind::InvalidValue);
    /// assert_eq!(typed.get(&UserKey { id: 2 }).await?, None); // nothing written
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// What disagrees, in words.
    fn check_value(
        &self,
        _value: &<Self::Value as super::codec::Codec>::Value,
    ) -> Result<(), String> {
        Ok(())
    }

    /// Everything the schema checker and `kvctl schema` need to know about the template.
    fn info() -> TemplateInfo {
        TemplateInfo::of_key::<Self>()
    }
}

/// A directory of keys: a template ending with the separator (`jxt/tenants/{id}/`), so that
/// `jxt/tenants/1/` never matches `jxt/tenants/10/...`.
///
/// A prefix names a directory, which may hold keys of several templates (a tenant's whole
/// directory): it can be deleted, watched raw, or parsed by a [`Keyspace`](super::Keyspace).
/// A prefix whose directory holds one key type is also a [`ListPrefix`], which typed listings
/// and watches need. `#[derive(Prefix)]` writes the impl, and the `ListPrefix` impl too when
/// given the key type (`#[kv(key = ...)]`).
///
/// ```
/// use keyplane_core::keyspace::{Key, Prefix, Text};
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "jxt/tenants/{id}/database/{service}", value = Text)]
/// struct TenantDatabaseKey { id: u64, service: u32 }
///
/// #[derive(Prefix, Debug, Clone, PartialEq)]
/// #[kv(template = "jxt/tenants/{id}/database/", key = TenantDatabaseKey)]
/// struct TenantDatabases { id: u64 }
///
/// let one = TenantDatabases { id: 1 };
/// assert_eq!(one.encode(), "jxt/tenants/1/database/");
/// assert!(one.contains(&TenantDatabaseKey { id: 1, service: 3 }.encode()));
/// assert!(!one.contains(&TenantDatabaseKey { id: 10, service: 3 }.encode()));
/// ```
pub trait Prefix: Sized + Clone + fmt::Debug + PartialEq + Send + Sync + 'static {
    /// The template as written, ending with the separator.
    const TEMPLATE: &'static str;

    /// As [`Key::HASH_TAG`]; must name the same segment as the listed key's tag.
    const HASH_TAG: Option<&'static str> = None;

    /// The parsed template (built once).
    fn template() -> &'static Template;

    /// Appends the prefix (ending with the separator) to `out`.
    fn write(&self, out: &mut String);

    /// The prefix as a new string; it always ends with the separator.
    fn encode(&self) -> String {
        let mut out = String::with_capacity(64);
        self.write(&mut out);
        out
    }

    /// Parses a raw prefix of this template, strictly.
    ///
    /// # Errors
    /// [`KeyError`] saying where and why `raw` is not a prefix of this template.
    fn parse(raw: &str) -> Result<Self, KeyError>;

    /// The variables as `(name, encoded segment)`, in template order.
    fn fields(&self) -> Vec<(&'static str, String)>;

    /// Whether the raw key lies in this directory (byte-wise under the prefix).
    fn contains(&self, raw: &str) -> bool {
        let mut prefix = String::with_capacity(64);
        self.write(&mut prefix);
        raw.len() > prefix.len() && raw.starts_with(&prefix)
    }
}

/// A [`Prefix`] whose directory holds keys of one type, [`ListPrefix::Key`]: what
/// [`TypedStore::list`](super::TypedStore::list) and
/// [`TypedStore::watch`](super::TypedStore::watch) parse and decode. `#[derive(Prefix)]` with
/// `#[kv(key = ...)]` writes it, and checks at compile time that the key's template extends
/// the prefix's.
///
/// ```
/// use keyplane_core::keyspace::{Key, ListPrefix, Prefix, Text};
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "jxt/tenants/{id}/meta", value = Text)]
/// struct TenantMetaKey { id: u64 }
///
/// // The whole directory of a tenant: several key types live in it.
/// #[derive(Prefix, Debug, Clone, PartialEq)]
/// #[kv(template = "jxt/tenants/{id}/")]
/// struct TenantDir { id: u64 }
///
/// // Listing the tenants' meta keys: one key type.
/// #[derive(Prefix, Debug, Clone, PartialEq)]
/// #[kv(template = "jxt/tenants/", key = TenantMetaKey)]
/// struct Tenants {}
///
/// assert_eq!(TenantDir { id: 7 }.encode(), "jxt/tenants/7/");
/// fn lists<P: ListPrefix>() -> &'static str { <P::Key as Key>::TEMPLATE }
/// assert_eq!(lists::<Tenants>(), "jxt/tenants/{id}/meta");
/// ```
pub trait ListPrefix: Prefix {
    /// The keys listed under the prefix.
    type Key: Key;
}

/// Decodes the raw text of variable `name` (found at segment `position` of `raw`) as a `T`,
/// turning a [`SegmentError`](super::SegmentError) into a [`KeyError`] that names the field.
///
/// # Errors
/// [`KeyError`] with [`KeyErrorReason::Field`].
pub fn decode_field<T: Segment>(
    template: &Template,
    raw: &str,
    position: usize,
    name: impl Into<Cow<'static, str>>,
    text: &str,
) -> Result<T, KeyError> {
    T::decode(text, template.separator()).map_err(|error| {
        template.error(
            raw,
            position,
            KeyErrorReason::Field {
                name: name.into(),
                error,
            },
        )
    })
}

/// A key holding a plain value: the typed facade reads and writes it with `get` and `put`.
/// Derived for `#[kv(value = ..)]` keys; a collection key implements [`SetKey`], [`MapKey`]
/// or [`ListKey`] instead, so that a plain `get` of a set key does not compile.
#[diagnostic::on_unimplemented(
    message = "`{Self}` holds a collection, not a plain value",
    label = "`get`/`put` read and write plain values",
    note = "a `#[kv(set = ..)]`, `hash = ..` or `list = ..` key is reached through `TypedStore::set_at`, `map_at` or `list_at`"
)]
pub trait PlainKey: Key {}

/// A key holding a set of `Value` members (`#[kv(set = ..)]`): reached through
/// [`TypedStore::set_at`](crate::keyspace::TypedStore::set_at).
pub trait SetKey: Key {}

/// A key holding a map whose field values `Value` encodes (`#[kv(hash = ..)]`): reached
/// through [`TypedStore::map_at`](crate::keyspace::TypedStore::map_at).
pub trait MapKey: Key {}

/// A key holding a list of `Value` items (`#[kv(list = ..)]`): reached through
/// [`TypedStore::list_at`](crate::keyspace::TypedStore::list_at).
pub trait ListKey: Key {}

/// The value type stored under keys of type `K`: the `Value` of its codec.
pub type ValueOf<K> = <<K as Key>::Value as super::codec::Codec>::Value;

// Here rather than beside `TemplateInfo`, so that the description of templates does not
// depend on the `Key` trait that uses it.
impl TemplateInfo {
    /// The description of key type `K`.
    pub fn of_key<K: Key>() -> Self {
        TemplateInfo {
            type_name: std::any::type_name::<K>(),
            template: K::template(),
            fields: K::field_infos(),
            value_type: std::any::type_name::<K::Value>(),
            encrypted: <K::Value as super::codec::Codec>::ENCRYPTED,
            value: super::ValueInfo::custom(
                <K::Value as super::codec::Codec>::FORMAT,
                None,
                check_with_codec::<K>,
            ),
            kind: K::KIND,
            directory_of: K::DIRECTORY_OF,
        }
    }
}

/// Decodes `bytes` with `K`'s codec (built without state) and checks that the value agrees
/// with `key` when `key` parses as a `K`: the value check of a derived key's
/// [`ValueInfo`](super::ValueInfo).
fn check_with_codec<K: Key>(key: &str, bytes: &[u8]) -> crate::Result<()> {
    use super::codec::{BuildCodec, Codec, CodecContext};
    let value = K::Value::build(&CodecContext::new())?.decode(bytes)?;
    let Ok(typed) = K::parse(key) else {
        return Ok(());
    };
    typed.check_value(&value).map_err(|why| {
        crate::Error::new(
            crate::ErrorKind::InvalidValue,
            format!("the value disagrees with its key: {why}"),
        )
    })
}
