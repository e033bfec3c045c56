//! The one grammar of a store URL's query parameters: each parameter sets the config field
//! of its name, read from text by the type of the field's current value, so that every
//! option a config struct has can be given in a URL, the same way on every backend.
//!
//! [`apply_url_params`] describes the grammar.

use super::duration_text::parse as parse_url_duration;
use crate::{Error, ErrorKind, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::time::Duration;

/// The TLS parameters and the fields of [`TlsConfig`](crate::tls::TlsConfig) they set.
pub const TLS_URL_PARAMS: [(&str, &str); 4] = [
    ("ca", "ca_file"),
    ("cert", "cert_file"),
    ("key", "key_file"),
    ("domain", "domain"),
];

/// How one backend's URL maps onto its config: its name (for messages), the fields its URL
/// sets outside the query (the hosts, a path), other names for some fields, and the
/// parameters that another parser takes (a client library's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlSpec {
    backend: &'static str,
    fixed: &'static [&'static str],
    aliases: &'static [(&'static str, &'static str)],
    foreign: &'static [&'static str],
}

impl UrlSpec {
    /// The spec of `backend` (`"etcd"`, `"redis"`...): every field is a parameter.
    pub const fn new(backend: &'static str) -> Self {
        UrlSpec {
            backend,
            fixed: &[],
            aliases: &[],
            foreign: &[],
        }
    }

    /// Fields the URL sets outside its query (the hosts, a path): no parameter names them.
    pub const fn fixed(mut self, fields: &'static [&'static str]) -> Self {
        self.fixed = fields;
        self
    }

    /// Parameters that name a field by another name, as `(parameter, field)`: `user` for
    /// `username`, the name other tools use.
    pub const fn aliases(mut self, aliases: &'static [(&'static str, &'static str)]) -> Self {
        self.aliases = aliases;
        self
    }

    /// Parameters that are known but taken by another parser (the backend's client
    /// library, or the backend itself): [`apply_url_params`] leaves them alone and lists them
    /// among the known ones.
    pub const fn foreign(mut self, names: &'static [&'static str]) -> Self {
        self.foreign = names;
        self
    }

    /// The backend's name, as given to [`UrlSpec::new`].
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    /// Whether `name` is one of the [foreign](UrlSpec::foreign) parameters.
    pub fn is_foreign(&self, name: &str) -> bool {
        self.foreign.contains(&name)
    }
}

/// The parameters of a URL's query (what follows `?`, without it), percent-decoded, in
/// order. Empty pairs (`a=1&&b=2`) are skipped; a name without `=` has an empty value.
///
/// ```
/// use keyplane_contract::raw::url_query_pairs;
/// let pairs = url_query_pairs("ca=/etc/my%20ca.pem&user=ad%40min").unwrap();
/// assert_eq!(pairs[0], ("ca".to_owned(), "/etc/my ca.pem".to_owned()));
/// assert_eq!(pairs[1].1, "ad@min");
/// ```
///
/// # Errors
/// [`ErrorKind::Config`] for a bad percent-encoding, naming the parameter, never showing
/// its value (it may be a password).
pub fn url_query_pairs(query: &str) -> Result<Vec<(String, String)>> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = percent_decode(name).map_err(|why| {
                Error::new(ErrorKind::Config, format!("a URL parameter's name {why}"))
            })?;
            let value = percent_decode(value).map_err(|why| {
                Error::new(
                    ErrorKind::Config,
                    format!("the value of the URL parameter `{name}` {why}"),
                )
            })?;
            Ok((name, value))
        })
        .collect()
}

/// Decodes `%XX` escapes; every other character stands for itself.
///
/// # Errors
/// The end of a message saying what is wrong: a `%` without two hex digits, or bytes that
/// are not UTF-8.
pub fn percent_decode(text: &str) -> std::result::Result<String, String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        rest = after;
        if byte != b'%' {
            bytes.push(byte);
            continue;
        }
        let hex = |i: usize| rest.get(i).and_then(|b| char::from(*b).to_digit(16));
        let (Some(high), Some(low)) = (hex(0), hex(1)) else {
            return Err(
                "has bad percent-encoding: a `%` is followed by two hex digits (`%25` for `%`)"
                    .to_owned(),
            );
        };
        bytes.push(u8::try_from(high * 16 + low).unwrap_or(u8::MAX));
        rest = &rest[2..];
    }
    String::from_utf8(bytes)
        .map_err(|_| "has bad percent-encoding: the decoded bytes are not UTF-8".to_owned())
}

/// `config` with the fields the parameters `pairs` name set from their text, the others
/// kept. The parameters `spec` calls foreign are skipped. The grammar:
///
/// - a bool field takes `true`/`false`, `1`/`0`, `yes`/`no`;
/// - a number field takes a whole number;
/// - a string field takes the text; a list field a comma-separated list;
/// - an optional field (none by default) takes a number or a bool when the text is one and
///   the field accepts it, else the text;
/// - a duration field (a `Duration` serialized by [`duration_text`](super::duration_text))
///   takes a duration and its unit (`2s`, `500ms`, `1.5s`, `1m`, `1h`; a bare number is
///   refused);
/// - `ca`, `cert`, `key` and `domain` set the `tls` field's `ca_file`, `cert_file`,
///   `key_file` and `domain` (turning TLS on).
///
/// Names and values are percent-decoded (`%XX` is a byte; `+` stands for itself). An
/// unknown parameter, one given twice or a value of the wrong form is a
/// [`Config`](ErrorKind::Config) error naming the parameter, and nothing is applied.
///
/// ```
/// use keyplane_contract::raw::{UrlSpec, apply_url_params, url_query_pairs};
/// # use std::time::Duration;
/// #[derive(Default, serde::Serialize, serde::Deserialize)]
/// struct Config {
///     retries: u32,
///     #[serde(with = "keyplane_contract::raw::duration_text")]
///     connect_timeout: Duration,
///     roots: Vec<String>,
///     fast: bool,
/// }
///
/// let pairs = url_query_pairs("retries=3&connect_timeout=2s&roots=a/,b/&fast=yes").unwrap();
/// let config = apply_url_params(&Config::default(), &pairs, &UrlSpec::new("demo")).unwrap();
/// assert_eq!((config.retries, config.connect_timeout), (3, Duration::from_secs(2)));
/// assert_eq!(config.roots, ["a/", "b/"]);
/// assert!(config.fast);
///
/// let err = apply_url_params(&config, &url_query_pairs("retry=3").unwrap(), &UrlSpec::new("demo"));
/// assert!(err.err().unwrap().to_string().contains("connect_timeout"));
/// ```
///
/// # Errors
/// [`ErrorKind::Config`] for an unknown parameter (the message lists the known ones), one
/// given twice, a value of the wrong form (naming the parameter and the form expected), a
/// duration without its unit, or a TLS parameter when the config has no `tls` field.
pub fn apply_url_params<T: Serialize + DeserializeOwned>(
    config: &T,
    pairs: &[(String, String)],
    spec: &UrlSpec,
) -> Result<T> {
    let mut json = to_object(config)?;
    let mut seen: Vec<&str> = Vec::new();
    for (name, text) in pairs {
        if spec.is_foreign(name) {
            continue;
        }
        if seen.contains(&name.as_str()) {
            return Err(Error::new(
                ErrorKind::Config,
                format!("the {} URL parameter `{name}` is given twice", spec.backend),
            ));
        }
        seen.push(name);
        let target = resolve(&json, name, spec)?;
        let current = target.current(&json);
        let candidates = candidates(&current, &target, text).map_err(|form| {
            Error::new(
                ErrorKind::Config,
                format!("the {} URL parameter `{name}` {form}", spec.backend),
            )
        })?;
        let mut last_error = None;
        for candidate in candidates {
            let mut trial = json.clone();
            target.set(&mut trial, candidate);
            match serde_json::from_value::<T>(Value::Object(trial.clone())) {
                Ok(_) => {
                    json = trial;
                    last_error = None;
                    break;
                }
                Err(e) => last_error = Some(e),
            }
        }
        if let Some(e) = last_error {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "the {} URL parameter `{name}` expects {}",
                    spec.backend,
                    form(&current, &target)
                ),
            )
            .with_source(e));
        }
    }
    serde_json::from_value(Value::Object(json)).map_err(|e| {
        Error::new(ErrorKind::Config, "the URL's parameters do not apply").with_source(e)
    })
}

/// The parameters a URL of `config`'s type takes, sorted: every field not fixed, the TLS ones when the config has `tls`, the aliases and the
/// foreign ones.
///
/// # Errors
/// [`ErrorKind::Config`] when `config` does not serialize as a JSON object.
pub fn known_url_params<T: Serialize>(config: &T, spec: &UrlSpec) -> Result<Vec<String>> {
    let json = to_object(config)?;
    let mut known: Vec<String> = Vec::new();
    for field in json.keys() {
        if spec.fixed.contains(&field.as_str()) {
            continue;
        }
        if field == "tls" {
            known.extend(TLS_URL_PARAMS.iter().map(|(param, _)| (*param).to_owned()));
        } else {
            known.push(field.clone());
        }
    }
    known.extend(spec.aliases.iter().map(|(param, _)| (*param).to_owned()));
    known.extend(spec.foreign.iter().map(|param| (*param).to_owned()));
    known.sort();
    known.dedup();
    Ok(known)
}

/// One parameter per field of `config` (the `tls` field's fields included, as
/// `tls.ca_file`...), with a value different from the field's current one: what a test
/// walks to check that a URL reaches every field. The value is `None` for a field no
/// parameter sets: a fixed one, or one whose type the grammar does not derive a value for
/// (an object), which its backend handles itself.
///
/// # Errors
/// [`ErrorKind::Config`] when `config` does not serialize as a JSON object.
pub fn url_param_examples<T: Serialize>(
    config: &T,
    spec: &UrlSpec,
) -> Result<Vec<(String, Option<String>)>> {
    let json = to_object(config)?;
    let mut examples = Vec::new();
    for (field, value) in &json {
        if spec.fixed.contains(&field.as_str()) {
            examples.push((field.clone(), None));
            continue;
        }
        if field == "tls" {
            let tls = to_object(&crate::tls::TlsConfig::default())?;
            for sub in tls.keys() {
                let param = TLS_URL_PARAMS.iter().find(|(_, f)| f == sub);
                let example = param.map(|(param, _)| format!("{param}=/example/{sub}"));
                examples.push((format!("tls.{sub}"), example));
            }
            continue;
        }
        let example = match value {
            Value::Bool(b) => Some(format!("{field}={}", !b)),
            Value::Number(n) => n.as_u64().map(|n| format!("{field}={}", n + 1)),
            Value::String(s) => Some(match parse_url_duration(s) {
                Ok(d) => format!(
                    "{field}={}",
                    super::duration_text::format(d + Duration::from_secs(1))
                ),
                Err(_) => format!("{field}={s}x"),
            }),
            Value::Array(_) => Some(format!("{field}=a,b")),
            Value::Null => Some(format!("{field}=7")),
            Value::Object(_) => None,
        };
        examples.push((field.clone(), example));
    }
    Ok(examples)
}

/// The field a parameter sets.
enum Target {
    /// A field of the config itself.
    Field(String),
    /// A duration field, set from a duration with its unit.
    Duration(String),
    /// A field of the `tls` object, created when missing.
    Tls(&'static str),
}

impl Target {
    fn current(&self, json: &Map<String, Value>) -> Value {
        match self {
            Target::Field(f) | Target::Duration(f) => json.get(f).cloned().unwrap_or(Value::Null),
            Target::Tls(f) => json
                .get("tls")
                .and_then(|tls| tls.get(*f))
                .cloned()
                .unwrap_or(Value::Null),
        }
    }

    fn set(&self, json: &mut Map<String, Value>, value: Value) {
        match self {
            Target::Field(f) | Target::Duration(f) => {
                json.insert(f.clone(), value);
            }
            Target::Tls(f) => {
                let tls = json
                    .entry("tls")
                    .or_insert_with(|| Value::Object(Map::new()));
                if !tls.is_object() {
                    *tls = Value::Object(Map::new());
                }
                if let Value::Object(tls) = tls {
                    tls.insert((*f).to_owned(), value);
                }
            }
        }
    }
}

fn resolve(json: &Map<String, Value>, name: &str, spec: &UrlSpec) -> Result<Target> {
    let field = spec
        .aliases
        .iter()
        .find(|(param, _)| *param == name)
        .map_or(name, |(_, field)| *field);
    let settable = |f: &str| json.contains_key(f) && !spec.fixed.contains(&f) && f != "tls";
    if let Some((_, sub)) = TLS_URL_PARAMS.iter().find(|(param, _)| *param == field) {
        if json.contains_key("tls") && !spec.fixed.contains(&"tls") {
            return Ok(Target::Tls(sub));
        }
        return Err(Error::new(
            ErrorKind::Config,
            format!(
                "the URL parameter `{name}` is a TLS setting: the {} backend takes none",
                spec.backend
            ),
        ));
    }
    if settable(field) {
        let duration =
            matches!(json.get(field), Some(Value::String(s)) if parse_url_duration(s).is_ok());
        return Ok(if duration {
            Target::Duration(field.to_owned())
        } else {
            Target::Field(field.to_owned())
        });
    }
    let known = known_url_params(&Value::Object(json.clone()), spec)?;
    Err(Error::new(
        ErrorKind::Config,
        format!(
            "unknown {} URL parameter `{name}`; the known ones are {}",
            spec.backend,
            known.join(", ")
        ),
    ))
}

/// The values to try for `text`, in order, by the type of the field's current value.
fn candidates(
    current: &Value,
    target: &Target,
    text: &str,
) -> std::result::Result<Vec<Value>, String> {
    if let Target::Duration(_) = target {
        let duration = parse_url_duration(text)?;
        return Ok(vec![Value::String(super::duration_text::format(duration))]);
    }
    let number = || -> Option<Value> {
        text.parse::<u64>()
            .map(Value::from)
            .or_else(|_| text.parse::<i64>().map(Value::from))
            .ok()
    };
    Ok(match current {
        Value::Bool(_) => {
            vec![Value::Bool(parse_bool(text).ok_or_else(|| {
                "expects true or false (or 1/0, yes/no)".to_owned()
            })?)]
        }
        Value::Number(_) => vec![number().ok_or_else(|| "expects a whole number".to_owned())?],
        Value::String(_) => vec![Value::String(text.to_owned())],
        Value::Array(_) => {
            let items: Vec<&str> = if text.is_empty() {
                Vec::new()
            } else {
                text.split(',').collect()
            };
            let strings = items
                .iter()
                .map(|s| Value::String((*s).to_owned()))
                .collect();
            let scalars = items
                .iter()
                .map(|s| {
                    s.parse::<i64>()
                        .map_or_else(|_| Value::String((*s).to_owned()), Value::from)
                })
                .collect();
            vec![Value::Array(strings), Value::Array(scalars)]
        }
        Value::Null => {
            let mut values = Vec::new();
            values.extend(number());
            values.extend(parse_bool(text).map(Value::Bool));
            values.push(Value::String(text.to_owned()));
            values
        }
        Value::Object(_) => {
            return Err("is set by parameters of its own, not as one value".to_owned());
        }
    })
}

/// What a parameter expects, for the message of a value its field refuses.
fn form(current: &Value, target: &Target) -> &'static str {
    match (target, current) {
        (Target::Duration(_), _) => "a duration with its unit, such as 2s or 500ms",
        (_, Value::Bool(_)) => "true or false (or 1/0, yes/no)",
        (_, Value::Number(_)) => "a whole number in the field's range",
        (_, Value::Array(_)) => "a comma-separated list",
        _ => "a value of the field's type",
    }
}

fn parse_bool(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn to_object<T: Serialize>(config: &T) -> Result<Map<String, Value>> {
    match serde_json::to_value(config) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Error::new(
            ErrorKind::Config,
            "a config set from URL parameters is a struct",
        )),
        Err(e) => {
            Err(Error::new(ErrorKind::Config, "the config does not serialize").with_source(e))
        }
    }
}

#[cfg(test)]
#[path = "url_params_tests.rs"]
mod tests;
