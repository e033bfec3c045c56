//! [`Schema`] and [`ParsedKey`]: a schema as a value, for tools that work with every schema
//! without knowing its types (`kvctl`, its UI, a team's own tools).
//!
//! A schema is either derived (a [`Keyspace`] type: [`Schema::of`]) or known from data alone
//! ([`Schema::from_templates`], what a manifest file loads). Both carry the same thing: the
//! templates with their segment rules ([`FieldInfo`](super::FieldInfo)) and what each value
//! is ([`ValueInfo`](super::ValueInfo)), and a parser of raw keys.

use super::check::{Finding, FindingKind, check};
use super::info::TemplateInfo;
use super::key_error::{KeyError, KeyErrorReason};
use super::keyspace::{Keyspace, NoMatch};
use super::template::Part;
use std::fmt;

/// A raw key parsed by one schema: the template it matched and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedKey {
    /// The schema's name.
    pub schema: &'static str,
    /// The template (as written) the key belongs to.
    pub template: &'static str,
    /// The variables as `(name, encoded segment)`, in template order.
    pub fields: Vec<(&'static str, String)>,
    /// Whether the key belongs to an old layout, read-only ([`Schema::read_only`]).
    pub read_only: bool,
}

/// One schema: its name, what it is for, its templates and a parser of its keys.
///
/// ```
/// use keyplane_core::keyspace::{Json, Key, Keyspace, Schema};
///
/// #[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
/// struct Service { image: String }
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "acme/apps/{app}/services/{id}", value = Json<Service>)]
/// struct ServiceKey { app: u64, id: u64 }
///
/// #[derive(Keyspace, Debug, Clone, PartialEq)]
/// enum AcmeKeys { Service(ServiceKey) }
///
/// let acme = Schema::of::<AcmeKeys>("acme").with_store("etcd");
/// let parsed = acme.parse("acme/apps/1/services/2")?;
/// assert_eq!(parsed.template, "acme/apps/{app}/services/{id}");
/// assert_eq!(parsed.fields, [("app", "1".to_owned()), ("id", "2".to_owned())]);
/// let info = &acme.templates()[0];
/// assert!(info.value.check("acme/apps/1/services/2", br#"{"image":"nginx"}"#).is_ok());
/// assert!(info.value.check("acme/apps/1/services/2", b"nginx").is_err());
/// # Ok::<(), keyplane_core::keyspace::NoMatch>(())
/// ```
#[derive(Clone, Copy)]
pub struct Schema {
    /// Short name (`tenant`, `acme`), as tools name it.
    pub name: &'static str,
    /// One line on what the schema is for.
    pub summary: &'static str,
    /// The store the schema's system uses (`etcd`, `redis`...).
    pub store: &'static str,
    /// Whether the schema is an old layout kept for reading and migrating: every template is
    /// read-only and the typed store writes none of its keys.
    pub read_only: bool,
    source: Source,
}

/// Where a schema's templates come from.
#[derive(Clone, Copy)]
enum Source {
    /// A [`Keyspace`] type.
    Typed {
        templates: fn() -> Vec<TemplateInfo>,
        parse: fn(&'static str, &str) -> Result<ParsedKey, NoMatch>,
    },
    /// Data (a manifest), kept for the life of the process.
    Loaded(&'static [TemplateInfo]),
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema")
            .field("name", &self.name)
            .field("store", &self.store)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

fn parse_with<K: Keyspace>(schema: &'static str, raw: &str) -> Result<ParsedKey, NoMatch> {
    let key = K::parse(raw)?;
    Ok(ParsedKey {
        schema,
        template: key.template_source(),
        fields: key.fields(),
        read_only: false,
    })
}

impl Schema {
    /// The schema of keyspace `K`, named `name` (its typed addresses are `name.template`);
    /// [`with_store`](Self::with_store) and [`with_summary`](Self::with_summary) describe it.
    pub fn of<K: Keyspace>(name: &'static str) -> Self {
        Schema {
            name,
            summary: "",
            store: "",
            read_only: false,
            source: Source::Typed {
                templates: K::templates,
                parse: parse_with::<K>,
            },
        }
    }

    /// The schema of an old layout's keyspace `K`, whose templates are all read-only
    /// (`#[kv(read_only)]`).
    ///
    /// # Panics
    /// When a template of `K` is not read-only: a schema bug, which the first use shows.
    pub fn read_only<K: Keyspace>(name: &'static str) -> Self {
        assert!(
            K::templates().iter().all(|t| t.template.is_read_only()),
            "every template of the old layout `{name}` is read-only"
        );
        Schema {
            read_only: true,
            ..Schema::of::<K>(name)
        }
    }

    /// The store the schema's system uses (`etcd`, `redis`...), as tools show it.
    pub fn with_store(self, store: &'static str) -> Self {
        Schema { store, ..self }
    }

    /// One line on what the schema is for, as tools show it.
    pub fn with_summary(self, summary: &'static str) -> Self {
        Schema { summary, ..self }
    }

    /// A schema known from data alone (a manifest file): its templates, checked by the
    /// schema checker ([`check`](super::check)) so that no raw key matches two of them.
    ///
    /// The schema lives for the rest of the process (its names and templates are leaked, as
    /// the names of derived schemas are `'static`): load each manifest once.
    ///
    /// # Errors
    /// The checker's findings (overlapping templates, undeclared nesting, unsafe literals),
    /// or one saying that a read-only schema has a writable template.
    pub fn from_templates(
        name: &str,
        store: &str,
        summary: &str,
        read_only: bool,
        templates: Vec<TemplateInfo>,
    ) -> Result<Self, Vec<Finding>> {
        let findings = check(&templates, None);
        if !findings.is_empty() {
            return Err(findings);
        }
        if read_only && let Some(writable) = templates.iter().find(|t| !t.template.is_read_only()) {
            return Err(vec![Finding {
                kind: FindingKind::Malformed,
                template: writable.template.source().to_owned(),
                other: None,
                message: "a read-only schema's templates are all read-only".to_owned(),
            }]);
        }
        Ok(Schema {
            name: leak(name),
            summary: leak(summary),
            store: leak(store),
            read_only,
            source: Source::Loaded(Box::leak(templates.into_boxed_slice())),
        })
    }

    /// Every template of the schema.
    pub fn templates(&self) -> Vec<TemplateInfo> {
        match self.source {
            Source::Typed { templates, .. } => templates(),
            Source::Loaded(templates) => templates.to_vec(),
        }
    }

    /// Parses a raw key of this schema: strictly, by the segment rules of its fields.
    ///
    /// # Errors
    /// [`NoMatch`] saying why the key belongs to no template.
    pub fn parse(&self, raw: &str) -> Result<ParsedKey, NoMatch> {
        match self.source {
            Source::Typed { parse, .. } => parse(self.name, raw).map(|parsed| ParsedKey {
                read_only: self.read_only,
                ..parsed
            }),
            Source::Loaded(templates) => {
                let mut attempts = Vec::new();
                for info in templates {
                    match parse_loaded(info, raw) {
                        Ok(fields) => {
                            return Ok(ParsedKey {
                                schema: self.name,
                                template: info.template.source(),
                                fields,
                                read_only: self.read_only,
                            });
                        }
                        Err(e) => attempts.push(e),
                    }
                }
                Err(NoMatch::from_attempts(raw, attempts))
            }
        }
    }
}

/// `text` for the life of the process.
fn leak(text: &str) -> &'static str {
    Box::leak(text.to_owned().into_boxed_str())
}

/// Matches `raw` against one template known from data, checking every field by its rule.
fn parse_loaded(
    info: &'static TemplateInfo,
    raw: &str,
) -> Result<Vec<(&'static str, String)>, KeyError> {
    let template = info.template;
    let captures = template.captures_vec(raw)?;
    // The segment index of each variable, in template order, for the error's position.
    let positions = template.segments().iter().enumerate().flat_map(|(i, s)| {
        s.parts()
            .iter()
            .filter(|p| matches!(p, Part::Var(_)))
            .map(move |_| i)
    });
    let mut fields = Vec::with_capacity(captures.len());
    for ((name, text), position) in template.vars().zip(&captures).zip(positions) {
        let field = info.field(name).ok_or_else(|| {
            template.error(
                raw,
                position,
                KeyErrorReason::Shape(format!("the schema does not describe field {name:?}")),
            )
        })?;
        field.check(text, template.separator()).map_err(|error| {
            template.error(
                raw,
                position,
                KeyErrorReason::Field {
                    name: field.name.into(),
                    error,
                },
            )
        })?;
        fields.push((field.name, (*text).to_owned()));
    }
    Ok(fields)
}
