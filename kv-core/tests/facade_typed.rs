//! The typed facade on MemStore: single keys, codecs, listing, transactions.

mod facade_keys;

use facade_keys::*;
use keyplane_core::keyspace::{
    Encrypted, EncryptionKey, Json, Key, Keyring, ListOptions, ListPrefix, Prefix, Template, Text,
    TypedStore,
};
use keyplane_core::{CompareOp, ErrorKind, OpResult};
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

type Unencodable = BTreeMap<(u8, u8), u8>;

/// A key whose JSON codec cannot encode some values (tuple map keys).
#[derive(Debug, Clone, PartialEq)]
struct BadJsonKey {
    root: Name,
}

impl keyplane_core::keyspace::PlainKey for BadJsonKey {}

impl Key for BadJsonKey {
    const TEMPLATE: &'static str = "{root}/bad";
    type Value = Json<Unencodable>;
    fn template() -> &'static Template {
        static T: LazyLock<Template> =
            LazyLock::new(|| Template::key(BadJsonKey::TEMPLATE, None).unwrap());
        &T
    }
    fn write(&self, out: &mut String) {
        Self::template().write(out, &[&self.root]);
    }
    fn parse(raw: &str) -> Result<Self, keyplane_core::keyspace::KeyError> {
        let t = Self::template();
        let [root] = t.captures(raw)?;
        Ok(BadJsonKey {
            root: keyplane_core::keyspace::decode_field(t, raw, 0, "root", root)?,
        })
    }
    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![("root", self.root.to_string())]
    }
    fn field_infos() -> Vec<keyplane_core::keyspace::FieldInfo> {
        vec![keyplane_core::keyspace::FieldInfo::of::<Name>("root")]
    }
}

fn unencodable() -> Unencodable {
    BTreeMap::from([((1, 2), 3)])
}

fn db_key(root: &Name, id: u64, service: &str) -> TenantDbKey {
    TenantDbKey {
        root: root.clone(),
        id,
        service: name(service),
    }
}

#[tokio::test]
async fn get_put_delete_exists_round_trip() {
    let (typed, root) = store();
    let key = db_key(&root, 1, "mysql");
    assert_eq!(typed.get(&key).await.unwrap(), None);
    assert!(!typed.exists(&key).await.unwrap());

    let rev1 = typed.put(&key, &db("10.0.0.1")).await.unwrap();
    assert_eq!(typed.get(&key).await.unwrap(), Some(db("10.0.0.1")));
    let raw = typed
        .store()
        .get(key.encode().as_bytes())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(raw.value, br#"{"host":"10.0.0.1","maxConnections":10}"#);

    let rev2 = typed.put(&key, &db("10.0.0.2")).await.unwrap();
    let versioned = typed.get_versioned(&key).await.unwrap().unwrap();
    assert_eq!(versioned.value, db("10.0.0.2"));
    assert_eq!(versioned.create_revision, rev1);
    assert_eq!(versioned.mod_revision, rev2);
    assert_eq!(versioned.version, 2);
    assert!(typed.exists(&key).await.unwrap());

    let deleted = typed.delete(&key).await.unwrap();
    assert!(deleted.existed());
    // The delete is the store's newest write.
    assert!(deleted.revision > rev2);
    assert_eq!(typed.revision().await.unwrap(), deleted.revision);
    let again = typed.delete(&key).await.unwrap();
    assert!(!again.existed());
    // Nothing deleted: no new revision.
    assert_eq!(again.revision, deleted.revision);
    assert!(!typed.exists(&key).await.unwrap());
}

#[tokio::test]
async fn a_value_that_does_not_decode_is_a_codec_error_naming_the_key() {
    let (typed, root) = store();
    let key = db_key(&root, 1, "mysql");
    let raw_key = key.encode();
    typed
        .store()
        .put(raw_key.as_bytes(), b"{not json", Default::default())
        .await
        .unwrap();
    let err = typed.get(&key).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec);
    assert!(
        err.context()
            .iter()
            .any(|(k, v)| *k == "key" && *v == raw_key)
    );
}

#[tokio::test]
async fn an_encoding_failure_writes_nothing() {
    let (typed, root) = store();
    let key = BadJsonKey { root: root.clone() };
    let before = typed.store().revision().await.unwrap();
    let err = typed.put(&key, &unencodable()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec);
    assert!(!typed.exists(&key).await.unwrap());

    // In a transaction, the good ops are not sent either.
    let good = db_key(&root, 1, "mysql");
    let mut txn = typed.txn();
    txn.create(&good, &db("h")).put(&key, &unencodable());
    assert_eq!(txn.commit().await.unwrap_err().kind(), ErrorKind::Codec);
    assert!(!typed.exists(&good).await.unwrap());
    assert_eq!(typed.store().revision().await.unwrap(), before);
}

#[derive(keyplane_core::keyspace::Prefix, Debug, Clone, PartialEq)]
#[kv(template = "{root}/secrets/", key = SecretKey)]
struct SecretsDir {
    root: Name,
}

/// A set whose members are sealed one by one.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "{root}/sealed-tokens", set = Encrypted<Text>)]
struct SealedTokens {
    root: Name,
}

/// Encrypted keys take their keyring from the typed store, on every path: single keys,
/// listing, watching, transactions and collection handles.
#[tokio::test]
async fn encrypted_values_take_the_keyring_from_the_typed_store() {
    use futures::StreamExt;
    let (bare, root) = store();
    let ring = Arc::new(Keyring::new("k1", EncryptionKey::generate()).unwrap());
    let typed = bare.clone().with_codec_state(ring.clone());
    let key = SecretKey {
        root: root.clone(),
        service: name("pool"),
    };
    let dir = SecretsDir { root: root.clone() };
    let start = typed.revision().await.unwrap() + 1;
    let mut watch = typed.watch(&dir, Some(start)).await.unwrap();
    typed.put(&key, &db("vault.internal")).await.unwrap();

    let raw = typed
        .store()
        .get(key.encode().as_bytes())
        .await
        .unwrap()
        .unwrap();
    assert!(!raw.value.windows(5).any(|w| w == b"vault"));
    assert_eq!(Keyring::envelope_key_id(&raw.value).unwrap(), "k1");
    assert_eq!(typed.get(&key).await.unwrap(), Some(db("vault.internal")));
    let page = typed.list(&dir, ListOptions::limit(10)).await.unwrap();
    assert_eq!(page.items.len(), 1, "{:?}", page.skipped);
    assert_eq!(page.items[0].1.value, db("vault.internal"));
    let batch = watch.next().await.unwrap().unwrap();
    assert!(matches!(&batch.events[0],
        keyplane_core::keyspace::TypedEvent::Put { value, .. } if value.value == db("vault.internal")));

    // In a transaction: the write is sealed, the read opened.
    let mut txn = typed.txn();
    txn.put(&key, &db("vault.other"));
    let read = txn.get(&key);
    let outcome = txn.commit().await.unwrap();
    assert_eq!(
        outcome.read(&read).unwrap().map(|v| v.value),
        Some(db("vault.other"))
    );

    // A collection handle seals each member.
    let tokens = typed.set_at(&SealedTokens { root: root.clone() });
    assert!(tokens.add(&"t-1".to_string()).await.unwrap());
    assert_eq!(tokens.members().await.unwrap(), ["t-1"]);

    // The plain JSON codec sees an envelope, not JSON; another keyring sees an unknown id.
    use keyplane_core::keyspace::Codec;
    let plain = Json::<DbConfig>::new().decode(&raw.value);
    assert_eq!(plain.unwrap_err().kind(), ErrorKind::Codec);
    let other = bare.clone().with_codec_state(Arc::new(
        Keyring::new("k2", EncryptionKey::generate()).unwrap(),
    ));
    let err = other.get(&key).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec);
    let built: Encrypted<Json<DbConfig>> = typed.codec::<SecretKey>().unwrap();
    assert_eq!(
        built.decode_for(&raw.key, &raw.value).unwrap(),
        db("vault.internal")
    );
    // Bound to its key: copied to another key, it does not open there.
    assert_eq!(
        built
            .decode_for(b"elsewhere", &raw.value)
            .unwrap_err()
            .kind(),
        ErrorKind::Codec
    );
}

/// Without a keyring, an encrypted key is refused with `Config` before anything is sent:
/// nothing is written, not even by the other ops of a transaction.
#[tokio::test]
async fn encrypted_keys_without_a_keyring_are_refused_and_write_nothing() {
    let (bare, root) = store();
    let key = SecretKey {
        root: root.clone(),
        service: name("pool"),
    };
    let before = bare.revision().await.unwrap();
    let config = |e: keyplane_core::Error| {
        assert_eq!(e.kind(), ErrorKind::Config, "{e}");
        assert!(e.to_string().contains("with_codec_state"), "{e}");
    };
    config(bare.put(&key, &db("h")).await.unwrap_err());
    config(bare.get(&key).await.unwrap_err());
    config(bare.codec::<SecretKey>().unwrap_err());
    let dir = SecretsDir { root: root.clone() };
    config(bare.list(&dir, ListOptions::limit(10)).await.unwrap_err());
    config(bare.watch(&dir, None).await.unwrap_err());

    let good = db_key(&root, 1, "mysql");
    let mut txn = bare.txn();
    txn.put(&good, &db("h")).put(&key, &db("h"));
    config(txn.commit().await.unwrap_err());
    let mut txn = bare.txn();
    txn.put(&good, &db("h"));
    let _read = txn.get(&key);
    config(txn.commit().await.unwrap_err());

    let tokens = bare.set_at(&SealedTokens { root: root.clone() });
    config(tokens.add(&"t-1".to_string()).await.unwrap_err());
    let mut txn = bare.txn();
    txn.put(&good, &db("h"))
        .set_add(&tokens, &"t-2".to_string());
    config(txn.commit().await.unwrap_err());

    assert_eq!(bare.revision().await.unwrap(), before);
    assert!(!bare.exists(&good).await.unwrap());
}

#[tokio::test]
async fn listing_a_directory_never_returns_a_sibling_sharing_its_digits() {
    let (typed, root) = store();
    for id in [1, 10, 11, 100] {
        for service in ["a", "b"] {
            typed
                .put(&db_key(&root, id, service), &db(&format!("{id}-{service}")))
                .await
                .unwrap();
        }
    }
    let dir = TenantDbDir {
        root: root.clone(),
        id: 1,
    };
    assert_eq!(dir.encode(), format!("{root}/tenants/1/database/"));
    let page = typed.list(&dir, ListOptions::limit(100)).await.unwrap();
    assert!(page.skipped.is_empty(), "{:?}", page.skipped);
    assert_eq!(page.next, None);
    let got: Vec<(u64, String, String)> = page
        .items
        .iter()
        .map(|(k, v)| (k.id, k.service.to_string(), v.value.host.clone()))
        .collect();
    assert_eq!(
        got,
        [(1, "a".into(), "1-a".into()), (1, "b".into(), "1-b".into())]
    );

    // Deleting the directory leaves tenant 10 and 11 alone.
    let done = typed.delete_prefix(&dir).await.unwrap();
    assert_eq!(done.deleted, 2);
    assert_eq!(typed.revision().await.unwrap(), done.revision);
    let ten = TenantDbDir {
        root: root.clone(),
        id: 10,
    };
    assert_eq!(
        typed
            .list(&ten, ListOptions::limit(10))
            .await
            .unwrap()
            .items
            .len(),
        2
    );
}

#[tokio::test]
async fn listing_pages_with_a_continuation() {
    let (typed, root) = store();
    let services = ["a", "b", "c", "d", "e"];
    for s in services {
        typed.put(&db_key(&root, 7, s), &db(s)).await.unwrap();
    }
    let dir = TenantDbDir { root, id: 7 };
    let mut opts = ListOptions::limit(2);
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let page = typed.list(&dir, opts.clone()).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 2);
        seen.extend(page.items.into_iter().map(|(k, _)| k.service.to_string()));
        match page.next {
            Some(next) => opts = ListOptions::limit(2).after(next),
            None => break,
        }
    }
    assert_eq!(seen, services);
    assert!((3..=4).contains(&pages), "{pages} pages");
    let err = typed.list(&dir, ListOptions::limit(0)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

#[tokio::test]
async fn keys_that_do_not_parse_or_decode_are_reported_not_dropped() {
    let (typed, root) = store();
    let raw = typed.store().clone();
    let meta = TenantMetaKey {
        root: root.clone(),
        id: 3,
    };
    typed.put(&meta, &"ACME".to_string()).await.unwrap();
    // Another key type in the same directory, a foreign key, and bad bytes under a meta key.
    typed
        .put(&db_key(&root, 3, "mysql"), &db("h"))
        .await
        .unwrap();
    raw.put(
        format!("{root}/tenants/3/Junk").as_bytes(),
        b"x",
        Default::default(),
    )
    .await
    .unwrap();
    let broken = TenantMetaKey {
        root: root.clone(),
        id: 3,
    };
    let dir = TenantDir {
        root: root.clone(),
        id: 3,
    };
    raw.put(
        format!("{root}/tenants/3/meta").as_bytes(),
        b"\xff",
        Default::default(),
    )
    .await
    .unwrap();
    let page = typed.list(&dir, ListOptions::limit(10)).await.unwrap();
    assert!(page.items.is_empty());
    let skipped: Vec<(String, ErrorKind)> = page
        .skipped
        .iter()
        .map(|s| (String::from_utf8(s.key.clone()).unwrap(), s.error.kind()))
        .collect();
    assert_eq!(
        skipped,
        [
            (format!("{root}/tenants/3/Junk"), ErrorKind::InvalidKey),
            (
                format!("{root}/tenants/3/database/mysql"),
                ErrorKind::InvalidKey
            ),
            (broken.encode(), ErrorKind::Codec),
        ]
    );
    // Skipped items are plain values: a clone is equal, another key or reason is not.
    let again = typed.list(&dir, ListOptions::limit(10)).await.unwrap();
    assert_eq!(again.skipped, page.skipped.clone());
    assert_ne!(page.skipped[0], page.skipped[1]);
    // The facade reports the store's revision, the one the page was read at.
    assert_eq!(typed.revision().await.unwrap(), page.revision);
}

#[tokio::test]
async fn create_puts_only_if_absent_and_the_failure_branch_reads_the_holder() {
    let (typed, root) = store();
    let key = TenantMetaKey { root, id: 1 };
    let mut txn = typed.txn();
    txn.create(&key, &"first".to_string());
    let outcome = txn.commit().await.unwrap();
    assert!(outcome.succeeded);

    let mut txn = typed.txn();
    txn.create(&key, &"second".to_string());
    let holder = txn.get_on_failure(&key);
    let unused = txn.get(&key);
    let outcome = txn.commit().await.unwrap();
    assert!(!outcome.succeeded);
    let held = outcome.read(&holder).unwrap().unwrap();
    assert_eq!(held.value, "first");
    assert_eq!(held.version, 1);
    assert_eq!(
        outcome.read(&unused).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(typed.get(&key).await.unwrap().as_deref(), Some("first"));
}

#[tokio::test]
async fn typed_compares_guard_optimistic_updates() {
    let (typed, root) = store();
    let a = TenantMetaKey {
        root: root.clone(),
        id: 1,
    };
    let b = TenantMetaKey {
        root: root.clone(),
        id: 2,
    };
    typed.put(&a, &"v1".to_string()).await.unwrap();
    let seen = typed.get_versioned(&a).await.unwrap().unwrap();

    // Compare-and-swap on the mod revision read: succeeds once, then is stale.
    for (expect, value) in [(true, "v2"), (false, "v3")] {
        let mut txn = typed.txn();
        txn.when_mod_revision(&a, CompareOp::Equal, seen.mod_revision)
            .put(&a, &value.to_string());
        assert_eq!(txn.commit().await.unwrap().succeeded, expect, "{value}");
    }
    assert_eq!(typed.get(&a).await.unwrap().as_deref(), Some("v2"));

    let run = |build: &dyn Fn(&mut keyplane_core::keyspace::TypedTxn)| {
        let mut txn = typed.txn();
        build(&mut txn);
        txn.put(&b, &"touched".to_string());
        async move { txn.commit().await }
    };
    assert!(
        run(&|t| {
            t.when_value_equals(&a, &"v2".to_string());
        })
        .await
        .unwrap()
        .succeeded
    );
    assert!(
        !run(&|t| {
            t.when_value_equals(&a, &"v1".to_string());
        })
        .await
        .unwrap()
        .succeeded
    );
    assert!(
        run(&|t| {
            t.when_exists(&a);
        })
        .await
        .unwrap()
        .succeeded
    );
    assert!(
        !run(&|t| {
            t.when_absent(&a);
        })
        .await
        .unwrap()
        .succeeded
    );
    assert!(
        run(&|t| {
            t.when_version(&a, CompareOp::Equal, 2);
        })
        .await
        .unwrap()
        .succeeded
    );
    assert!(
        !run(&|t| {
            t.when_version(&a, CompareOp::Greater, 2);
        })
        .await
        .unwrap()
        .succeeded
    );

    // Success-branch reads are typed; deletes run in the same transaction.
    let mut txn = typed.txn();
    let read = txn.get(&a);
    txn.delete(&b);
    let outcome = txn.commit().await.unwrap();
    assert_eq!(outcome.read(&read).unwrap().unwrap().value, "v2");
    assert!(matches!(
        outcome.results()[1],
        OpResult::Delete { deleted: 1 }
    ));
    assert!(!typed.exists(&b).await.unwrap());
}

#[tokio::test]
async fn a_transaction_writing_one_key_twice_is_refused_before_it_is_sent() {
    let (typed, root) = store();
    let key = TenantMetaKey { root, id: 1 };
    let mut txn = typed.txn();
    txn.put(&key, &"a".to_string()).put(&key, &"b".to_string());
    assert_eq!(
        txn.commit().await.unwrap_err().kind(),
        ErrorKind::TxnConflict
    );
    assert!(!typed.exists(&key).await.unwrap());
}

/// A faulty hand-written prefix: its encoding lacks the trailing separator, so as raw bytes
/// it would cover tenant 10 when asked for tenant 1.
#[derive(Debug, Clone, PartialEq)]
struct UnterminatedTenantDir {
    root: Name,
    id: u64,
}

impl ListPrefix for UnterminatedTenantDir {
    type Key = TenantMetaKey;
}

impl Prefix for UnterminatedTenantDir {
    const TEMPLATE: &'static str = "{root}/tenants/{id}/";
    fn template() -> &'static Template {
        static T: LazyLock<Template> =
            LazyLock::new(|| Template::prefix(UnterminatedTenantDir::TEMPLATE, None).unwrap());
        &T
    }
    fn write(&self, out: &mut String) {
        out.push_str(&format!("{}/tenants/{}", self.root, self.id));
    }
    fn parse(raw: &str) -> Result<Self, keyplane_core::keyspace::KeyError> {
        TenantDir::parse(raw).map(|d| UnterminatedTenantDir {
            root: d.root,
            id: d.id,
        })
    }
    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![("root", self.root.to_string()), ("id", self.id.to_string())]
    }
}

#[tokio::test]
async fn a_prefix_without_its_trailing_separator_is_refused_before_any_access() {
    let (typed, root) = store();
    let ten = TenantMetaKey {
        root: root.clone(),
        id: 10,
    };
    typed.put(&ten, &"tenant ten".to_string()).await.unwrap();
    let faulty = UnterminatedTenantDir {
        root: root.clone(),
        id: 1,
    };

    let err = typed
        .list(&faulty, ListOptions::limit(10))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidKey);
    assert_eq!(
        typed.watch(&faulty, None).await.unwrap_err().kind(),
        ErrorKind::InvalidKey
    );
    assert_eq!(
        typed.delete_prefix(&faulty).await.unwrap_err().kind(),
        ErrorKind::InvalidKey
    );
    let mut txn = typed.txn();
    txn.delete_prefix(&faulty);
    assert_eq!(
        txn.commit().await.unwrap_err().kind(),
        ErrorKind::InvalidKey
    );
    // Tenant 10 survived every attempt.
    assert_eq!(
        typed.get(&ten).await.unwrap().as_deref(),
        Some("tenant ten")
    );
}

#[test]
fn typed_store_debug_names_the_backend() {
    let typed = TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
    assert!(format!("{typed:?}").contains("memory"));
    let _: Text = Text;
}

mod rotate_get {
    use keyplane_core::keyspace::{ItemMaps, Key, SegmentCodec, Text, TypedStore};
    use keyplane_core::layer::{NamespaceLayer, StoreExt};
    use keyplane_core::{ErrorKind, Store, Txn, TxnOp};
    use std::sync::Arc;

    #[derive(Key, Debug, Clone, PartialEq)]
    #[kv(template = "g:{group}:active", list = SegmentCodec<u64>)]
    struct Active {
        group: u64,
    }

    #[derive(Key, Debug, Clone, PartialEq)]
    #[kv(template = "obj:{id}:v1", hash = Text)]
    struct Object {
        id: u64,
    }

    #[derive(Key, Debug, Clone, PartialEq)]
    #[kv(template = "o{id}:{id2}", hash = Text)]
    struct Twice {
        id: u64,
        id2: u64,
    }

    /// The pattern comes from two items' maps, even when an item's encoding shows elsewhere
    /// in its key (`obj:1:v1`) or the items share leading bytes (`17`, `18`); keys that do
    /// not share one pattern, or items that encode alike, are refused.
    #[test]
    fn item_maps_come_from_two_items_maps() {
        let typed = TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
        let list = typed.list_at(&Active { group: 1 });
        let object = |id| typed.map_at(&Object { id });
        for (a, b) in [(1, 2), (17, 18), (1, 11), (11, 1)] {
            let maps = ItemMaps::of(&list, (&a, object(a)), (&b, &object(b))).unwrap();
            assert_eq!((maps.prefix(), maps.suffix()), (&b"obj:"[..], &b":v1"[..]));
        }
        let twice = |id| typed.map_at(&Twice { id, id2: id });
        let err = ItemMaps::of(&list, (&7, twice(7)), (&8, &twice(8))).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        let err = ItemMaps::of(&list, (&7, object(7)), (&7, &object(7))).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        let other = typed.map_at(&Twice { id: 8, id2: 9 });
        let err = ItemMaps::of(&list, (&7, object(7)), (&8, &other)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    }

    /// Through a namespace, the maps are read inside it: the prefix gets the namespace too,
    /// and a map outside it with the same relative name is never read.
    #[tokio::test]
    async fn through_a_namespace_the_maps_are_the_namespaces() {
        let inner = Arc::new(keyplane_mem::MemStore::new());
        let ns: Arc<dyn Store> = Arc::new(inner.clone().layer(NamespaceLayer::new("t1/").unwrap()));
        let typed = TypedStore::new(ns);
        let outside = TypedStore::new(inner.clone());
        let status = "status".to_string();
        outside
            .map_at(&Object { id: 1 })
            .put(&status, &"outside".to_string())
            .await
            .unwrap();
        typed
            .map_at(&Object { id: 1 })
            .put(&status, &"inside".to_string())
            .await
            .unwrap();
        let list = typed.list_at(&Active { group: 1 });
        list.push(&1).await.unwrap();
        let maps = ItemMaps::of(
            &list,
            (&1, typed.map_at(&Object { id: 1 })),
            (&2, &typed.map_at(&Object { id: 2 })),
        )
        .unwrap();
        let got = list.rotate_get(&maps, &status).await.unwrap();
        assert_eq!(got, Some((1, Some("inside".to_string()))));
    }

    /// A transaction names the maps' prefix among its keys.
    #[test]
    fn a_txn_names_the_maps_prefix() {
        let txn = Txn::new().and_then([TxnOp::Collection(
            keyplane_core::CollectionOp::ListRotateGet {
                key: b"l".to_vec(),
                map_prefix: b"obj:".to_vec(),
                map_suffix: Vec::new(),
                field: b"f".to_vec(),
            },
        )]);
        assert_eq!(txn.keys().collect::<Vec<_>>(), [&b"l"[..], b"obj:"]);
    }
}
