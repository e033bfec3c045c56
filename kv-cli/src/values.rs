//! Value checks: every template's value codec, looked up by template, so that `kvctl put`
//! refuses a value its key's readers could not decode.

use keyplane_core::CollectionKind;
use keyplane_core::keyspace::{BuildCodec, Codec, CodecContext, Key};
use keyplane_schemas::{balancer, cronix, nxc, registry, tenant};

/// Decodes `bytes` with the value codec of `K` (built without state: `kvctl` holds no
/// keyring) and checks that the value agrees with `key` ([`Key::check_value`]), keeping
/// only the verdict.
fn decodes<K: Key>(key: &str, bytes: &[u8]) -> keyplane_core::Result<()> {
    let value = K::Value::build(&CodecContext::new())?.decode(bytes)?;
    let Ok(typed) = K::parse(key) else {
        return Ok(());
    };
    typed.check_value(&value).map_err(|why| {
        keyplane_core::Error::new(
            keyplane_core::ErrorKind::InvalidValue,
            format!("the value disagrees with its key: {why}"),
        )
    })
}

type Check = fn(&str, &[u8]) -> keyplane_core::Result<()>;

fn entry<K: Key>() -> (&'static str, Check) {
    (K::TEMPLATE, decodes::<K>)
}

/// Refuses a plain value for a key whose value is a collection (a Redis SET, HASH or LIST,
/// emulated on ordered stores): only its schema's operations write it.
fn collection(_: &str, _: &[u8]) -> keyplane_core::Result<()> {
    Err(keyplane_core::Error::new(
        keyplane_core::ErrorKind::InvalidValue,
        "the key holds a collection (SET, HASH or LIST): write it through its schema's operations",
    ))
}

/// Refuses a plain value for an encrypted key: `kvctl` holds no keyring.
fn encrypted(_: &str, _: &[u8]) -> keyplane_core::Result<()> {
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
    keyplane_schemas::every()
        .into_iter()
        .flat_map(|schema| schema.templates())
        .find(|info| info.template.source() == template)
        .and_then(|info| info.kind)
}

/// Checks `value` against the value type of `template`, and that it agrees with `key`.
///
/// # Errors
/// The codec's error when the value does not decode; `InvalidValue` when it disagrees with
/// its key, or when no check is known for the template (nothing is written unchecked).
pub(crate) fn check(template: &str, key: &str, value: &[u8]) -> keyplane_core::Result<()> {
    match table().into_iter().find(|(t, _)| *t == template) {
        Some((_, check)) => check(key, value),
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
                    assert!(check(source, "", b"1").is_err(), "{source}");
                }
            }
        }
    }

    #[test]
    fn checks_decode_with_the_key_codec() {
        let aliases = "jxt/tenants/1/domain/aliases";
        let template = "jxt/tenants/{id}/domain/aliases";
        assert!(check(template, aliases, br#"["a.example.com"]"#).is_ok());
        assert!(check(template, aliases, br#"{"a":1}"#).is_err());
        assert!(check("jxt/tenants/{id}/meta", "jxt/tenants/1/meta", b"not json").is_err());
        // Decodes, but says tenant 2 under tenant 1's key.
        let meta = br#"{"id":2,"code":"c","name":"n","status":"active","billingPlan":"x"}"#;
        let err = check("jxt/tenants/{id}/meta", "jxt/tenants/1/meta", meta).unwrap_err();
        assert_eq!(err.kind(), keyplane_core::ErrorKind::InvalidValue, "{err}");
        assert!(check("jxt/tenants/{id}/meta", "jxt/tenants/2/meta", meta).is_ok());
    }
}
