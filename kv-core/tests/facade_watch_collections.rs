//! The typed facade on MemStore: typed watches and collection handles.

mod facade_keys;

use facade_keys::*;
use futures::StreamExt;
use keyplane_core::keyspace::{
    Key, ListOptions, SetPage, TypedBatch, TypedEvent, TypedWatch, Versioned,
};
use keyplane_core::{CollectionOp, CompareOp, ErrorKind, Event};
use std::time::Duration;

/// The next batch; a watch that stays silent fails the test instead of hanging it.
async fn next<K, V>(watch: &mut TypedWatch<K, V>) -> TypedBatch<K, V> {
    tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("no batch within 10 s")
        .expect("the watch ended")
        .expect("the watch failed")
}

#[tokio::test]
async fn a_typed_watch_parses_keys_and_reports_what_it_cannot_type() {
    let (typed, root) = store();
    let raw = typed.store().clone();
    let start = raw.revision().await.unwrap() + 1;
    let dir = TenantDbDir {
        root: root.clone(),
        id: 1,
    };
    let mut watch = typed.watch(&dir, Some(start)).await.unwrap();

    let key = TenantDbKey {
        root: root.clone(),
        id: 1,
        service: name("mysql"),
    };
    let rev_put = typed.put(&key, &db("h1")).await.unwrap();
    // A sibling tenant sharing the digit: outside the directory, never seen.
    let sibling = TenantDbKey {
        root: root.clone(),
        id: 10,
        service: name("mysql"),
    };
    typed.put(&sibling, &db("h10")).await.unwrap();
    let bad_key = format!("{root}/tenants/1/database/MySQL");
    raw.put(bad_key.as_bytes(), b"{}", Default::default())
        .await
        .unwrap();
    raw.put(key.encode().as_bytes(), b"not json", Default::default())
        .await
        .unwrap();
    raw.delete(key.encode().as_bytes()).await.unwrap();

    let batch = next(&mut watch).await;
    assert_eq!(batch.revision, rev_put);
    match &batch.events[..] {
        [
            TypedEvent::Put {
                key: k,
                value: Versioned {
                    value, version: 1, ..
                },
            },
        ] => {
            assert_eq!(k, &key);
            assert_eq!(value, &db("h1"));
        }
        other => panic!("unexpected {other:?}"),
    }

    let batch = next(&mut watch).await;
    match &batch.events[..] {
        [TypedEvent::Unreadable { event, error }] => {
            assert_eq!(event.key(), bad_key.as_bytes());
            assert!(matches!(**event, Event::Put { .. }));
            assert_eq!(error.kind(), ErrorKind::InvalidKey);
        }
        other => panic!("unexpected {other:?}"),
    }

    let batch = next(&mut watch).await;
    match &batch.events[..] {
        [TypedEvent::Unreadable { event, error }] => {
            assert_eq!(event.key(), key.encode().as_bytes());
            assert_eq!(error.kind(), ErrorKind::Codec);
        }
        other => panic!("unexpected {other:?}"),
    }

    let batch = next(&mut watch).await;
    match &batch.events[..] {
        [TypedEvent::Delete { key: k }] => assert_eq!(k, &key),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn one_transaction_is_one_typed_batch() {
    let (typed, root) = store();
    let start = typed.store().revision().await.unwrap() + 1;
    let dir = TenantDbDir {
        root: root.clone(),
        id: 2,
    };
    let mut watch = typed.watch(&dir, Some(start)).await.unwrap();
    let a = TenantDbKey {
        root: root.clone(),
        id: 2,
        service: name("a"),
    };
    let b = TenantDbKey {
        root: root.clone(),
        id: 2,
        service: name("b"),
    };
    let mut txn = typed.txn();
    txn.put(&a, &db("a")).create(&b, &db("b"));
    let outcome = txn.commit().await.unwrap();
    assert!(outcome.succeeded);

    let batch = next(&mut watch).await;
    assert_eq!(batch.revision, outcome.revision);
    let keys: Vec<&TenantDbKey> = batch
        .events
        .iter()
        .map(|e| match e {
            TypedEvent::Put { key, .. } => key,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(keys, [&a, &b]);
}

#[tokio::test]
async fn a_key_watch_and_a_keyspace_watch() {
    let (typed, root) = store();
    let start = typed.store().revision().await.unwrap() + 1;
    let meta = TenantMetaKey {
        root: root.clone(),
        id: 5,
    };
    let mut by_key = typed.watch_key(&meta, Some(start)).await.unwrap();
    let mut by_space = typed
        .watch_keyspace::<TenantSpace>(Some(start))
        .await
        .unwrap();

    typed.put(&meta, &"ACME".to_string()).await.unwrap();
    let db_key = TenantDbKey {
        root: root.clone(),
        id: 5,
        service: name("pg"),
    };
    typed.put(&db_key, &db("pg")).await.unwrap();
    let stray = format!("{root}/stray");
    typed
        .store()
        .put(stray.as_bytes(), b"?", Default::default())
        .await
        .unwrap();

    match &next(&mut by_key).await.events[..] {
        [TypedEvent::Put { key, value }] => {
            assert_eq!(key, &meta);
            assert_eq!(value.value, "ACME");
        }
        other => panic!("unexpected {other:?}"),
    }

    let mut seen = Vec::new();
    while seen.len() < 3 {
        for event in next(&mut by_space).await.events {
            seen.push(event);
        }
    }
    match &seen[..] {
        [
            TypedEvent::Put {
                key: TenantSpace::Meta(m),
                value: v1,
            },
            TypedEvent::Put {
                key: TenantSpace::Db(d),
                value: v2,
            },
            TypedEvent::Unreadable { event, error },
        ] => {
            assert_eq!(m, &meta);
            assert_eq!(v1.value, b"ACME");
            assert_eq!(d, &db_key);
            assert_eq!(v2.value, br#"{"host":"pg","maxConnections":10}"#);
            assert_eq!(event.key(), stray.as_bytes());
            assert_eq!(error.kind(), ErrorKind::InvalidKey);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn revoking_a_lease_reaches_the_typed_watch_as_deletes() {
    let (typed, root) = store();
    let lease = typed
        .store()
        .lease_grant(Duration::from_secs(60))
        .await
        .unwrap()
        .id;
    let dir = TenantDbDir {
        root: root.clone(),
        id: 4,
    };
    let a = TenantDbKey {
        root: root.clone(),
        id: 4,
        service: name("a"),
    };
    let b = TenantDbKey {
        root: root.clone(),
        id: 4,
        service: name("b"),
    };
    typed.put_leased(&a, &db("a"), lease).await.unwrap();
    let mut txn = typed.txn();
    txn.put_leased(&b, &db("b"), lease);
    assert!(txn.commit().await.unwrap().succeeded);
    let versioned = typed.get_versioned(&b).await.unwrap().unwrap();
    assert_eq!(versioned.lease, Some(lease));

    let start = typed.store().revision().await.unwrap() + 1;
    let mut watch = typed.watch(&dir, Some(start)).await.unwrap();
    typed.store().lease_revoke(lease).await.unwrap();
    let mut deleted = Vec::new();
    while deleted.len() < 2 {
        for event in next(&mut watch).await.events {
            match event {
                TypedEvent::Delete { key } => deleted.push(key),
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    deleted.sort_by_key(|k| k.service.to_string());
    assert_eq!(deleted, [a.clone(), b]);
    assert!(!typed.exists(&a).await.unwrap());
}

#[tokio::test]
async fn set_handle_members_are_typed() {
    let (typed, root) = store();
    let key = ProfileSetKey {
        root,
        realm: name("prod"),
        provider: name("openai"),
    };
    let set = typed.set_at(&key);
    assert!(set.add(&"p1".to_string()).await.unwrap());
    assert!(set.add(&"p2".to_string()).await.unwrap());
    assert!(!set.add(&"p1".to_string()).await.unwrap());
    assert!(set.contains(&"p2".to_string()).await.unwrap());
    assert!(!set.contains(&"p3".to_string()).await.unwrap());
    assert_eq!(set.members().await.unwrap(), ["p1", "p2"]);

    let mut opts = ListOptions::limit(1);
    let mut scanned = Vec::new();
    loop {
        let SetPage { members, next } = set.scan(opts.clone()).await.unwrap();
        scanned.extend(members);
        match next {
            Some(c) => opts = opts.after(c),
            None => break,
        }
    }
    scanned.sort();
    assert_eq!(scanned, ["p1", "p2"]);

    assert!(set.remove(&"p1".to_string()).await.unwrap());
    assert!(!set.remove(&"p1".to_string()).await.unwrap());
    assert_eq!(set.members().await.unwrap(), ["p2"]);

    // A member written by another program that is not UTF-8 is an error, not a gap.
    let op = CollectionOp::SetAdd {
        key: set.key().to_vec(),
        member: b"\xff".to_vec(),
    };
    typed.store().collection(op).await.unwrap();
    assert_eq!(set.members().await.unwrap_err().kind(), ErrorKind::Codec);

    // Deleting the key deletes the collection.
    typed.delete(&key).await.unwrap();
    assert!(set.members().await.unwrap().is_empty());
}

#[tokio::test]
async fn map_handle_fields_and_values_are_typed() {
    let (typed, root) = store();
    let key = InstanceMapKey {
        root,
        realm: name("prod"),
        profile: name("p1"),
    };
    let map = typed.map_at(&key);
    assert!(
        map.put(&"sub_mchid".to_string(), &"42".to_string())
            .await
            .unwrap()
    );
    assert!(
        !map.put(&"sub_mchid".to_string(), &"43".to_string())
            .await
            .unwrap()
    );
    assert!(
        map.put(&"token".to_string(), &"t".to_string())
            .await
            .unwrap()
    );
    assert_eq!(
        map.get(&"sub_mchid".to_string()).await.unwrap().as_deref(),
        Some("43")
    );
    assert_eq!(map.get(&"missing".to_string()).await.unwrap(), None);
    assert_eq!(
        map.all().await.unwrap(),
        [
            ("sub_mchid".to_string(), "43".to_string()),
            ("token".into(), "t".into())
        ]
    );
    assert!(map.remove(&"token".to_string()).await.unwrap());
    assert!(!map.remove(&"token".to_string()).await.unwrap());
    assert_eq!(map.all().await.unwrap().len(), 1);
}

#[tokio::test]
async fn list_handle_rotates_round_robin() {
    let (typed, root) = store();
    let key = ActiveListKey { root, group: 9 };
    let list = typed.list_at(&key);
    assert!(list.is_empty().await.unwrap());
    assert_eq!(list.rotate().await.unwrap(), None);
    for (i, item) in ["k1", "k2", "k3"].iter().enumerate() {
        assert_eq!(list.push(&item.to_string()).await.unwrap(), i as u64 + 1);
    }
    let mut picked = Vec::new();
    for _ in 0..4 {
        picked.push(list.rotate().await.unwrap().unwrap());
    }
    assert_eq!(picked, ["k1", "k2", "k3", "k1"]);
    assert_eq!(list.range(0, -1).await.unwrap(), ["k2", "k3", "k1"]);
    assert_eq!(list.range(-1, -1).await.unwrap(), ["k1"]);
    list.push(&"k2".to_string()).await.unwrap();
    assert_eq!(list.remove(&"k2".to_string()).await.unwrap(), 2);
    assert_eq!(list.len().await.unwrap(), 2);
}

#[tokio::test]
async fn a_transaction_writes_a_value_and_its_index_set_atomically() {
    let (typed, root) = store();
    let set_key = ProfileSetKey {
        root: root.clone(),
        realm: name("prod"),
        provider: name("x"),
    };
    let inst = TenantMetaKey {
        root: root.clone(),
        id: 1,
    };
    let set = typed.set_at(&set_key);
    let list = typed.list_at(&ActiveListKey {
        root: root.clone(),
        group: 1,
    });
    let map = typed.map_at(&InstanceMapKey {
        root,
        realm: name("prod"),
        profile: name("p1"),
    });

    // The create fails on the second run: neither the value nor the index member move.
    for (run, expect) in [("p1", true), ("p2", false)] {
        let mut txn = typed.txn();
        txn.create(&inst, &run.to_string())
            .set_add(&set, &run.to_string())
            .list_push(&list, &run.to_string())
            .map_put(&map, &"owner".to_string(), &run.to_string());
        assert_eq!(txn.commit().await.unwrap().succeeded, expect);
    }
    assert_eq!(set.members().await.unwrap(), ["p1"]);
    assert_eq!(list.range(0, -1).await.unwrap(), ["p1"]);
    assert_eq!(
        map.get(&"owner".to_string()).await.unwrap().as_deref(),
        Some("p1")
    );

    let mut txn = typed.txn();
    txn.set_remove(&set, &"p1".to_string())
        .map_delete(&map, &"owner".to_string())
        .delete(&inst);
    assert!(txn.commit().await.unwrap().succeeded);
    assert!(set.members().await.unwrap().is_empty());
    assert!(map.all().await.unwrap().is_empty());
    assert!(!typed.exists(&inst).await.unwrap());
}

#[tokio::test]
async fn typed_collection_compares_guard_a_transaction() {
    let (typed, root) = store();
    let set = typed.set_at(&ProfileSetKey {
        root: root.clone(),
        realm: name("prod"),
        provider: name("x"),
    });
    let list = typed.list_at(&ActiveListKey {
        root: root.clone(),
        group: 7,
    });
    let map = typed.map_at(&InstanceMapKey {
        root,
        realm: name("prod"),
        profile: name("p1"),
    });
    let owner = "owner".to_string();
    // Claim: only while the map has no owner, and only for a member of the set.
    let claim = |who: &str| {
        let mut txn = typed.txn();
        txn.when_map_lacks(&map, &owner)
            .when_set_contains(&set, &who.to_string())
            .map_put(&map, &owner, &who.to_string());
        txn
    };
    assert!(
        !claim("p1").commit().await.unwrap().succeeded,
        "not a member"
    );
    set.add(&"p1".to_string()).await.unwrap();
    set.add(&"p2".to_string()).await.unwrap();
    assert!(claim("p1").commit().await.unwrap().succeeded);
    assert!(
        !claim("p2").commit().await.unwrap().succeeded,
        "already owned"
    );
    let mut txn = typed.txn();
    txn.when_map_field_equals(&map, &owner, &"p1".to_string())
        .when_set_lacks(&set, &"p3".to_string())
        .when_list_len(&list, CompareOp::Less, 1)
        .list_push(&list, &"p1".to_string());
    assert!(txn.commit().await.unwrap().succeeded);
    let mut txn = typed.txn();
    txn.when_list_len(&list, CompareOp::Less, 1)
        .list_push(&list, &"p2".to_string());
    assert!(!txn.commit().await.unwrap().succeeded, "the list is full");
    let mut txn = typed.txn();
    txn.when_set_len(&set, CompareOp::Equal, 2)
        .when_map_len(&map, CompareOp::Equal, 1)
        .set_add(&set, &"p3".to_string());
    assert!(txn.commit().await.unwrap().succeeded);
    let mut txn = typed.txn();
    txn.when_set_len(&set, CompareOp::Equal, 2)
        .set_add(&set, &"p4".to_string());
    assert!(
        !txn.commit().await.unwrap().succeeded,
        "the set has three members now"
    );
    assert_eq!(list.range(0, -1).await.unwrap(), ["p1"]);
}

#[tokio::test]
async fn typed_transactions_read_every_collection_kind() {
    let (typed, root) = store();
    let set = typed.set_at(&ProfileSetKey {
        root: root.clone(),
        realm: name("prod"),
        provider: name("y"),
    });
    let list = typed.list_at(&ActiveListKey {
        root: root.clone(),
        group: 9,
    });
    let map = typed.map_at(&InstanceMapKey {
        root: root.clone(),
        realm: name("prod"),
        profile: name("p9"),
    });
    let lock = TenantMetaKey { root, id: 9 };
    typed.put(&lock, &"held".to_string()).await.unwrap();
    let mut txn = typed.txn();
    txn.set_add(&set, &"a".to_string())
        .map_put(&map, &"f".to_string(), &"1".to_string())
        .list_push(&list, &"x".to_string())
        .list_push(&list, &"y".to_string())
        .list_push(&list, &"x".to_string());
    txn.commit().await.unwrap();

    let mut txn = typed.txn();
    txn.when_lease(&lock, None);
    let contains = txn.set_contains(&set, &"a".to_string());
    let members = txn.set_members(&set);
    let field = txn.map_get(&map, &"f".to_string());
    let missing = txn.map_get(&map, &"g".to_string());
    let fields = txn.map_all(&map);
    let picked = txn.list_rotate(&list);
    txn.list_remove(&list, &"x".to_string());
    let items = txn.list_range(&list, 0, -1);
    let len = txn.list_len(&list);
    let outcome = txn.commit().await.unwrap();
    assert!(outcome.succeeded);
    assert!(outcome.collection(&contains).unwrap());
    assert_eq!(outcome.collection(&members).unwrap(), ["a"]);
    assert_eq!(outcome.collection(&field).unwrap().as_deref(), Some("1"));
    assert_eq!(outcome.collection(&missing).unwrap(), None);
    assert_eq!(
        outcome.collection(&fields).unwrap(),
        [("f".to_string(), "1".to_string())]
    );
    assert_eq!(outcome.collection(&picked).unwrap().as_deref(), Some("x"));
    assert_eq!(outcome.collection(&items).unwrap(), ["y"]);
    assert_eq!(outcome.collection(&len).unwrap(), 1);

    // A lease compare that fails runs the failure branch: the reads are not there.
    let lease = typed
        .store()
        .lease_grant(Duration::from_secs(30))
        .await
        .unwrap();
    let mut txn = typed.txn();
    txn.when_lease(&lock, Some(lease.id));
    let len = txn.list_len(&list);
    let outcome = txn.commit().await.unwrap();
    assert!(!outcome.succeeded);
    assert_eq!(
        outcome.collection(&len).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}
