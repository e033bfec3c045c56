//! The catalog of schemas: names, templates and parsers, for tools such as `kvctl` that work
//! with every schema without knowing their types.

use keyplane_core::keyspace::{NoMatch, ParsedKey, Schema};

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
