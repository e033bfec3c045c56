//! What every request of the UI shares ([`Ui`]), and how a failed request answers
//! ([`ApiError`]).

use crate::error::{CliError, CliResult, code};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use keyplane::Store;
use serde_json::json;
use std::sync::Arc;

/// What every request shares.
pub(crate) struct Ui {
    /// The store URL.
    pub(super) url: String,
    /// The keyring file that opens encrypted values, when one was given.
    pub(super) keyring: Option<String>,
    /// Whether writes are allowed (`--write`).
    pub(super) write: bool,
    /// The access token.
    pub(super) token: String,
    /// The store, opened once; `None` on an embedded
    /// store (redb, sled), which is open only while requests use it, so
    /// that other kvctl processes can use it in between.
    pub(super) shared: Option<Arc<dyn Store>>,
    /// On an embedded store, the store while some request holds it: requests at the same
    /// time share one open (redb and sled let a process open a database once).
    pub(super) in_use: tokio::sync::Mutex<std::sync::Weak<dyn Store>>,
}

impl Ui {
    /// The store for one request.
    pub(super) async fn store(&self) -> CliResult<Arc<dyn Store>> {
        if let Some(store) = &self.shared {
            return Ok(Arc::clone(store));
        }
        let mut in_use = self.in_use.lock().await;
        if let Some(store) = in_use.upgrade() {
            return Ok(store);
        }
        let store = crate::store::open(&self.url).await?;
        *in_use = Arc::downgrade(&store);
        Ok(store)
    }

    /// The keyring of `--keyring`, if one was given.
    pub(super) fn keyring(&self) -> CliResult<Option<keyplane::keyspace::Keyring>> {
        self.keyring
            .as_deref()
            .map(crate::secrets::load)
            .transpose()
    }

    /// Refuses a write without `--write`.
    pub(super) fn writable(&self) -> Result<(), ApiError> {
        if self.write {
            return Ok(());
        }
        Err(ApiError(
            StatusCode::FORBIDDEN,
            "read-only: start kvctl ui with --write to change the store".to_owned(),
        ))
    }
}

/// A failed request: its status and the message `kvctl` would print.
pub(crate) struct ApiError(pub(super) StatusCode, pub(super) String);

impl From<CliError> for ApiError {
    fn from(e: CliError) -> Self {
        let status = match e.code {
            code::NOT_FOUND => StatusCode::NOT_FOUND,
            code::INVALID => StatusCode::BAD_REQUEST,
            code::UNREACHABLE => StatusCode::SERVICE_UNAVAILABLE,
            code::CONFLICT => StatusCode::CONFLICT,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(status, e.to_string())
    }
}

impl From<keyplane::Error> for ApiError {
    fn from(e: keyplane::Error) -> Self {
        CliError::from(e).into()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, axum::Json(json!({ "error": self.1 }))).into_response()
    }
}
