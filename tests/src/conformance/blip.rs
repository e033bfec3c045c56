//! A dropped connection loses nothing: a watch and a [`Mirror`](keyplane_core::mirror::Mirror)
//! stay open across it, with each event once and in order, no `Compacted` and no relist.
//!
//! The case takes, besides the store, a [`Blip`]: what drops the store's connections to its
//! server the way a network blip, a proxy restart or an operator's `CLIENT KILL` does
//! (nothing for a store with no connection). The blip comes after writes that concurrent
//! writers issued at once (which a store may commit in groups), and again after writes one
//! after another.

use super::mirror::{Case, timed};
use super::support::EVENT_TIMEOUT;
use futures::StreamExt;
use futures::future::BoxFuture;
use keyplane_core::keyspace::{Key, Prefix};
use keyplane_core::{Event, PutOptions, Store, WatchOptions, WatchStream};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Drops every connection a store holds to its server, once, and returns when they are
/// gone (the store notices on its next use of each).
pub type Blip = Arc<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

/// A [`Blip`] for a store that holds no connection.
pub fn no_blip() -> Blip {
    Arc::new(|| Box::pin(async {}))
}

/// Writers at once, then one after another.
const WRITERS: u64 = 64;

/// A watch of a directory and a mirror of it stay open across dropped connections: every
/// write (concurrent ones, committed together or not, and later ones one at a time) reaches
/// both, the watch delivers each event once and in revision order and never ends, and the
/// mirror never lists the directory again and ends equal to the store.
pub async fn watch_and_mirror_survive_a_dropped_connection(store: Arc<dyn Store>, blip: Blip) {
    let case = Case::new(store.clone());
    let prefix = case.dir().encode().into_bytes();
    let mirror = case.mirror().await;
    let mut watch = store
        .watch(WatchOptions::prefix(&prefix))
        .await
        .expect("a watch of the directory");
    let mut written = BTreeMap::new();
    let mut seen = Seen::default();
    for round in 0..3u64 {
        // Concurrent writers: a store may commit them in groups.
        let writes = (0..WRITERS).map(|id| {
            let case = &case;
            async move { (id, put(case, id, &format!("r{round}")).await) }
        });
        for (id, revision) in futures::future::join_all(writes).await {
            written.insert(revision, id);
        }
        let last = *written.keys().next_back().expect("writes");
        seen.read_to(&mut watch, last).await;
        blip().await;
        // The next writes, one after another, then a blip after them too.
        for id in 0..4 {
            let revision = put(&case, WRITERS + id, &format!("r{round}")).await;
            written.insert(revision, WRITERS + id);
        }
        let last = *written.keys().next_back().expect("writes");
        seen.read_to(&mut watch, last).await;
        if round == 1 {
            blip().await;
        }
    }
    let last = *written.keys().next_back().expect("writes");
    for (revision, id) in &written {
        let key = case.key(*id).encode().into_bytes();
        assert_eq!(
            seen.keys.get(revision),
            Some(&key),
            "the watch's event of the write at {revision}"
        );
    }
    let view = timed("the mirror catching up", mirror.wait_for(last))
        .await
        .expect("the mirror follows the store");
    case.assert_exact(&view).await;
    let health = mirror.health();
    assert_eq!(
        health.relists, 0,
        "the mirror listed its directory again after a dropped connection that lost nothing"
    );
}

/// One write of `id`; a write cut off by the blip before its answer may have been applied,
/// so it is written again (its events, if any, are checked like any other).
async fn put(case: &Case, id: u64, value: &str) -> i64 {
    let key = case.key(id).encode().into_bytes();
    let mut attempts = 0;
    loop {
        match case
            .typed
            .store()
            .put(&key, value.as_bytes(), PutOptions::default())
            .await
        {
            Ok(put) => return put.revision,
            Err(e) if e.is_retryable() && attempts < 20 => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("put of item {id}: {}", e.chain()),
        }
    }
}

/// What the watch delivered: each event's revision and key, checked as it arrives.
#[derive(Default)]
struct Seen {
    /// The key of the event at each revision (one put per revision in this case).
    keys: BTreeMap<i64, Vec<u8>>,
    /// The last revision delivered.
    last: i64,
}

impl Seen {
    /// Reads the watch until it has delivered `revision`: each batch after the one before,
    /// each event once; the watch must not end.
    async fn read_to(&mut self, watch: &mut WatchStream, revision: i64) {
        while self.last < revision {
            let item = tokio::time::timeout(EVENT_TIMEOUT, watch.next())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "the watch delivered nothing past {} within {EVENT_TIMEOUT:?} \
                         (waiting for {revision})",
                        self.last
                    )
                });
            let batch = match item {
                Some(Ok(batch)) => batch,
                Some(Err(e)) => panic!(
                    "the watch ended after a dropped connection that lost nothing: {}",
                    e.chain()
                ),
                None => panic!("the watch ended without an error"),
            };
            if batch.events.is_empty() {
                continue;
            }
            assert!(
                batch.revision > self.last,
                "batch {} delivered after {}: out of order or twice",
                batch.revision,
                self.last
            );
            self.last = batch.revision;
            for event in &batch.events {
                let Event::Put { entry, .. } = event else {
                    panic!("an event this case did not write: {event:?}");
                };
                let twice = self.keys.insert(entry.mod_revision, entry.key.clone());
                assert!(twice.is_none(), "two events at {}", entry.mod_revision);
            }
        }
    }
}
