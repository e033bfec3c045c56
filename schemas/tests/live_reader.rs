//! The generic live reader on its own: every template of a keyspace decoded by the derived
//! decoder, a value that does not decode reported rather than dropped, and `wait_until`
//! bounded by its timeout.

use keyplane_core::keyspace::TypedStore;
use keyplane_core::{ErrorKind, PutOptions, Store};
use keyplane_mem::MemStore;
use keyplane_schemas::cronix::{CronixKeyspace, CronixValue, LockKey, LockName, NodeKey};
use keyplane_schemas::{LiveReader, ReaderOptions};
use std::sync::Arc;
use std::time::Duration;

fn typed() -> (Arc<dyn Store>, TypedStore) {
    let store: Arc<dyn Store> = Arc::new(MemStore::new());
    (store.clone(), TypedStore::new(store))
}

#[tokio::test]
async fn every_template_decodes_into_its_own_variant() {
    let (raw, typed) = typed();
    let reader = LiveReader::<CronixKeyspace>::start(&typed).await.unwrap();
    let lock = LockKey {
        name: LockName::new("nightly").unwrap(),
    };
    // A lock written by another program, in the document's layout: presence, empty value.
    let revision = raw
        .put(b"/Cronix/lock/nightly", b"", PutOptions::default())
        .await
        .unwrap()
        .revision;
    let view = reader.wait_for(revision).await.unwrap();
    assert_eq!(view.value(&lock), Some(&CronixValue::Lock(())));
    assert_eq!(view.unreadable(), 0);
}

#[tokio::test]
async fn a_value_that_does_not_decode_is_reported() {
    let (raw, typed) = typed();
    let reader = LiveReader::<CronixKeyspace>::start_with(&typed, ReaderOptions::default())
        .await
        .unwrap();
    let node = uuid::Uuid::new_v4();
    let key = format!("/Cronix/node/{node}");
    let revision = raw
        .put(key.as_bytes(), b"not json", PutOptions::default())
        .await
        .unwrap()
        .revision;
    let view = reader.wait_for(revision).await.unwrap();
    assert_eq!(view.value(&NodeKey { node }), None);
    assert_eq!(view.unreadable(), 1);
    assert_eq!(reader.health().revision, revision);
}

#[tokio::test(start_paused = true)]
async fn wait_until_gives_up_at_its_timeout() {
    let (_, typed) = typed();
    let reader = LiveReader::<CronixKeyspace>::start(&typed).await.unwrap();
    let err = reader
        .wait_until(|view| !view.nodes().is_empty(), Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
}

#[tokio::test]
async fn wait_until_returns_the_first_view_that_holds() {
    let (raw, typed) = typed();
    let reader = LiveReader::<CronixKeyspace>::start(&typed).await.unwrap();
    let writer = tokio::spawn(async move {
        raw.put(b"/Cronix/lock/a", b"", PutOptions::default())
            .await
            .unwrap();
        raw.put(b"/Cronix/lock/b", b"", PutOptions::default())
            .await
            .unwrap()
            .revision
    });
    let b = LockKey {
        name: LockName::new("b").unwrap(),
    };
    let view = reader
        .wait_until(|view| view.value(&b).is_some(), Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(view.revision(), writer.await.unwrap());
}
