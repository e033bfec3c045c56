//! The JSON endpoints: the store, a level of the tree, one key, search, the schemas, and the
//! writes (with `--write`), each checked as the matching `kvctl` command checks it.

use super::state::{ApiError, Ui};
use crate::address::Address;
use crate::cmd::get::{Described, describe};
use crate::cmd::guard::{self, Guard};
use axum::Json;
use axum::extract::{Query, State};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Children per page of the tree, unless asked for fewer.
const PAGE: usize = 100;
/// The most children a page may ask for.
const MAX_PAGE: usize = 1000;

type Answer = Result<Json<Value>, ApiError>;

/// `GET /api/info`: the store and whether writes are allowed.
pub(super) async fn info(State(ui): State<Arc<Ui>>) -> Answer {
    let store = ui.store().await?;
    let caps = store.capabilities();
    Ok(Json(json!({
        "store": keyplane::raw::redact_url(&ui.url),
        "backend": caps.backend,
        "sharded": caps.sharding != keyplane::Sharding::Unsharded,
        "write": ui.write,
        "keyring": ui.keyring.is_some(),
    })))
}

#[derive(Deserialize)]
pub(super) struct TreeQuery {
    #[serde(default)]
    prefix: String,
    after: Option<String>,
    limit: Option<usize>,
}

/// `GET /api/tree?prefix=P[&after=CURSOR][&limit=N]`: one level of the tree under `P`.
pub(super) async fn tree(State(ui): State<Arc<Ui>>, Query(q): Query<TreeQuery>) -> Answer {
    let limit = q.limit.unwrap_or(PAGE).clamp(1, MAX_PAGE);
    let store = ui.store().await?;
    let (children, next) =
        super::tree::children(store.as_ref(), &q.prefix, q.after.as_deref(), limit).await?;
    Ok(Json(json!({
        "prefix": q.prefix,
        "children": children,
        "next": next,
    })))
}

#[derive(Deserialize)]
pub(super) struct KeyQuery {
    key: String,
}

/// `GET /api/key?key=K`: the key as `kvctl get -o json` shows it, with its template, its
/// fields and its directory.
pub(super) async fn key(State(ui): State<Arc<Ui>>, Query(q): Query<KeyQuery>) -> Answer {
    if q.key.is_empty() {
        return Err(crate::error::CliError::invalid("empty key").into());
    }
    let store = ui.store().await?;
    let keyring = ui.keyring()?;
    let described = describe(store.as_ref(), &q.key, None, keyring.as_ref()).await?;
    let mut object = described.json(&q.key);
    let parsed = crate::catalog::parse_any(&q.key).ok();
    object["template"] = json!(parsed.as_ref().map(|p| p.template));
    object["schema"] = json!(parsed.as_ref().map(|p| p.schema));
    object["read_only"] = json!(parsed.as_ref().is_some_and(|p| p.read_only));
    if let Some(parsed) = &parsed {
        object["fields"] = parsed
            .fields
            .iter()
            .map(|(n, v)| ((*n).to_owned(), json!(v)))
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    if let Described::Plain { entry, .. } = &described {
        object["value_text"] = json!(String::from_utf8_lossy(&entry.value));
    }
    object["writable"] = json!(
        ui.write
            && parsed.as_ref().is_some_and(|p| {
                !p.read_only
                    && crate::values::collection_kind(p).is_none()
                    && !crate::values::is_encrypted(p)
            })
    );
    Ok(Json(object))
}

#[derive(Deserialize)]
pub(super) struct SearchQuery {
    q: String,
}

/// `GET /api/search?q=Q`: a raw key or prefix, or a typed address (`tenant.meta id=1`),
/// resolved to the key it names (when it names a whole key that exists) and its directory.
pub(super) async fn search(State(ui): State<Arc<Ui>>, Query(q): Query<SearchQuery>) -> Answer {
    let words: Vec<String> = q.q.split_whitespace().map(str::to_owned).collect();
    if words.is_empty() {
        return Ok(Json(json!({ "prefix": "", "key": null })));
    }
    let address = Address::parse(&words)?;
    let prefix = address.prefix()?;
    let key = match &address {
        Address::Raw(raw) => Some(raw.clone()),
        Address::Typed { .. } => address.key().ok(),
    };
    let store = ui.store().await?;
    let key = match key {
        Some(key) if exists(store.as_ref(), &key).await? => Some(key),
        _ => None,
    };
    // The directory to open: the address's own for a typed one, the raw text's up to its
    // last separator for a raw one.
    let dir = match (&address, &key) {
        (Address::Raw(raw), _) => {
            let sep = super::tree::separator(raw);
            raw.rfind(sep)
                .map_or(String::new(), |i| raw[..=i].to_owned())
        }
        (Address::Typed { .. }, _) => prefix.clone(),
    };
    Ok(Json(json!({ "prefix": prefix, "dir": dir, "key": key })))
}

/// Whether `key` holds what its template says: a plain value, or a non-empty collection.
async fn exists(store: &dyn keyplane::Store, key: &str) -> crate::error::CliResult<bool> {
    match describe(store, key, None, None).await {
        Ok(_) => Ok(true),
        Err(e) if e.code == crate::error::code::NOT_FOUND => Ok(false),
        Err(e) => Err(e),
    }
}

/// `GET /api/schema`: every schema as `kvctl schema NAME -o json` shows it, the current
/// layouts first.
pub(super) async fn schema() -> Answer {
    let schemas: Vec<Value> = crate::catalog::every()
        .into_iter()
        .map(crate::cmd::schema::schema_json)
        .collect();
    Ok(Json(Value::Array(schemas)))
}

#[derive(Deserialize)]
pub(super) struct PutBody {
    key: String,
    value: String,
    /// Only overwrite the key at this mod revision (the one the page showed).
    mod_revision: Option<i64>,
}

/// `PUT /api/key` `{key, value[, mod_revision]}`: writes the key after the checks of
/// `kvctl put`; with `mod_revision`, only if the key is still at it.
pub(super) async fn put(State(ui): State<Arc<Ui>>, Json(body): Json<PutBody>) -> Answer {
    ui.writable()?;
    let template = crate::cmd::put::check(&body.key, body.value.as_bytes())?;
    let guard = body.mod_revision.map_or(Guard::None, Guard::ModRevision);
    let store = ui.store().await?;
    let done = guard::put(
        store.as_ref(),
        &body.key,
        body.value.as_bytes(),
        guard,
        None,
    )
    .await?;
    Ok(Json(
        json!({ "key": body.key, "revision": done.revision, "template": template }),
    ))
}

#[derive(Deserialize)]
pub(super) struct CreateBody {
    /// `schema.name`, as `kvctl` addresses a template.
    template: String,
    fields: BTreeMap<String, String>,
    value: String,
}

/// `POST /api/key` `{template, fields, value}`: creates the key a template's fields name,
/// after the checks of `kvctl put --create` (an existing key is a conflict, nothing
/// written).
pub(super) async fn create(State(ui): State<Arc<Ui>>, Json(body): Json<CreateBody>) -> Answer {
    ui.writable()?;
    let mut words = vec![body.template.clone()];
    words.extend(body.fields.iter().map(|(n, v)| format!("{n}={v}")));
    let key = Address::parse(&words)?.key()?;
    let template = crate::cmd::put::check(&key, body.value.as_bytes())?;
    let store = ui.store().await?;
    let done = guard::put(
        store.as_ref(),
        &key,
        body.value.as_bytes(),
        Guard::Create,
        None,
    )
    .await?;
    Ok(Json(
        json!({ "key": key, "revision": done.revision, "template": template }),
    ))
}

/// `DELETE /api/key?key=K`: deletes the key (a plain value or a collection).
pub(super) async fn delete(State(ui): State<Arc<Ui>>, Query(q): Query<KeyQuery>) -> Answer {
    ui.writable()?;
    if q.key.is_empty() {
        return Err(crate::error::CliError::invalid("empty key").into());
    }
    let store = ui.store().await?;
    if !guard::delete(store.as_ref(), &q.key, Guard::None).await? {
        return Err(crate::error::CliError::not_found(format!("key {:?} not found", q.key)).into());
    }
    Ok(Json(json!({ "key": q.key, "deleted": 1 })))
}
