//! [`Schema`] and [`ParsedKey`]: one schema's name, templates and parser, as tools that work
//! with every schema without knowing their types see it (the [`catalog`](crate::all) lists
//! them).

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
