//! The catalog of schemas: names, templates and parsers, for tools such as `kvctl` that work
//! with every schema without knowing their types.

use keyplane_core::keyspace::{Keyspace, NoMatch, TemplateInfo};

/// A raw key parsed by one schema: the template it matched and its decoded fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedKey {
    /// The schema's name.
    pub schema: &'static str,
    /// The template (as written in the design document) the key belongs to.
    pub template: &'static str,
    /// The variables as `(name, encoded segment)`, in template order.
    pub fields: Vec<(&'static str, String)>,
}

impl ParsedKey {
    /// Whether the key belongs to an old layout, read-only ([`Schema::read_only`]).
    pub fn is_read_only(&self) -> bool {
        find(self.schema).is_some_and(|s| s.read_only)
    }
}

/// One schema of the catalog.
#[derive(Clone, Copy)]
pub struct Schema {
    /// Short name (`tenant`, `registry`, `cronix`, `nxc`, `balancer`).
    pub name: &'static str,
    /// One line on what the schema is for.
    pub summary: &'static str,
    /// The store the schema's system uses (`etcd`, `redis`...).
    pub store: &'static str,
    /// Whether the schema is an old layout kept for reading and migrating: every template is
    /// read-only and the typed store writes none of its keys.
    pub read_only: bool,
    templates: fn() -> Vec<TemplateInfo>,
    parse: fn(&'static str, &str) -> Result<ParsedKey, NoMatch>,
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schema")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

fn parse_with<K: Keyspace>(schema: &'static str, raw: &str) -> Result<ParsedKey, NoMatch> {
    let key = K::parse(raw)?;
    Ok(ParsedKey {
        schema,
        template: key.template_source(),
        fields: key.fields(),
    })
}

impl Schema {
    /// The catalog entry of keyspace `K`.
    pub fn of<K: Keyspace>(name: &'static str, store: &'static str, summary: &'static str) -> Self {
        Schema {
            name,
            summary,
            store,
            read_only: false,
            templates: K::templates,
            parse: parse_with::<K>,
        }
    }

    /// The catalog entry of an old layout's keyspace `K`, whose templates are read-only.
    ///
    /// # Panics
    /// When a template of `K` is not read-only (a schema bug, caught by the catalog's tests).
    pub fn read_only<K: Keyspace>(
        name: &'static str,
        store: &'static str,
        summary: &'static str,
    ) -> Self {
        assert!(
            K::templates().iter().all(|t| t.template.is_read_only()),
            "every template of the old layout `{name}` is read-only"
        );
        Schema {
            read_only: true,
            ..Schema::of::<K>(name, store, summary)
        }
    }

    /// Every template of the schema.
    pub fn templates(&self) -> Vec<TemplateInfo> {
        (self.templates)()
    }

    /// Parses a raw key of this schema.
    ///
    /// # Errors
    /// [`NoMatch`] saying why the key belongs to no template.
    pub fn parse(&self, raw: &str) -> Result<ParsedKey, NoMatch> {
        (self.parse)(self.name, raw)
    }
}

/// Every schema of the crate's current layouts (the old layouts are [`legacy`]).
pub fn all() -> Vec<Schema> {
    vec![
        crate::tenant::schema(),
        crate::registry::schema(),
        crate::cronix::schema(),
        crate::nxc::schema(),
        crate::balancer::schema(),
    ]
}

/// The old layouts the documents replace, read-only ([`Schema::read_only`]): kept so that
/// old data parses, shows typed and migrates.
pub fn legacy() -> Vec<Schema> {
    vec![crate::tenant::legacy_schema(), crate::nxc::legacy_schema()]
}

/// The explicit variants of the documents' layouts for other deployments: on Redis
/// Cluster, each template with its co-location group as a hash tag (`nxc-cluster`). The
/// documents' own bytes stay in [`all`].
pub fn variants() -> Vec<Schema> {
    vec![crate::nxc::cluster_schema()]
}

/// Every schema: the current layouts ([`all`]), the old ones ([`legacy`]), then the
/// deployment variants ([`variants`]).
pub fn every() -> Vec<Schema> {
    all()
        .into_iter()
        .chain(legacy())
        .chain(variants())
        .collect()
}

/// The schema named `name`, current, old or a variant.
pub fn find(name: &str) -> Option<Schema> {
    every().into_iter().find(|s| s.name == name)
}

/// Parses a raw key with every schema, the current layouts first, then the old ones, then
/// the deployment variants; `Ok` with the first that matches, otherwise each schema's reason.
///
/// # Errors
/// One `(schema name, NoMatch)` per schema when none matches.
pub fn parse_any(raw: &str) -> Result<ParsedKey, Vec<(&'static str, NoMatch)>> {
    let mut reasons = Vec::new();
    for schema in every() {
        match schema.parse(raw) {
            Ok(parsed) => return Ok(parsed),
            Err(e) => reasons.push((schema.name, e)),
        }
    }
    Err(reasons)
}
