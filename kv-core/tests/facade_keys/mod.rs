//! Hand-written key, prefix and keyspace types for the facade tests (no derive), and a store
//! with a random key root per test.

#![allow(dead_code)]

use keyplane_core::keyspace::{
    FieldInfo, Json, Key, KeyError, Keyspace, ListPrefix, NoMatch, Part, Prefix, Template,
    TemplateInfo, Text, TypedStore, decode_field,
};
use keyplane_mem::MemStore;
use std::sync::{Arc, LazyLock};

keyplane_core::text_segment!(
    /// A lowercase name such as `mysql-main` or a random test root.
    pub Name, charset = "[a-z0-9-]", max_len = 63, policy = Reject
);

pub fn name(s: &str) -> Name {
    Name::new(s).unwrap()
}

/// A fresh MemStore behind the facade, and a random root so tests never share keys.
pub fn store() -> (TypedStore, Name) {
    let root = format!("t{:016x}", rand::random::<u64>());
    (TypedStore::new(Arc::new(MemStore::new())), name(&root))
}

/// The segment index of variable `var` in `t` (for error positions).
pub fn position(t: &Template, var: &str) -> usize {
    t.segments()
        .iter()
        .position(|s| {
            s.parts()
                .iter()
                .any(|p| matches!(p, Part::Var(n) if n == var))
        })
        .unwrap_or(0)
}

/// Implements `Key` by hand for a struct whose fields are all variables, in template order.
macro_rules! hand_key {
    ($ty:ident, $tpl:literal, $codec:ty, [$($field:ident : $fty:ty),+]) => {
        hand_key!($ty, $tpl, $codec, PlainKey, [$($field : $fty),+]);
    };
    ($ty:ident, $tpl:literal, $codec:ty, $kind:ident, [$($field:ident : $fty:ty),+]) => {
        #[derive(Debug, Clone, PartialEq)]
        pub struct $ty {
            $(pub $field: $fty),+
        }

        impl keyplane_core::keyspace::$kind for $ty {}

        impl Key for $ty {
            const TEMPLATE: &'static str = $tpl;
            type Value = $codec;

            fn template() -> &'static Template {
                static T: LazyLock<Template> =
                    LazyLock::new(|| Template::key($ty::TEMPLATE, None).unwrap());
                &T
            }

            fn write(&self, out: &mut String) {
                Self::template().write(out, &[$(&self.$field),+]);
            }

            fn parse(raw: &str) -> Result<Self, KeyError> {
                let t = Self::template();
                let [$($field),+] = t.captures(raw)?;
                Ok($ty {
                    $($field: decode_field(
                        t, raw, position(t, stringify!($field)), stringify!($field), $field,
                    )?),+
                })
            }

            fn fields(&self) -> Vec<(&'static str, String)> {
                use keyplane_core::keyspace::Segment;
                let sep = Self::template().separator();
                vec![$((stringify!($field), self.$field.to_segment_string(sep))),+]
            }

            fn field_infos() -> Vec<FieldInfo> {
                vec![$(FieldInfo::of::<$fty>(stringify!($field))),+]
            }
        }
    };
}

/// Implements `Prefix` by hand, as `hand_key!`.
macro_rules! hand_prefix {
    ($ty:ident, $tpl:literal, $key:ty, [$($field:ident : $fty:ty),+]) => {
        #[derive(Debug, Clone, PartialEq)]
        pub struct $ty {
            $(pub $field: $fty),+
        }

        impl ListPrefix for $ty {
            type Key = $key;
        }

        impl Prefix for $ty {
            const TEMPLATE: &'static str = $tpl;

            fn template() -> &'static Template {
                static T: LazyLock<Template> =
                    LazyLock::new(|| Template::prefix($ty::TEMPLATE, None).unwrap());
                &T
            }

            fn write(&self, out: &mut String) {
                Self::template().write(out, &[$(&self.$field),+]);
            }

            fn parse(raw: &str) -> Result<Self, KeyError> {
                let t = Self::template();
                let [$($field),+] = t.captures(raw)?;
                Ok($ty {
                    $($field: decode_field(
                        t, raw, position(t, stringify!($field)), stringify!($field), $field,
                    )?),+
                })
            }

            fn fields(&self) -> Vec<(&'static str, String)> {
                use keyplane_core::keyspace::Segment;
                let sep = Self::template().separator();
                vec![$((stringify!($field), self.$field.to_segment_string(sep))),+]
            }
        }
    };
}

/// The JSON value of a tenant's database entry (camelCase, as the seed's values).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DbConfig {
    pub host: String,
    pub max_connections: u32,
}

pub fn db(host: &str) -> DbConfig {
    DbConfig {
        host: host.into(),
        max_connections: 10,
    }
}

hand_key!(TenantMetaKey, "{root}/tenants/{id}/meta", Text, [root: Name, id: u64]);
hand_key!(
    TenantDbKey,
    "{root}/tenants/{id}/database/{service}",
    Json<DbConfig>,
    [root: Name, id: u64, service: Name]
);
hand_prefix!(TenantDbDir, "{root}/tenants/{id}/database/", TenantDbKey, [root: Name, id: u64]);
hand_key!(
    SecretKey,
    "{root}/secrets/{service}",
    keyplane_core::keyspace::Encrypted<Json<DbConfig>>,
    [root: Name, service: Name]
);
hand_prefix!(TenantDir, "{root}/tenants/{id}/", TenantMetaKey, [root: Name, id: u64]);

hand_key!(ProfileSetKey, "{root}:map:{realm}:{provider}", Text, SetKey, [root: Name, realm: Name, provider: Name]);
hand_key!(InstanceMapKey, "{root}:inst:{realm}:{profile}", Text, MapKey, [root: Name, realm: Name, profile: Name]);
hand_key!(ActiveListKey, "{root}:group:{group}:active", Text, ListKey, [root: Name, group: u64]);

/// The tenant keys as one keyspace. Its templates start with a variable root, so a keyspace
/// watch covers the whole store; the tests filter by root.
#[derive(Debug, Clone, PartialEq)]
pub enum TenantSpace {
    Meta(TenantMetaKey),
    Db(TenantDbKey),
}

impl Keyspace for TenantSpace {
    fn parse(raw: &str) -> Result<Self, NoMatch> {
        let meta = match TenantMetaKey::parse(raw) {
            Ok(k) => return Ok(TenantSpace::Meta(k)),
            Err(e) => e,
        };
        let db = match TenantDbKey::parse(raw) {
            Ok(k) => return Ok(TenantSpace::Db(k)),
            Err(e) => e,
        };
        Err(NoMatch::from_attempts(raw, [meta, db]))
    }

    fn write(&self, out: &mut String) {
        match self {
            TenantSpace::Meta(k) => k.write(out),
            TenantSpace::Db(k) => k.write(out),
        }
    }

    fn template_source(&self) -> &'static str {
        match self {
            TenantSpace::Meta(_) => TenantMetaKey::TEMPLATE,
            TenantSpace::Db(_) => TenantDbKey::TEMPLATE,
        }
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        match self {
            TenantSpace::Meta(k) => k.fields(),
            TenantSpace::Db(k) => k.fields(),
        }
    }

    fn templates() -> Vec<TemplateInfo> {
        vec![TenantMetaKey::info(), TenantDbKey::info()]
    }
}
