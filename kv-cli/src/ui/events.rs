//! `GET /api/events?prefix=P`: live changes under a prefix as server-sent events, one JSON
//! event per message as `kvctl watch -o json` prints it (plain keys and collection changes).
//!
//! On sled, which one process at a time may hold, the store is opened for each poll
//! ([`SLED_POLL`](crate::store::SLED_POLL)) and closed in between, as `kvctl watch` does.

use super::Ui;
use axum::extract::{Query, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::{Stream, StreamExt};
use keyplane_core::WatchOptions;
use serde::Deserialize;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::mpsc;

#[derive(Deserialize)]
pub(super) struct EventsQuery {
    #[serde(default)]
    prefix: String,
}

/// The stream of changes under the prefix: a `ready` message once every later change will
/// be sent, then `change` messages, and an `error` message before it ends when the watch
/// fails.
pub(super) async fn events(
    State(ui): State<Arc<Ui>>,
    Query(q): Query<EventsQuery>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let (tx, rx) = mpsc::channel::<Value>(256);
    tokio::spawn(follow(ui, q.prefix, tx));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let item = rx.recv().await?;
        let name = if item.get("error").is_some() {
            "error"
        } else if item.get("ready").is_some() {
            "ready"
        } else {
            "change"
        };
        Some((
            Ok(SseEvent::default().event(name).data(item.to_string())),
            rx,
        ))
    });
    Sse::new(stream.boxed()).keep_alive(KeepAlive::default())
}

/// Sends every change under `prefix` from now on until the page goes away; an error
/// message when the watch fails.
async fn follow(ui: Arc<Ui>, prefix: String, tx: mpsc::Sender<Value>) {
    let result = if ui.shared.is_some() {
        follow_live(&ui, &prefix, &tx).await
    } else {
        follow_polling(&ui, &prefix, &tx).await
    };
    if let Err(e) = result {
        let _ = tx.send(json!({ "error": e.to_string() })).await;
    }
}

/// A watch on the store opened once.
async fn follow_live(
    ui: &Ui,
    prefix: &str,
    tx: &mpsc::Sender<Value>,
) -> crate::error::CliResult<()> {
    let store = ui.store().await?;
    let opts = WatchOptions::prefix(prefix.as_bytes()).with_collections();
    let mut stream = store.watch(opts).await?;
    if tx.send(json!({ "ready": true })).await.is_err() {
        return Ok(());
    }
    loop {
        let batch = tokio::select! {
            _ = tx.closed() => return Ok(()),
            batch = stream.next() => batch,
        };
        let Some(batch) = batch else {
            return Err(crate::error::CliError::new(
                crate::error::code::UNREACHABLE,
                "the watch ended",
            ));
        };
        let batch = batch?;
        let group = batch.group.as_deref().map(String::from_utf8_lossy);
        for event in &batch.events {
            let object = crate::cmd::watch::event_json(batch.revision, group.as_deref(), event);
            if tx.send(object).await.is_err() {
                return Ok(());
            }
        }
    }
}

/// Polls a sled store: each poll opens it, sends the changes since the last poll, and
/// closes it.
async fn follow_polling(
    ui: &Ui,
    prefix: &str,
    tx: &mpsc::Sender<Value>,
) -> crate::error::CliResult<()> {
    let mut next = ui.store().await?.revision().await? + 1;
    if tx.send(json!({ "ready": true })).await.is_err() {
        return Ok(());
    }
    loop {
        {
            let store = ui.store().await?;
            let opts = WatchOptions::prefix(prefix.as_bytes())
                .with_collections()
                .from_revision(next)
                .with_progress();
            let mut stream = store.watch(opts).await?;
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                next = next.max(batch.revision + 1);
                if batch.is_progress() {
                    break;
                }
                for event in &batch.events {
                    let object = crate::cmd::watch::event_json(batch.revision, None, event);
                    if tx.send(object).await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
        tokio::select! {
            _ = tx.closed() => return Ok(()),
            () = tokio::time::sleep(crate::store::SLED_POLL) => {}
        }
    }
}
