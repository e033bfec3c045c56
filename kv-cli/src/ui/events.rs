//! `GET /api/events?prefix=P`: live changes under a prefix as server-sent events, one JSON
//! event per message as `kvctl watch -o json` prints it (plain keys and collection changes).
//!
//! Every batch's last message, and the `ready` message, carry the stream's position as their
//! event id (`r<next revision>`, or on a store sharded into groups `g` and each group's next
//! revision as JSON). A browser that lost the stream reconnects with that id as
//! `Last-Event-ID`, and the stream goes on from there: nothing missed, nothing repeated.
//!
//! On an embedded store (redb, sled), which one process at a time may hold, the store is opened for each poll
//! ([`EMBEDDED_POLL`](crate::store::EMBEDDED_POLL)) and closed in between, as `kvctl watch` does.

use super::state::Ui;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::{Stream, StreamExt};
use keyplane::{KeyRange, WatchOptions, WatchPosition};
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

/// One server-sent message: its name, its data, and the position after it when it ends a
/// batch.
struct Message {
    name: &'static str,
    data: Value,
    id: Option<String>,
}

impl Message {
    fn named(name: &'static str, data: Value) -> Self {
        Message {
            name,
            data,
            id: None,
        }
    }
}

/// The stream of changes under the prefix: a `ready` message once every later change will
/// be sent, then `change` messages, and an `error` message before it ends when the watch
/// fails. With a `Last-Event-ID` header, it goes on from that position.
pub(super) async fn events(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Query(q): Query<EventsQuery>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(decode);
    let (tx, rx) = mpsc::channel::<Message>(256);
    tokio::spawn(follow(ui, q.prefix, resume, tx));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let message = rx.recv().await?;
        let mut event = SseEvent::default()
            .event(message.name)
            .data(message.data.to_string());
        if let Some(id) = message.id {
            event = event.id(id);
        }
        Some((Ok(event), rx))
    });
    Sse::new(stream.boxed()).keep_alive(KeepAlive::default())
}

/// A position as an event id.
fn encode(position: &WatchPosition) -> String {
    match &position.groups {
        Some(groups) => {
            let groups: serde_json::Map<String, Value> = groups
                .iter()
                .map(|(g, r)| (String::from_utf8_lossy(g).into_owned(), json!(r)))
                .collect();
            format!("g{}", Value::Object(groups))
        }
        None => format!("r{}", position.next.unwrap_or(1)),
    }
}

/// The position of an event id, if it is one.
fn decode(id: &str) -> Option<WatchPosition> {
    if let Some(next) = id.strip_prefix('r') {
        return Some(WatchPosition {
            next: Some(next.parse().ok().filter(|n: &i64| *n >= 1)?),
            groups: None,
        });
    }
    let groups: serde_json::Map<String, Value> =
        serde_json::from_str(id.strip_prefix('g')?).ok()?;
    let groups = groups
        .into_iter()
        .map(|(g, r)| Some((g.into_bytes(), r.as_i64().filter(|r| *r >= 1)?)))
        .collect::<Option<_>>()?;
    Some(WatchPosition {
        next: None,
        groups: Some(groups),
    })
}

/// Sends every change under `prefix` from `resume` (or from now) until the page goes away;
/// an error message when the watch fails.
async fn follow(
    ui: Arc<Ui>,
    prefix: String,
    resume: Option<WatchPosition>,
    tx: mpsc::Sender<Message>,
) {
    let result = if ui.shared.is_some() {
        follow_live(&ui, &prefix, resume, &tx).await
    } else {
        follow_polling(&ui, &prefix, resume, &tx).await
    };
    if let Err(e) = result {
        let _ = tx
            .send(Message::named("error", json!({ "error": e.to_string() })))
            .await;
    }
}

/// Sends the change messages of `batch`, the last one with the position after it; false
/// when the page went away.
async fn send_batch(
    tx: &mpsc::Sender<Message>,
    position: &mut WatchPosition,
    batch: &keyplane::WatchBatch,
) -> bool {
    position.record(batch);
    let group = batch.group.as_deref().map(String::from_utf8_lossy);
    let last = batch.events.len().saturating_sub(1);
    for (i, event) in batch.events.iter().enumerate() {
        let data = crate::cmd::watch::event_json(batch.revision, group.as_deref(), event);
        let message = Message {
            name: "change",
            data,
            id: (i == last).then(|| encode(position)),
        };
        if tx.send(message).await.is_err() {
            return false;
        }
    }
    true
}

/// Sends the `ready` message, with the starting position; false when the page went away.
async fn send_ready(tx: &mpsc::Sender<Message>, position: &WatchPosition) -> bool {
    let ready = Message {
        name: "ready",
        data: json!({ "ready": true }),
        id: Some(encode(position)),
    };
    tx.send(ready).await.is_ok()
}

/// A watch on the store opened once.
async fn follow_live(
    ui: &Ui,
    prefix: &str,
    resume: Option<WatchPosition>,
    tx: &mpsc::Sender<Message>,
) -> crate::error::CliResult<()> {
    let store = ui.store().await?;
    let mut position = match resume {
        Some(position) => position,
        None => WatchPosition::now(store.as_ref(), &KeyRange::Prefix(prefix.into())).await?,
    };
    let opts = WatchOptions::prefix(prefix.as_bytes())
        .with_collections()
        .from_position(&position);
    let mut stream = store.watch(opts).await?;
    if !send_ready(tx, &position).await {
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
        if !send_batch(tx, &mut position, &batch?).await {
            return Ok(());
        }
    }
}

/// Polls an embedded store: each poll opens it, sends the changes since the last poll, and
/// closes it.
async fn follow_polling(
    ui: &Ui,
    prefix: &str,
    resume: Option<WatchPosition>,
    tx: &mpsc::Sender<Message>,
) -> crate::error::CliResult<()> {
    let mut position = match resume {
        Some(position) => position,
        None => {
            let range = KeyRange::Prefix(prefix.into());
            WatchPosition::now(ui.store().await?.as_ref(), &range).await?
        }
    };
    if !send_ready(tx, &position).await {
        return Ok(());
    }
    loop {
        {
            let store = ui.store().await?;
            let opts = WatchOptions::prefix(prefix.as_bytes())
                .with_collections()
                .from_position(&position)
                .with_progress();
            let mut stream = store.watch(opts).await?;
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                if batch.is_progress() {
                    position.record(&batch);
                    break;
                }
                if !send_batch(tx, &mut position, &batch).await {
                    return Ok(());
                }
            }
        }
        tokio::select! {
            _ = tx.closed() => return Ok(()),
            () = tokio::time::sleep(crate::store::EMBEDDED_POLL) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_through_event_ids() {
        let plain = WatchPosition {
            next: Some(42),
            groups: None,
        };
        assert_eq!(encode(&plain), "r42");
        assert_eq!(decode("r42"), Some(plain));
        let grouped = WatchPosition {
            next: None,
            groups: Some([(b"eu".to_vec(), 3), (b"us".to_vec(), 1)].into()),
        };
        assert_eq!(decode(&encode(&grouped)), Some(grouped));
        for bad in [
            "",
            "x",
            "r",
            "r0",
            "r-1",
            "rabc",
            "g",
            "g[]",
            "g{\"a\":0}",
            "g{\"a\":\"1\"}",
        ] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
