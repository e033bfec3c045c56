//! The schema catalog `kvctl` works with: the bundled schemas, a team's own (given to
//! [`Kvctl::schema`](crate::Kvctl::schema) or loaded from manifest files), each template with
//! a short name, so that `tenant.meta` is `TenantMetaKey` of schema `tenant`.
//!
//! Naming of a derived schema's templates: the key type's name without its module path and
//! its `Key` suffix, in kebab-case, without a leading `<schema>-` (`TenantMetaKey` → `meta`,
//! `DatabaseConfigKey` → `database-config`, `InstanceDataKey` → `instance-data`). A
//! manifest names each template itself.

use keyplane::keyspace::{NoMatch, ParsedKey, Schema, TemplateInfo};
use std::sync::{Arc, OnceLock, RwLock};

/// One schema of the catalog, with the short names of its templates.
#[derive(Clone)]
pub(crate) struct Listed {
    pub(crate) schema: Schema,
    /// Whether `kvctl schema` lists it without `--all` (an old layout or a deployment
    /// variant is listed with `--all` only).
    pub(crate) current: bool,
    /// The short name of each template, in the order of [`Schema::templates`]; `None`:
    /// derived from the key types.
    pub(crate) names: Option<Arc<[String]>>,
    /// Whether a team added it (in code or by a manifest) rather than it being bundled.
    pub(crate) added: bool,
    /// The schema's templates, built on first use and kept: a derived schema builds them
    /// anew on each [`Schema::templates`] (JSON Schemas included), and a listing reads
    /// them once per key.
    templates: Arc<OnceLock<Vec<TemplateInfo>>>,
}

impl Listed {
    /// A derived schema: template names from the key types.
    pub(crate) fn derived(schema: Schema, current: bool) -> Self {
        Listed {
            schema,
            current,
            names: None,
            added: false,
            templates: Arc::default(),
        }
    }

    /// A schema known from a manifest, with the names of its templates.
    pub(crate) fn loaded(schema: Schema, current: bool, names: Arc<[String]>) -> Self {
        Listed {
            names: Some(names),
            added: true,
            ..Listed::derived(schema, current)
        }
    }

    /// The schema's templates (built once).
    pub(crate) fn templates(&self) -> &[TemplateInfo] {
        self.templates.get_or_init(|| self.schema.templates())
    }
}

/// The schemas `kvctl` knows, in the order keys are parsed: a team's own first, then the
/// bundled ones.
#[derive(Clone, Default)]
pub(crate) struct Catalog {
    pub(crate) schemas: Vec<Listed>,
}

impl Catalog {
    /// The bundled schemas: the current layouts, then the old ones and the variants.
    pub(crate) fn bundled() -> Self {
        let current = keyplane_schemas::all()
            .into_iter()
            .map(|s| Listed::derived(s, true));
        let others = keyplane_schemas::legacy()
            .into_iter()
            .chain(keyplane_schemas::variants())
            .map(|s| Listed::derived(s, false));
        Catalog {
            schemas: current.chain(others).collect(),
        }
    }
}

static CATALOG: RwLock<Option<Arc<Catalog>>> = RwLock::new(None);

/// Makes `catalog` the one every command reads (for the rest of the process, or until the
/// next call).
pub(crate) fn install(catalog: Catalog) {
    let mut slot = CATALOG.write().unwrap_or_else(|e| e.into_inner());
    *slot = Some(Arc::new(catalog));
}

/// The catalog in use: the installed one, else the bundled schemas.
pub(crate) fn current() -> Arc<Catalog> {
    if let Some(catalog) = CATALOG.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return catalog.clone();
    }
    let bundled = Arc::new(Catalog::bundled());
    let mut slot = CATALOG.write().unwrap_or_else(|e| e.into_inner());
    slot.get_or_insert(bundled).clone()
}

/// The current layouts (what `kvctl schema` lists without `--all`).
pub(crate) fn all() -> Vec<Schema> {
    current()
        .schemas
        .iter()
        .filter(|l| l.current)
        .map(|l| l.schema)
        .collect()
}

/// Every schema, in parse order.
pub(crate) fn every() -> Vec<Schema> {
    current().schemas.iter().map(|l| l.schema).collect()
}

/// The schema named `name`.
pub(crate) fn find(name: &str) -> Option<Schema> {
    current()
        .schemas
        .iter()
        .find(|l| l.schema.name == name)
        .map(|l| l.schema)
}

/// Parses a raw key with every schema in order; `Ok` with the first that matches, otherwise
/// each schema's reason.
///
/// # Errors
/// One `(schema name, NoMatch)` per schema when none matches.
pub(crate) fn parse_any(raw: &str) -> Result<ParsedKey, Vec<(&'static str, NoMatch)>> {
    let mut reasons = Vec::new();
    for listed in &current().schemas {
        match listed.schema.parse(raw) {
            Ok(parsed) => return Ok(parsed),
            Err(e) => reasons.push((listed.schema.name, e)),
        }
    }
    Err(reasons)
}

/// The template a parsed key belongs to.
pub(crate) fn info_of(parsed: &ParsedKey) -> Option<TemplateInfo> {
    let catalog = current();
    let listed = catalog
        .schemas
        .iter()
        .find(|l| l.schema.name == parsed.schema)?;
    listed
        .templates()
        .iter()
        .find(|t| t.template.source() == parsed.template)
        .cloned()
}

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

    /// The value type as stored: the codec, or `SET of`/`HASH of`/`LIST of` its member codec
    /// for a collection key.
    pub(crate) fn value_type(&self) -> String {
        let codec = short_type(self.info.value_type);
        match self.info.kind {
            Some(keyplane::CollectionKind::Set) => format!("SET of {codec}"),
            Some(keyplane::CollectionKind::Map) => format!("HASH of {codec}"),
            Some(keyplane::CollectionKind::List) => format!("LIST of {codec}"),
            None => codec,
        }
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
    let catalog = current();
    let listed = catalog
        .schemas
        .iter()
        .find(|l| l.schema.name == schema.name);
    let names = listed.and_then(|l| l.names.clone());
    let templates = match listed {
        Some(listed) => listed.templates().to_vec(),
        None => schema.templates(),
    };
    templates
        .into_iter()
        .enumerate()
        .map(|(i, info)| Entry {
            schema,
            name: match names.as_ref().and_then(|n| n.get(i)) {
                Some(name) => name.clone(),
                None => short_name(schema.name, info.type_name),
            },
            info,
        })
        .collect()
}

/// The template at `schema.name`.
pub(crate) fn lookup(schema: &str, name: &str) -> Option<Entry> {
    entries(find(schema)?).into_iter().find(|e| e.name == name)
}

/// The catalog entry of a parsed key.
pub(crate) fn entry_of(parsed: &ParsedKey) -> Option<Entry> {
    entries(find(parsed.schema)?)
        .into_iter()
        .find(|e| e.info.template.source() == parsed.template)
}

/// The last component of a Rust type path, keeping generic arguments readable
/// (`keyplane::keyspace::Json<keyplane_schemas::tenant::TenantMeta>` → `Json<TenantMeta>`).
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
        for schema in every() {
            let mut seen = HashSet::new();
            for entry in entries(schema) {
                assert!(seen.insert(entry.name.clone()), "{} twice", entry.address());
            }
        }
    }

    #[test]
    fn short_types_drop_module_paths() {
        assert_eq!(
            short_type("keyplane::keyspace::Json<alloc::vec::Vec<alloc::string::String>>"),
            "Json<Vec<String>>"
        );
    }
}
