//! Migrations ([`keyplane_core::migrate`]): plan, apply (batched, resumable, idempotent),
//! verify, finalize and rollback, never overwriting newer data in the new layout.

use super::support::{b, key, put, root, run, snapshot};
use keyplane_core::CollectionValue;
use keyplane_core::migrate::{Item, Mapping, Migration, Migrator, Phase, Value};
use keyplane_core::{CollectionOp, CollectionResult, ErrorKind, Store};
use std::sync::Arc;

/// `old//users/{id}` (JSON `{"name": .., "ftp": [..]}`) becomes `new/users/{id}` (the name)
/// and one `new/users/{id}/ftp/{user}` per FTP user; the set `old//groups/{g}` becomes the
/// map `new/groups/{g}` (member → "1"). A value that is not such JSON cannot be mapped; a
/// deeper key is not part of the old layout.
struct Layout {
    root: Vec<u8>,
}

impl Layout {
    fn k(&self, suffix: &str) -> Vec<u8> {
        key(&self.root, suffix)
    }
}

#[keyplane_core::raw::async_trait]
impl Migration for Layout {
    fn name(&self) -> &str {
        "layout"
    }

    fn sources(&self) -> Vec<Vec<u8>> {
        vec![self.k("old//users/"), self.k("old//groups/")]
    }

    async fn map(&self, old: &Item, _: &dyn Store) -> keyplane_core::Result<Mapping> {
        Ok(self.mapping(old))
    }
}

impl Layout {
    fn mapping(&self, old: &Item) -> Mapping {
        let rel = String::from_utf8_lossy(&old.key[self.root.len()..]).into_owned();
        if let Some(id) = rel.strip_prefix("old//users/") {
            if id.contains('/') {
                return Mapping::NotOld;
            }
            let Value::Plain(raw) = &old.value else {
                return Mapping::Unmappable("a user is a plain key".into());
            };
            let Ok(user) = serde_json::from_slice::<serde_json::Value>(raw) else {
                return Mapping::Unmappable("not JSON".into());
            };
            let Some(name) = user["name"].as_str() else {
                return Mapping::Unmappable("no name".into());
            };
            let mut items = vec![Item::plain(self.k(&format!("new/users/{id}")), name)];
            for ftp in user["ftp"].as_array().into_iter().flatten() {
                let ftp = ftp.as_str().unwrap_or_default();
                items.push(Item::plain(
                    self.k(&format!("new/users/{id}/ftp/{ftp}")),
                    "on",
                ));
            }
            return Mapping::To(items);
        }
        if let Some(group) = rel.strip_prefix("old//groups/") {
            let Value::Collection(CollectionValue::Set(members)) = &old.value else {
                return Mapping::Unmappable("a group is a set".into());
            };
            let fields = members.iter().map(|m| (m.clone(), b"1".to_vec()));
            return Mapping::To(vec![Item::new(
                self.k(&format!("new/groups/{group}")),
                Value::map(fields),
            )]);
        }
        Mapping::NotOld
    }
}

async fn user(store: &dyn Store, root: &[u8], id: u32, name: &str, ftp: &[&str]) {
    let value = serde_json::json!({ "name": name, "ftp": ftp }).to_string();
    put(store, &key(root, format!("old//users/{id}")), value).await;
}

async fn group(store: &dyn Store, root: &[u8], g: &str, members: &[&str]) {
    for m in members {
        run(
            store,
            CollectionOp::SetAdd {
                key: key(root, format!("old//groups/{g}")),
                member: b(m),
            },
        )
        .await;
    }
}

async fn fields(store: &dyn Store, key: Vec<u8>) -> Vec<(Vec<u8>, Vec<u8>)> {
    match run(store, CollectionOp::MapGetAll { key }).await {
        CollectionResult::Fields(f) => f,
        other => panic!("{other:?}"),
    }
}

fn migrator(store: &Arc<dyn Store>, root: &[u8]) -> Migrator {
    Migrator::new(
        store.clone(),
        Arc::new(Layout {
            root: root.to_vec(),
        }),
    )
    .with_state_key(key(root, "state"))
    .unwrap()
}

async fn value(store: &dyn Store, root: &[u8], suffix: &str) -> Option<Vec<u8>> {
    store
        .get(&key(root, suffix))
        .await
        .unwrap()
        .map(|e| e.value)
}

/// A whole migration: the plan writes nothing; apply creates every twin but leaves newer
/// data alone (a conflict) and counts twins already in place; a second apply writes
/// nothing; verify names the conflict and the unmappable item; finalize deletes exactly the
/// old items that verify; rollback is refused after it.
pub async fn migration_applies_verifies_and_finalizes(store: Arc<dyn Store>) {
    let root = root();
    for id in 1..=5 {
        user(&*store, &root, id, &format!("user{id}"), &["a", "b"]).await;
    }
    user(&*store, &root, 6, "six", &[]).await;
    put(&*store, &key(&root, "old//users/7"), "not json").await;
    put(&*store, &key(&root, "old//users/1/notes"), "not part of it").await;
    group(&*store, &root, "admins", &["1", "2"]).await;
    // Newer data already in the new layout: user 2's name changed; user 3 already moved.
    put(&*store, &key(&root, "new/users/2"), "renamed").await;
    put(&*store, &key(&root, "new/users/3"), "user3").await;

    let migrator = migrator(&store, &root);
    let before = snapshot(&*store, &root).await;
    let plan = migrator.plan().await.unwrap();
    assert_eq!(
        snapshot(&*store, &root).await,
        before,
        "a plan writes nothing"
    );
    assert_eq!(
        (plan.old, plan.created, plan.already),
        (8, 15, 1),
        "{plan:?}"
    );
    assert_eq!(plan.conflicts.len(), 1);
    assert_eq!(plan.conflicts[0].new, key(&root, "new/users/2"));
    assert_eq!(plan.unmappable.len(), 1);
    assert_eq!(plan.unmappable[0].key, key(&root, "old//users/7"));
    assert_eq!(migrator.phase().await.unwrap(), Phase::New);

    let applied = migrator.apply().await.unwrap();
    assert!(applied.complete);
    assert_eq!(
        (applied.created, applied.already, applied.conflicts.len()),
        (15, 1, 1),
        "{applied:?}"
    );
    assert_eq!(migrator.phase().await.unwrap(), Phase::Applied);
    assert_eq!(
        value(&*store, &root, "new/users/1").await.unwrap(),
        b"user1"
    );
    assert_eq!(
        value(&*store, &root, "new/users/5/ftp/b").await.unwrap(),
        b"on"
    );
    assert_eq!(
        value(&*store, &root, "new/users/2").await.unwrap(),
        b"renamed",
        "newer data is never overwritten"
    );
    assert_eq!(
        fields(&*store, key(&root, "new/groups/admins")).await,
        [(b("1"), b("1")), (b("2"), b("1"))]
    );

    let after = snapshot(&*store, &root).await;
    let again = migrator.apply().await.unwrap();
    assert_eq!((again.created, again.batches), (0, 0), "{again:?}");
    assert!(again.complete);
    assert_eq!(
        snapshot(&*store, &root).await,
        after,
        "a second apply writes nothing"
    );

    let verified = migrator.verify().await.unwrap();
    assert!(!verified.is_clean());
    assert_eq!(verified.checked, 17);
    assert!(verified.missing.is_empty());
    assert_eq!(verified.differs.len(), 1);
    assert_eq!(verified.differs[0].old, key(&root, "old//users/2"));
    assert_eq!(verified.unmappable.len(), 1);

    let finalized = migrator.finalize().await.unwrap();
    assert_eq!(finalized.deleted, 6, "{finalized:?}");
    let mut kept = finalized.kept.clone();
    kept.sort();
    assert_eq!(
        kept,
        [key(&root, "old//users/2"), key(&root, "old//users/7")]
    );
    assert!(value(&*store, &root, "old//users/1").await.is_none());
    assert!(value(&*store, &root, "old//users/1/notes").await.is_some());
    assert_eq!(migrator.phase().await.unwrap(), Phase::Finalized);
    let err = migrator.rollback().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let err = migrator.apply().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
}

/// An apply stopped after one batch resumes where it stopped; data written to the new
/// layout meanwhile is kept; a rollback deletes what the migration created except what was
/// changed since, and the migration can then run again from the start.
pub async fn migration_resumes_and_rolls_back(store: Arc<dyn Store>) {
    let root = root();
    for id in 1..=6 {
        user(&*store, &root, id, &format!("user{id}"), &["x"]).await;
    }
    group(&*store, &root, "ops", &["4"]).await;
    let finalize_early = migrator(&store, &root).finalize().await.unwrap_err();
    assert_eq!(finalize_early.kind(), ErrorKind::InvalidArgument);

    let first = migrator(&store, &root).page_size(2).max_batches(1);
    let partial = first.apply().await.unwrap();
    assert!(!partial.complete);
    assert_eq!((partial.batches, partial.old, partial.created), (1, 2, 4));
    assert_eq!(first.phase().await.unwrap(), Phase::Applying);
    assert!(value(&*store, &root, "new/users/3").await.is_none());

    // Meanwhile a newer program writes user 5 in the new layout, and changes user 1's twin.
    put(&*store, &key(&root, "new/users/5"), "five, newer").await;
    put(&*store, &key(&root, "new/users/1"), "one, edited").await;

    let rest = migrator(&store, &root).page_size(2).apply().await.unwrap();
    assert!(rest.complete);
    assert_eq!(rest.old, 5, "resumed after the first batch: {rest:?}");
    assert_eq!(rest.conflicts.len(), 1);
    assert_eq!(
        value(&*store, &root, "new/users/5").await.unwrap(),
        b"five, newer"
    );
    assert_eq!(
        value(&*store, &root, "new/users/6/ftp/x").await.unwrap(),
        b"on"
    );

    let rolled = migrator(&store, &root).rollback().await.unwrap();
    // Created: the names of users 1-4 and 6, the FTP keys of users 1-6, and the group: 12;
    // user 1's name was edited since, so it stays.
    assert_eq!(rolled.deleted, 11, "{rolled:?}");
    assert_eq!(rolled.kept, [key(&root, "new/users/1")]);
    let mut left: Vec<String> = snapshot(&*store, &root)
        .await
        .iter()
        .map(|e| String::from_utf8_lossy(&e.key[root.len()..]).into_owned())
        .filter(|k| k.starts_with("new/") || k.starts_with("state"))
        .collect();
    left.sort();
    assert_eq!(left, ["new/users/1", "new/users/5"]);
    assert!(
        fields(&*store, key(&root, "new/groups/ops"))
            .await
            .is_empty(),
        "the created map is gone"
    );
    assert_eq!(migrator(&store, &root).phase().await.unwrap(), Phase::New);
    assert!(
        value(&*store, &root, "old//users/3").await.is_some(),
        "old items stay"
    );

    let again = migrator(&store, &root).apply().await.unwrap();
    assert_eq!((again.created, again.conflicts.len()), (11, 2), "{again:?}");
}
