//! Value checks, from the schema: each template says what its value is
//! ([`TemplateInfo::value`](keyplane::keyspace::TemplateInfo)), so that `kvctl put`
//! refuses a value its key's readers could not decode, and `lint` reports one already stored.

use crate::catalog;
use keyplane::keyspace::ParsedKey;
use keyplane::{CollectionKind, Error, ErrorKind};

/// The collection kind the schema declares for the key's template (`#[kv(set = ..)]`,
/// `hash`, `list`), `None` for a plain value.
pub(crate) fn collection_kind(parsed: &ParsedKey) -> Option<CollectionKind> {
    catalog::info_of(parsed).and_then(|info| info.kind)
}

/// Whether values of the key's template are sealed (an `Encrypted` codec), as its schema
/// says.
pub(crate) fn is_encrypted(parsed: &ParsedKey) -> bool {
    catalog::info_of(parsed).is_some_and(|info| info.encrypted)
}

/// Checks `value` against the value of the key's template, and that it agrees with `key`.
///
/// # Errors
/// The codec's error when the value does not decode; `InvalidValue` when it disagrees with
/// its key or the template's JSON Schema, when the key holds a collection or an encrypted
/// value (`kvctl` writes neither as a plain value), or when the template is unknown
/// (nothing is written unchecked).
pub(crate) fn check(parsed: &ParsedKey, key: &str, value: &[u8]) -> keyplane::Result<()> {
    let Some(info) = catalog::info_of(parsed) else {
        return Err(Error::new(
            ErrorKind::InvalidValue,
            format!("no value check is known for template {}", parsed.template),
        ));
    };
    if info.kind.is_some() {
        return Err(Error::new(
            ErrorKind::InvalidValue,
            "the key holds a collection (SET, HASH or LIST): write it through its schema's operations",
        ));
    }
    if info.encrypted {
        return Err(Error::new(
            ErrorKind::InvalidValue,
            "the key's value is encrypted: write it through its schema's operations with a keyring",
        ));
    }
    info.value.check(key, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(key: &str) -> ParsedKey {
        catalog::parse_any(key).unwrap_or_else(|_| panic!("{key} parses"))
    }

    #[test]
    fn collection_and_encrypted_templates_refuse_plain_values() {
        let mut refused = 0;
        for schema in catalog::every() {
            for info in schema.templates() {
                if info.kind.is_some() || info.encrypted {
                    let parsed = ParsedKey {
                        schema: schema.name,
                        template: info.template.source(),
                        fields: Vec::new(),
                        read_only: schema.read_only,
                    };
                    let source = info.template.source();
                    assert!(check(&parsed, "", b"1").is_err(), "{source}");
                    refused += 1;
                }
            }
        }
        assert!(refused >= 5, "{refused}");
    }

    #[test]
    fn checks_decode_with_the_key_codec() {
        let aliases = "jxt/tenants/1/domain/aliases";
        assert!(check(&parsed(aliases), aliases, br#"["a.example.com"]"#).is_ok());
        assert!(check(&parsed(aliases), aliases, br#"{"a":1}"#).is_err());
        let one = "jxt/tenants/1/meta";
        assert!(check(&parsed(one), one, b"not json").is_err());
        // Decodes, but says tenant 2 under tenant 1's key.
        let meta = br#"{"id":2,"code":"c","name":"n","status":"active","billingPlan":"x"}"#;
        let err = check(&parsed(one), one, meta).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidValue, "{err}");
        let two = "jxt/tenants/2/meta";
        assert!(check(&parsed(two), two, meta).is_ok());
    }

    #[test]
    fn the_sealed_pool_is_known_from_its_schema() {
        let pool = <keyplane_schemas::nxc::PoolKey as keyplane::keyspace::Key>::TEMPLATE;
        let found = catalog::every()
            .into_iter()
            .flat_map(|s| s.templates())
            .find(|t| t.template.source() == pool)
            .expect("the pool template");
        assert!(found.encrypted);
    }
}
