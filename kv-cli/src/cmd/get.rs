//! `kvctl get ADDRESS [--rev N]`: one key's value (as it was at revision N when asked) (pretty JSON when it is JSON) and metadata; for a key
//! whose value is a collection (SET, HASH, LIST), its members.

use super::Ctx;
use crate::address::Address;
use crate::error::{CliError, CliResult};
use crate::output::{Format, entry_json, outln, print_json, typed, value_text};
use crate::secrets::Shown;
use keyplane::{CollectionKind, CollectionOp, CollectionResult, KeyRange, RangeOptions, Store};
use serde_json::{Value, json};

pub(crate) async fn run(ctx: &Ctx, words: &[String], revision: Option<i64>) -> CliResult<()> {
    super::check_revision(revision)?;
    let key = Address::parse(words)?.key_bytes()?;
    let store = ctx.store().await?;
    let keyring = ctx.keyring()?;
    let described = describe(store.as_ref(), &key, revision, keyring.as_ref()).await?;
    let key = crate::keys::text(&key);
    match ctx.format {
        Format::Json => print_json(&described.json(&key)),
        Format::Table => described.print(&key),
    }
    Ok(())
}

/// What `get` found at a key: a plain entry (with its encrypted value opened or not), or a
/// collection's members.
pub(crate) enum Described {
    Plain {
        entry: keyplane::Entry,
        /// For a template whose values are encrypted: the plaintext, or the key id.
        shown: Option<Shown>,
    },
    Collection {
        /// `SET`, `HASH` or `LIST`.
        name: &'static str,
        /// The members (sorted), fields or items.
        value: Value,
    },
}

/// Reads `key` as `get` shows it: a collection's members when its template holds one, else
/// the entry (at `revision` when given), an encrypted value opened with `keyring` when one
/// is given.
///
/// # Errors
/// Exit code 5 when the key (or collection) is not there; 2 for a collection read at a
/// revision, or an encrypted value the keyring cannot open; backend errors.
pub(crate) async fn describe<K: AsRef<[u8]> + ?Sized>(
    store: &dyn Store,
    key: &K,
    revision: Option<i64>,
    keyring: Option<&keyplane::keyspace::Keyring>,
) -> CliResult<Described> {
    let bytes = key.as_ref();
    let text = std::str::from_utf8(bytes).ok();
    let parsed = text.and_then(|t| crate::catalog::parse_any(t).ok());
    let key = crate::keys::text(bytes);
    // The key itself where it is text (a schema's key always is), else as printed.
    let name = text.unwrap_or(&key);
    let kind = parsed.as_ref().and_then(crate::values::collection_kind);
    if let Some(kind) = kind {
        if revision.is_some() {
            return Err(CliError::invalid(format!(
                "{key:?} holds a {kind:?}: a collection's members are read at the current revision only (`kvctl ls --rev N` gives its size then)"
            )));
        }
        return collection(store, name, kind).await;
    }
    let entry = match revision {
        None => store.get(bytes).await?,
        Some(revision) => {
            let opts = RangeOptions::new(KeyRange::Key(bytes.to_vec())).at_revision(revision);
            store.range(opts).await?.entries.into_iter().next()
        }
    };
    let entry = entry.ok_or_else(|| match revision {
        Some(revision) => CliError::not_found(format!(
            "key \"{key}\" did not exist at revision {revision}"
        )),
        None => CliError::not_found(format!("key \"{key}\" not found")),
    })?;
    let encrypted = parsed.as_ref().is_some_and(crate::values::is_encrypted);
    let shown = if encrypted {
        Some(crate::secrets::show(name, &entry.value, keyring)?)
    } else {
        None
    };
    Ok(Described::Plain { entry, shown })
}

impl Described {
    /// The JSON `get -o json` prints.
    pub(crate) fn json(&self, key: &str) -> Value {
        match self {
            Described::Plain { entry, shown } => {
                let mut object = entry_json(entry, true);
                match shown {
                    Some(Shown::Plain(plain)) => {
                        object["value"] = crate::output::value_json(plain);
                        object["decrypted"] = Value::Bool(true);
                    }
                    Some(Shown::Sealed { key_id }) => {
                        object["value"] = Value::Null;
                        object["encrypted"] = json!({ "key_id": key_id });
                    }
                    None => {}
                }
                object
            }
            Described::Collection { name, value } => {
                let address = typed(key).map(|(a, _)| a).unwrap_or_default();
                json!({ "key": key, "type": address, "collection": name, "value": value })
            }
        }
    }

    /// The text `get` prints.
    fn print(&self, key: &str) {
        match self {
            Described::Plain { entry, shown } => {
                outln!("key:      {key}");
                if let Some((address, fields)) = typed(key) {
                    let fields: Vec<String> =
                        fields.iter().map(|(n, v)| format!("{n}={v}")).collect();
                    outln!("type:     {address} {}", fields.join(" "));
                }
                outln!(
                    "revision: create {} mod {} version {}",
                    entry.create_revision,
                    entry.mod_revision,
                    entry.version
                );
                if let Some(lease) = entry.lease {
                    outln!("lease:    {lease}");
                }
                match shown {
                    Some(Shown::Plain(plain)) => outln!("{}", value_text(plain)),
                    Some(Shown::Sealed { key_id }) => outln!(
                        "(encrypted with key id {key_id}; give --keyring FILE or KVCTL_KEYRING to decrypt)"
                    ),
                    None => outln!("{}", value_text(&entry.value)),
                }
            }
            Described::Collection { name, value } => {
                let address = typed(key).map(|(a, _)| a).unwrap_or_default();
                outln!("key:      {key}");
                outln!("type:     {address} ({name})");
                outln!(
                    "{}",
                    serde_json::to_string_pretty(value).unwrap_or_default()
                );
            }
        }
    }
}

/// A collection's members: a SET's (sorted), a HASH's fields, a LIST's items.
async fn collection(store: &dyn Store, key: &str, kind: CollectionKind) -> CliResult<Described> {
    let name = match kind {
        CollectionKind::Set => "SET",
        CollectionKind::Map => "HASH",
        CollectionKind::List => "LIST",
    };
    let op = CollectionOp::read_all(key.as_bytes(), kind);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let value = match store.collection(op).await? {
        CollectionResult::Members(mut members) if !members.is_empty() => {
            // A set has no order; sorted, its listing is stable across backends.
            members.sort();
            Value::Array(members.iter().map(|m| Value::String(text(m))).collect())
        }
        CollectionResult::Items(members) if !members.is_empty() => {
            Value::Array(members.iter().map(|m| Value::String(text(m))).collect())
        }
        CollectionResult::Fields(fields) if !fields.is_empty() => fields
            .iter()
            .map(|(f, v)| (text(f), Value::String(text(v))))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        _ => {
            return Err(CliError::not_found(format!(
                "{name} {key:?} not found (or empty)"
            )));
        }
    };
    Ok(Described::Collection { name, value })
}
