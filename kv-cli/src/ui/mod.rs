//! `kvctl ui [--listen ADDR] [--write]`: a schema-aware browser for the store, served on
//! loopback.
//!
//! One page (HTML, CSS and JavaScript embedded in the binary, `page.html`) over a JSON API:
//! the key tree by directory, page by page ([`tree`]); one key with its typed address,
//! template, revisions, lease and decoded value; search by raw prefix or typed address; the
//! schemas; live changes from a watch as server-sent events ([`events`]); and, with
//! `--write`, edits, creation from a template's fields and deletes, checked exactly as
//! `kvctl put` checks them ([`api`]).
//!
//! Every request carries the random token printed in the page's URL (`?token=` or the
//! `X-Kvctl-Token` header); without it the answer is `401` and nothing is read. Without
//! `--write`, every write is refused with `403` before the store is touched.

mod api;
mod events;
mod state;
mod tree;

use state::{ApiError, Ui};

use crate::cmd::Ctx;
use crate::error::{CliError, CliResult, code};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use std::net::SocketAddr;
use std::sync::Arc;

/// The page: HTML, CSS and JavaScript in one file.
const PAGE: &str = include_str!("page.html");

/// Runs the server until interrupted (Ctrl-C), after printing the URL to open.
pub(crate) async fn run(ctx: &Ctx, listen: SocketAddr, write: bool) -> CliResult<()> {
    if !listen.ip().is_loopback() {
        eprintln!(
            "kvctl: serving on {listen}, beyond this machine; the token in the URL is the only guard"
        );
    }
    let shared = if crate::store::is_embedded(&ctx.url) {
        // Checked now, so that a bad path fails at start rather than on the first request.
        drop(ctx.store().await?);
        None
    } else {
        // On Redis, what other programs wrote under any prefix joins the listings.
        Some(ctx.store_for_listing("").await?)
    };
    let token = new_token()?;
    let ui = Arc::new(Ui {
        url: ctx.url.clone(),
        keyring: ctx.keyring.clone(),
        write,
        token,
        shared,
        in_use: tokio::sync::Mutex::new(std::sync::Weak::<keyplane::mem::MemStore>::new()),
    });
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| CliError::invalid(format!("cannot listen on {listen}: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::new(code::OTHER, format!("no local address: {e}")))?;
    // Installed before the address is printed: whoever reads it may interrupt at once.
    let mut interrupted = crate::interrupt::Interrupt::install()?;
    crate::output::outln!(
        "kvctl ui: open http://{addr}/?token={} ({})",
        ui.token,
        if write { "read-write" } else { "read-only" }
    );
    let app = router(Arc::clone(&ui));
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { interrupted.recv().await })
        .await
        .map_err(|e| CliError::new(code::OTHER, format!("the server failed: {e}")))
}

/// The routes, every one behind the token check.
/// The access token: 32 bytes (256 bits) from the operating system's random generator, in
/// lowercase hex.
fn new_token() -> CliResult<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| {
        CliError::new(
            code::OTHER,
            format!("no random bytes for the access token: {e}"),
        )
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn router(ui: Arc<Ui>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/info", get(api::info))
        .route("/api/tree", get(api::tree))
        .route(
            "/api/key",
            get(api::key)
                .put(api::put)
                .post(api::create)
                .delete(api::delete),
        )
        .route("/api/search", get(api::search))
        .route("/api/schema", get(api::schema))
        .route("/api/events", get(events::events))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&ui),
            require_token,
        ))
        .with_state(ui)
}

async fn page() -> Response {
    let mut response = Html(PAGE).into_response();
    // The token is in the page's URL: no referrer carries it elsewhere.
    response.headers_mut().insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// Lets a request through only with the token, in the query (`token=`) or the
/// `X-Kvctl-Token` header.
async fn require_token(State(ui): State<Arc<Ui>>, request: Request, next: Next) -> Response {
    let from_header = request
        .headers()
        .get("x-kvctl-token")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let from_query = request.uri().query().and_then(|q| {
        q.split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(name, _)| *name == "token")
            .map(|(_, value)| value.to_owned())
    });
    let given = from_header.or(from_query).unwrap_or_default();
    if !same(given.as_bytes(), ui.token.as_bytes()) {
        return ApiError(
            StatusCode::UNAUTHORIZED,
            "missing or wrong token: open the URL kvctl ui printed".to_owned(),
        )
        .into_response();
    }
    next.run(request).await
}

/// Compares in time that does not depend on where the bytes differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
        assert!(!same(b"", b"a"));
    }
}
