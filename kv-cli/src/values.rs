//! Value checks: every template's value codec, looked up by template, so that `kvctl put`
//! refuses a value its key's readers could not decode.

use keyplane_core::CollectionKind;
use keyplane_core::keyspace::{BuildCodec, Codec, CodecContext, Key};
use keyplane_schemas::{balancer, cronix, nxc, registry, tenant};

/// Decodes `bytes` with the value codec of `K` (built without state: `kvctl` holds no
/// keyring), keeping only the verdict.
fn decodes<K: Key>(bytes: &[u8]) -> keyplane_core::Result<()> {
    K::Value::build(&CodecContext::new())?
        .decode(bytes)
        .map(drop)
}

type Check = fn(&[u8]) -> keyplane_core::Result<()>;

fn entry<K: Key>() -> (&'static str, Check) {
    (K::TEMPLATE, decodes::<K>)
}

/// Refuses a plain value for a key whose value is a collection (a Redis SET, HASH or LIST,
/// emulated on ordered stores): only its schema's operations write it.
fn collection(_: &[u8]) -> keyplane_core::Result<()> {
    Err(keyplane_core::Error::new(
        keyplane_core::ErrorKind::InvalidValue,
        "the key holds a collection (SET, HASH or LIST): write it through its schema's operations",
    ))
}

/// Refuses a plain value for an encrypted key: `kvctl` holds no keyring.
fn encrypted(_: &[u8]) -> keyplane_core::Result<()> {
    Err(keyplane_core::Error::new(
        keyplane_core::ErrorKind::InvalidValue,
        "the key's value is encrypted: write it through its schema's operations with a keyring",
    ))
}

/// The value check of every template the catalog holds.
fn table() -> Vec<(&'static str, Check)> {
    vec![
        entry::<tenant::TenantMetaKey>(),
        entry::<tenant::PrimaryDomainKey>(),
        entry::<tenant::DomainAliasesKey>(),
        entry::<tenant::InternalDomainKey>(),
        entry::<tenant::DatabaseConfigKey>(),
        entry::<tenant::FtpConfigKey>(),
        entry::<tenant::StorageConfigKey>(),
        entry::<tenant::CodeIndexKey>(),
        entry::<tenant::NameIndexKey>(),
        entry::<tenant::FtpUserIndexKey>(),
        entry::<tenant::HostIndexKey>(),
        entry::<tenant::ResolverConfigKey>(),
        entry::<tenant::StorageDirectoryConfigKey>(),
        entry::<tenant::PlatformConfigKey>(),
        entry::<tenant::HealthSentinelKey>(),
        entry::<registry::GroupInfoKey>(),
        entry::<registry::ServiceInfoKey>(),
        entry::<registry::InstanceDataKey>(),
        entry::<registry::InstanceStatusKey>(),
        entry::<registry::InstanceConfigKey>(),
        entry::<cronix::NodeKey>(),
        entry::<cronix::ProcKey>(),
        entry::<cronix::JobKey>(),
        entry::<cronix::OnceKey>(),
        entry::<cronix::LockKey>(),
        entry::<cronix::SystemSwitchKey>(),
        entry::<cronix::SystemInfoKey>(),
        (nxc::ProfileMapKey::TEMPLATE, collection),
        entry::<nxc::DefaultProfileKey>(),
        (nxc::InstanceKey::TEMPLATE, collection),
        (nxc::PoolKey::TEMPLATE, encrypted),
        (balancer::KeyObjectKey::TEMPLATE, collection),
        (balancer::ActiveKeysKey::TEMPLATE, collection),
        (balancer::KeyGroupsKey::TEMPLATE, collection),
    ]
}

/// The collection kind a schema declares for a template (`#[kv(set = ..)]`, `hash`, `list`),
/// `None` for a plain value.
pub(crate) fn collection_kind(template: &str) -> Option<CollectionKind> {
    keyplane_schemas::all()
        .into_iter()
        .flat_map(|schema| schema.templates())
        .find(|info| info.template.source() == template)
        .and_then(|info| info.kind)
}

/// Checks `value` against the value type of `template`.
///
/// # Errors
/// The codec's error when the value does not decode; `InvalidValue` when no check is
/// known for the template (nothing is written unchecked).
pub(crate) fn check(template: &str, value: &[u8]) -> keyplane_core::Result<()> {
    match table().into_iter().find(|(t, _)| *t == template) {
        Some((_, check)) => check(value),
        None => Err(keyplane_core::Error::new(
            keyplane_core::ErrorKind::InvalidValue,
            format!("no value check is known for template {template}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_template_has_a_check() {
        let table = table();
        for schema in keyplane_schemas::all() {
            for info in schema.templates() {
                let source = info.template.source();
                assert!(
                    table.iter().any(|(t, _)| *t == source),
                    "{} has no value check",
                    source
                );
            }
        }
    }

    #[test]
    fn collection_templates_refuse_plain_values() {
        for schema in keyplane_schemas::all() {
            for info in schema.templates() {
                let source = info.template.source();
                if collection_kind(source).is_some() {
                    assert!(check(source, b"1").is_err(), "{source}");
                }
            }
        }
    }

    #[test]
    fn checks_decode_with_the_key_codec() {
        assert!(check("jxt/tenants/{id}/domain/aliases", br#"["a.example.com"]"#).is_ok());
        assert!(check("jxt/tenants/{id}/domain/aliases", br#"{"a":1}"#).is_err());
        assert!(check("jxt/tenants/{id}/meta", b"not json").is_err());
    }
}
