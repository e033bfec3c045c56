//! The [`Keyspace`] trait: the templates of one schema, parsing any raw key into its enum.

use super::info::TemplateInfo;
use super::key_error::KeyError;
use std::fmt;

/// The set of key templates of one schema, as an enum of its typed keys.
///
/// `parse` tries every template and, when none matches, says which template came closest and
/// why it failed. `templates` lists what the [schema checker](super::check) and `kvctl schema`
/// need. `#[derive(Keyspace)]` writes the impl for an enum of key types.
///
/// ```
/// use keyplane_core::keyspace::{check_keyspace, Key, Keyspace, Text};
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "jxt/tenants/{id}/meta", value = Text)]
/// struct TenantMetaKey { id: u64 }
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "jxt/tenants/{id}/database/{service}", value = Text)]
/// struct TenantDatabaseKey { id: u64, service: u32 }
///
/// #[derive(Keyspace, Debug, Clone, PartialEq)]
/// #[kv(naming = "[a-z0-9_]")]
/// enum TenantSchema {
///     Meta(TenantMetaKey),
///     Database(TenantDatabaseKey),
/// }
///
/// assert_eq!(
///     TenantSchema::parse("jxt/tenants/7/meta"),
///     Ok(TenantSchema::Meta(TenantMetaKey { id: 7 }))
/// );
/// let miss = TenantSchema::parse("jxt/tenants/7/metadata").unwrap_err();
/// assert_eq!(miss.closest().unwrap().template(), "jxt/tenants/{id}/meta");
/// assert!(check_keyspace::<TenantSchema>().is_empty());
/// ```
pub trait Keyspace: Sized + Clone + fmt::Debug + PartialEq + Send + Sync + 'static {
    /// Parses a raw key into the variant of the template it belongs to.
    ///
    /// # Errors
    /// [`NoMatch`] when no template matches, with the closest attempt.
    fn parse(raw: &str) -> Result<Self, NoMatch>;

    /// Appends the key to `out`.
    fn write(&self, out: &mut String);

    /// The key as a new string.
    fn encode(&self) -> String {
        let mut out = String::with_capacity(64);
        self.write(&mut out);
        out
    }

    /// The template (as written) of this key's variant.
    fn template_source(&self) -> &'static str;

    /// The variables as `(name, encoded segment)`.
    fn fields(&self) -> Vec<(&'static str, String)>;

    /// Every template of the schema.
    fn templates() -> Vec<TemplateInfo>;

    /// The rule every literal of the schema follows, if the schema has one.
    fn naming_rule() -> Option<NamingRule> {
        None
    }
}

/// A raw key that belongs to no template of a keyspace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct NoMatch {
    raw: String,
    closest: Option<KeyError>,
}

impl NoMatch {
    /// Builds the error from every template's failure, keeping the one that matched furthest
    /// (the first of equals).
    pub fn from_attempts(raw: &str, attempts: impl IntoIterator<Item = KeyError>) -> Self {
        let mut closest: Option<KeyError> = None;
        for attempt in attempts {
            if closest
                .as_ref()
                .is_none_or(|c| attempt.position() > c.position())
            {
                closest = Some(attempt);
            }
        }
        NoMatch {
            raw: raw.to_owned(),
            closest,
        }
    }

    /// The raw key.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The closest template's failure (`None` for a keyspace without templates).
    pub fn closest(&self) -> Option<&KeyError> {
        self.closest.as_ref()
    }
}

impl fmt::Display for NoMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key {:?} matches no template", self.raw)?;
        if let Some(closest) = &self.closest {
            write!(
                f,
                "; closest is `{}`, which stops at segment {}: {}",
                closest.template(),
                closest.position(),
                closest.reason()
            )?;
        }
        Ok(())
    }
}

impl From<NoMatch> for crate::Error {
    fn from(err: NoMatch) -> Self {
        crate::Error::from_condition(crate::ErrorKind::InvalidKey, err)
    }
}

/// The rule literal segments of a schema follow: a character class such as `[a-z0-9_-]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamingRule {
    charset: super::segment::Charset,
}

impl NamingRule {
    /// A rule allowing exactly the characters of `class` (`[a-z0-9-]`, ranges and single
    /// characters; a leading `^` negates).
    ///
    /// # Errors
    /// A message when `class` is not a valid character class.
    pub fn charset(class: &str) -> Result<Self, String> {
        Ok(NamingRule {
            charset: super::segment::Charset::parse(class)?,
        })
    }

    /// Whether `literal` follows the rule.
    pub fn allows(&self, literal: &str) -> bool {
        !literal.is_empty() && literal.chars().all(|c| self.charset.contains(c))
    }

    /// The rule as written.
    pub fn describe(&self) -> &str {
        self.charset.source()
    }
}
