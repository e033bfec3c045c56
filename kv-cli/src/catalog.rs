//! The schema catalog as `kvctl` names it: each template gets a short name derived from its
//! key type, so that `tenant.meta` is `TenantMetaKey` of schema `tenant`.
//!
//! Naming: the key type's name without its module path and its `Key` suffix, in kebab-case,
//! without a leading `<schema>-` (`TenantMetaKey` → `meta`, `DatabaseConfigKey` →
//! `database-config`, `InstanceDataKey` → `instance-data`).

use keyplane_core::keyspace::TemplateInfo;
use keyplane_schemas::{ParsedKey, Schema};

/// One template of one schema, with its short name.
pub(crate) struct Entry {
    pub(crate) schema: Schema,
    pub(crate) name: String,
    pub(crate) info: TemplateInfo,
}

impl Entry {
    /// `schema.name`, as typed on the command line.
    pub(crate) fn address(&self) -> String {
        format!("{}.{}", self.schema.name, self.name)
    }
}

/// The short name of a key type within `schema`.
pub(crate) fn short_name(schema: &str, type_name: &str) -> String {
    let base = type_name.rsplit("::").next().unwrap_or(type_name);
    let base = base.strip_suffix("Key").unwrap_or(base);
    let mut kebab = String::new();
    for (i, c) in base.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                kebab.push('-');
            }
            kebab.push(c.to_ascii_lowercase());
        } else {
            kebab.push(c);
        }
    }
    // An old layout's keys are `Legacy...Key`: `tenant-legacy.meta`, not `.legacy-meta`; a
    // cluster variant's are `Cluster...Key`: `nxc-cluster.profile-map`.
    let kebab = match (schema.rsplit_once('-'), kebab.split_once('-')) {
        (Some((_, variant)), Some((first, rest)))
            if first == variant && matches!(variant, "legacy" | "cluster") && !rest.is_empty() =>
        {
            rest.to_owned()
        }
        _ => kebab,
    };
    match kebab.strip_prefix(schema).and_then(|r| r.strip_prefix('-')) {
        Some(rest) if !rest.is_empty() => rest.to_owned(),
        _ => kebab,
    }
}

/// Every template of the schema.
pub(crate) fn entries(schema: Schema) -> Vec<Entry> {
    schema
        .templates()
        .into_iter()
        .map(|info| Entry {
            schema,
            name: short_name(schema.name, info.type_name),
            info,
        })
        .collect()
}

/// The template at `schema.name`.
pub(crate) fn lookup(schema: &str, name: &str) -> Option<Entry> {
    entries(keyplane_schemas::find(schema)?)
        .into_iter()
        .find(|e| e.name == name)
}

/// The catalog entry of a parsed key.
pub(crate) fn entry_of(parsed: &ParsedKey) -> Option<Entry> {
    entries(keyplane_schemas::find(parsed.schema)?)
        .into_iter()
        .find(|e| e.info.template.source() == parsed.template)
}

/// The last component of a Rust type path, keeping generic arguments readable
/// (`keyplane_core::keyspace::Json<keyplane_schemas::tenant::TenantMeta>` → `Json<TenantMeta>`).
pub(crate) fn short_type(type_name: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    for c in type_name.chars() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
        } else {
            out.push_str(word.rsplit("::").next().unwrap_or(&word));
            word.clear();
            out.push(c);
        }
    }
    out.push_str(word.rsplit("::").next().unwrap_or(&word));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn short_names_follow_the_key_type() {
        assert_eq!(
            short_name("tenant", "keyplane_schemas::tenant::TenantMetaKey"),
            "meta"
        );
        assert_eq!(
            short_name("tenant", "x::DatabaseConfigKey"),
            "database-config"
        );
        assert_eq!(short_name("cronix", "x::NodeKey"), "node");
        assert_eq!(short_name("tenant", "x::TenantKey"), "tenant");
        assert_eq!(short_name("tenant-legacy", "x::LegacyMetaKey"), "meta");
        assert_eq!(short_name("nxc-legacy", "x::LegacyGroupKey"), "group");
        assert_eq!(short_name("tenant", "x::LegacyMetaKey"), "legacy-meta");
        assert_eq!(
            short_name("nxc-cluster", "x::ClusterProfileMapKey"),
            "profile-map"
        );
    }

    #[test]
    fn short_names_are_unique_within_each_schema() {
        for schema in keyplane_schemas::every().into_iter() {
            let mut seen = HashSet::new();
            for entry in entries(schema) {
                assert!(seen.insert(entry.name.clone()), "{} twice", entry.address());
            }
        }
    }

    #[test]
    fn short_types_drop_module_paths() {
        assert_eq!(
            short_type("keyplane_core::keyspace::Json<alloc::vec::Vec<alloc::string::String>>"),
            "Json<Vec<String>>"
        );
    }
}
