#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod attrs;
mod codegen;
mod codegen_parse;
mod key;
mod keyspace;
mod prefix;
mod strategy;
mod template;
mod values;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

fn expand(
    input: TokenStream,
    derive: fn(&DeriveInput) -> syn::Result<proc_macro2::TokenStream>,
) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `keyplane_core::keyspace::Key` for a struct whose named fields are the variables of its
/// template.
///
/// Attributes (`#[kv(...)]`):
/// - `template = "jxt/tenants/{id}/database/{service}"` (required): the key layout;
/// - `value = Json<DatabaseConfig>`: the value codec of a key holding a plain value (it
///   implements `PlainKey`, which the typed facade's `get` and `put` ask for);
/// - or `set = Codec`, `hash = Codec`, `list = Codec` instead: a key holding a set (members
///   encoded by the codec), a hash (field values) or a list (items); it implements `SetKey`,
///   `MapKey` or `ListKey`, reached through `set_at`, `map_at` and `list_at`, and a plain
///   `get` of it does not compile. `Key::KIND` and the schema's `TemplateInfo::kind` say
///   which;
/// - `hash_tag = "realm"`: the variable (or literal segment) wrapped in a Redis Cluster hash
///   tag, so that keys sharing it map to one slot;
/// - `directory_of(OtherKey, ...)`: key types allowed to live under this key as if it were a
///   directory (the schema checker reports any other nesting);
/// - `agrees = path::to::fn`: `fn(&Key, &Value) -> Result<(), String>`, the check that a
///   value repeats the key's segments it holds (`Key::check_value`);
/// - `read_only`: the template of an old layout, read, listed, watched and migrated but never
///   written: the typed store refuses every write to its keys with `ErrorKind::ReadOnly`. Only
///   read-only templates may have empty segments, as keys written with a doubled separator do
///   (`jxt//tenants/{id}/meta`); they take no hash tag;
/// - `no_strategy`: no generated `KeyStrategy` impl.
///
/// The generated `write` pushes literals and encodes each field into the caller's buffer;
/// `parse` splits by the template, compares literals exactly, checks the depth and decodes
/// each variable strictly. Each field's type implements `Segment`.
///
/// ```
/// use keyplane_core::keyspace::{Json, Key, KeyErrorReason};
///
/// keyplane_core::text_segment!(pub Service, charset = "[a-z0-9-]", max_len = 63, policy = Reject);
///
/// #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// struct DatabaseConfig { host: String }
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "jxt/tenants/{id}/database/{service}", value = Json<DatabaseConfig>)]
/// struct TenantDatabaseKey { id: u64, service: Service }
///
/// let key = TenantDatabaseKey { id: 7, service: Service::new("mysql")? };
/// let mut buf = String::new();
/// key.write(&mut buf);
/// assert_eq!(buf, "jxt/tenants/7/database/mysql");
/// assert_eq!(TenantDatabaseKey::parse(&buf), Ok(key));
///
/// let err = TenantDatabaseKey::parse("jxt/tenants/07/database/mysql").unwrap_err();
/// assert!(matches!(err.reason(), KeyErrorReason::Field { name, .. } if name == "id"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A template that does not fit the struct does not compile:
///
/// ```compile_fail
/// use keyplane_core::keyspace::{Key, Text};
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "jxt/tenants/{id}/database/{service}", value = Text)]
/// struct TenantDatabaseKey { id: u64 } // no field `service`
/// ```
#[proc_macro_derive(Key, attributes(kv))]
pub fn derive_key(input: TokenStream) -> TokenStream {
    expand(input, key::derive)
}

/// Derives `keyplane_core::keyspace::Prefix` for a struct whose named fields are the variables of a
/// directory template, which ends with its separator (`jxt/tenants/{id}/`).
///
/// Attributes (`#[kv(...)]`): `template = "..."` and `key = KeyType` (the keys listed under
/// the prefix; its template must start with this one) are required; `hash_tag` as for keys,
/// naming the same segment as the key's; `read_only` and `no_strategy` as for keys.
///
/// ```
/// use keyplane_core::keyspace::{Key, Prefix, Text};
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "jxt/tenants/{id}/meta", value = Text)]
/// struct TenantMetaKey { id: u64 }
///
/// #[derive(Prefix, Debug, Clone, PartialEq)]
/// #[kv(template = "jxt/tenants/{id}/", key = TenantMetaKey)]
/// struct TenantDir { id: u64 }
///
/// let dir = TenantDir { id: 1 };
/// assert_eq!(dir.encode(), "jxt/tenants/1/");
/// assert!(dir.contains(&TenantMetaKey { id: 1 }.encode()));
/// assert!(!dir.contains(&TenantMetaKey { id: 10 }.encode()));
/// ```
#[proc_macro_derive(Prefix, attributes(kv))]
pub fn derive_prefix(input: TokenStream) -> TokenStream {
    expand(input, prefix::derive)
}

/// Derives `keyplane_core::keyspace::Keyspace` for an enum whose variants each wrap one key type,
/// and `From<KeyType>` for each variant.
///
/// Attributes (`#[kv(...)]`), both optional:
/// - `naming = "[a-z0-9_-]"`: the character class every literal of the schema follows;
/// - `allow_dir(Parent, Child)`: keys of variant `Child` may live under keys of `Parent`
///   (repeatable);
/// - `no_strategy`: no generated `KeyspaceStrategy` impl;
/// - `value_enum = Name`: the schema's values as a type, as redb's `TableDefinition` carries
///   its value type. Generates `enum Name` (same visibility as the keyspace; `Debug`, `Clone`,
///   `PartialEq`) with one variant per keyspace variant, of the same name, holding that key's
///   value type (`ValueOf<Key>`) and repeating the variant's doc comment, and implements
///   `KeyspaceValues` (`decode_value(bytes, context)`) with each key's codec. A variant marked
///   `#[kv(raw)]` holds the stored bytes (`Vec<u8>`) instead: required for a collection key,
///   whose codec encodes members, not a plain value.
///
/// `parse` skips templates whose literal root differs, tries the others, and when none
/// matches reports the template that came closest and why it failed.
///
/// ```
/// use keyplane_core::keyspace::{Key, Keyspace, Text, check_keyspace};
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "nxc:map:{realm}:{provider}", value = Text, hash_tag = "realm")]
/// struct MapKey { realm: u32, provider: u32 }
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "nxc:pool:{realm}:{provider}", value = Text, hash_tag = "realm")]
/// struct PoolKey { realm: u32, provider: u32 }
///
/// #[derive(Keyspace, Debug, Clone, PartialEq)]
/// #[kv(naming = "[a-z]")]
/// enum Nxc {
///     Map(MapKey),
///     Pool(PoolKey),
/// }
///
/// assert_eq!(Nxc::parse("nxc:pool:{1}:2"), Ok(Nxc::Pool(PoolKey { realm: 1, provider: 2 })));
/// let err = Nxc::parse("nxc:pool:1:2").unwrap_err();
/// assert_eq!(err.closest().unwrap().template(), "nxc:pool:{realm}:{provider}");
/// assert!(check_keyspace::<Nxc>().is_empty());
/// ```
#[proc_macro_derive(Keyspace, attributes(kv))]
pub fn derive_keyspace(input: TokenStream) -> TokenStream {
    expand(input, keyspace::derive)
}
