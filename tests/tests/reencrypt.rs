//! Re-encryption after a key rotation, on every backend: every value under the prefix is
//! sealed again with the current key, bound to its key, leases kept, never a plaintext
//! written, a value changed meanwhile never overwritten; values that cannot be opened are
//! reported after the others are done; a second run writes nothing.

use futures::StreamExt;
use keyplane_core::keyspace::{EncryptionKey, Keyring, reencrypt_prefix};
use keyplane_core::layer::{Call, FaultLayer, Interceptor, StoreExt};
use keyplane_core::{ErrorKind, Event, PutOptions, RangeOptions, Result, Store, WatchOptions};
use keyplane_tests::harness::key_root;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Before the first transaction, another writer replaces `key` with a value sealed by the
/// current key.
struct Overwrites {
    store: Arc<dyn Store>,
    key: Vec<u8>,
    sealed: Vec<u8>,
    done: AtomicBool,
}

#[keyplane_core::raw::async_trait]
impl Interceptor for Overwrites {
    async fn before(&self, call: Call) -> Result<()> {
        if call == Call::Txn && !self.done.swap(true, Ordering::SeqCst) {
            self.store
                .put(&self.key, &self.sealed, PutOptions::default())
                .await?;
        }
        Ok(())
    }
}

async fn rotation_reencrypts_everything_once(store: Arc<dyn Store>) {
    let root = key_root("reenc");
    let key = |i: usize| format!("{root}{i:02}").into_bytes();
    let old = Keyring::new("2025", EncryptionKey::generate()).unwrap();
    let plaintext = |i: usize| format!("secret-{i:02}").into_bytes();
    let lease = store.lease_grant(Duration::from_secs(300)).await.unwrap();
    for i in 0..24 {
        let sealed = old.encrypt_for(&key(i), &plaintext(i)).unwrap();
        let opts = if i % 4 == 0 {
            PutOptions::default().lease(lease.id)
        } else {
            PutOptions::default()
        };
        store.put(&key(i), &sealed, opts).await.unwrap();
    }
    // Not encrypted, and sealed with a key the new keyring lacks.
    store
        .put(&key(90), b"plain config", PutOptions::default())
        .await
        .unwrap();
    let stranger = Keyring::new("lost", EncryptionKey::generate()).unwrap();
    store
        .put(
            &key(91),
            &stranger.encrypt_for(&key(91), b"x").unwrap(),
            PutOptions::default(),
        )
        .await
        .unwrap();
    let new = old.rotate("2026", EncryptionKey::generate()).unwrap();
    let mut watch = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    // Key 3 is rewritten by another writer while the re-encryption runs.
    let meanwhile = new.encrypt_for(&key(3), b"newer").unwrap();
    let raced = store
        .clone()
        .layer(FaultLayer::new(0).intercept(Overwrites {
            store: store.clone(),
            key: key(3),
            sealed: meanwhile.clone(),
            done: AtomicBool::new(false),
        }));
    let err = reencrypt_prefix(&raced, &new, root.as_bytes())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec, "{err}");
    assert!(err.to_string().contains("91"), "{err}");
    assert!(err.to_string().contains("reencrypted: 23"), "{err}");

    let entries = store
        .range(RangeOptions::prefix(&root))
        .await
        .unwrap()
        .entries;
    assert_eq!(entries.len(), 26);
    for (i, entry) in entries.iter().take(24).enumerate() {
        assert_eq!(entry.key, key(i));
        assert_eq!(Keyring::envelope_key_id(&entry.value).unwrap(), "2026");
        let expected = if i == 3 {
            b"newer".to_vec()
        } else {
            plaintext(i)
        };
        assert_eq!(new.decrypt_for(&entry.key, &entry.value).unwrap(), expected);
        assert_eq!(entry.lease.is_some(), i % 4 == 0, "{i}: the lease is kept");
    }
    assert_eq!(entries[24].value, b"plain config");
    // Only sealed values were ever written.
    let mut writes = 0;
    while writes < 24 {
        let batch = tokio::time::timeout(Duration::from_secs(30), watch.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        for event in batch.events {
            if let Event::Put { entry, .. } = event {
                writes += 1;
                assert!(Keyring::envelope_key_id(&entry.value).is_ok());
                assert!(!entry.value.windows(7).any(|w| w == b"secret-"));
            }
        }
    }
    // Once the stray value is gone, a second run finds everything current and writes nothing.
    store.delete(&key(91)).await.unwrap();
    let revisions = |entries: Vec<keyplane_core::Entry>| -> Vec<i64> {
        entries.iter().map(|e| e.mod_revision).collect()
    };
    let before = revisions(
        store
            .range(RangeOptions::prefix(&root))
            .await
            .unwrap()
            .entries,
    );
    let report = reencrypt_prefix(store.as_ref(), &new, root.as_bytes())
        .await
        .unwrap();
    assert_eq!(
        (
            report.scanned,
            report.current,
            report.not_encrypted,
            report.reencrypted
        ),
        (25, 24, 1, 0)
    );
    let after = revisions(
        store
            .range(RangeOptions::prefix(&root))
            .await
            .unwrap()
            .entries,
    );
    assert_eq!(after, before, "the second run wrote nothing");
    // A ciphertext copied to another key does not open there.
    let copied = entries[1].value.clone();
    assert!(new.decrypt_for(&key(2), &copied).is_err());
}

keyplane_tests::on_every_backend!(rotation_reencrypts_everything_once);
