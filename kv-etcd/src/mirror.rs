//! `PrefixMirror`: list a prefix, then watch it from the list's revision, and list again when
//! the watch falls behind a compaction. Works on any [`Store`].

use futures::StreamExt;
use keyplane_core::{
    Entry, ErrorKind, Event, KeyRange, RangeOptions, Result, Store, WatchOptions, WatchStream,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Page size of the listings.
const PAGE: usize = 1000;

/// A local copy of every key under a prefix, kept up to date by a watch.
///
/// [`PrefixMirror::start`] lists the prefix page by page, then watches from just after the
/// first page's revision; [`PrefixMirror::next`] applies one batch of changes. Events older
/// than the copy of a key (the pages are read at increasing revisions) are ignored, so the
/// mirror converges to the store's state. When the watch reports
/// [`ErrorKind::Compacted`], the mirror lists again and resumes: the caller never sees it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// use keyplane_core::{PutOptions, Store};
/// use std::sync::Arc;
/// let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
/// store.put(b"cfg/a", b"1", PutOptions::default()).await?;
/// let mut mirror = keyplane_etcd::PrefixMirror::start(store.clone(), b"cfg/").await?;
/// assert_eq!(mirror.entries().len(), 1);
/// let rev = store.put(b"cfg/b", b"2", PutOptions::default()).await?.revision;
/// while mirror.revision() < rev {
///     mirror.next().await?;
/// }
/// assert_eq!(mirror.entries()[&b"cfg/b"[..]].value, b"2");
/// # Ok(()) }
/// ```
pub struct PrefixMirror {
    store: Arc<dyn Store>,
    prefix: Vec<u8>,
    entries: BTreeMap<Vec<u8>, Entry>,
    revision: i64,
    watch: WatchStream,
    relists: u64,
}

impl std::fmt::Debug for PrefixMirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefixMirror")
            .field("prefix", &keyplane_core::escape_bytes(&self.prefix))
            .field("keys", &self.entries.len())
            .field("revision", &self.revision)
            .field("relists", &self.relists)
            .finish()
    }
}

impl PrefixMirror {
    /// Lists `prefix` and starts watching it.
    ///
    /// # Errors
    /// `InvalidKey` for a bad prefix; the store's errors.
    pub async fn start(store: Arc<dyn Store>, prefix: impl AsRef<[u8]>) -> Result<Self> {
        let prefix = prefix.as_ref().to_vec();
        let (entries, revision, watch) = list_and_watch(store.as_ref(), &prefix).await?;
        Ok(PrefixMirror {
            store,
            prefix,
            entries,
            revision,
            watch,
            relists: 0,
        })
    }

    /// The mirrored keys and entries.
    pub fn entries(&self) -> &BTreeMap<Vec<u8>, Entry> {
        &self.entries
    }

    /// The store revision the mirror is known to reflect (for keys under the prefix).
    pub fn revision(&self) -> i64 {
        self.revision
    }

    /// How many times the mirror listed again after a compaction.
    pub fn relists(&self) -> u64 {
        self.relists
    }

    /// Waits for the next batch of changes under the prefix and applies it; after a
    /// compaction, lists again instead. Returns the new [`PrefixMirror::revision`].
    ///
    /// # Errors
    /// The watch's final error other than `Compacted` (such as `Unavailable` once its
    /// reconnects are exhausted), or the relisting's error.
    pub async fn next(&mut self) -> Result<i64> {
        match self.watch.next().await {
            Some(Ok(batch)) => {
                for event in batch.events {
                    self.apply(batch.revision, event);
                }
                self.revision = self.revision.max(batch.revision);
            }
            Some(Err(e)) if matches!(e.kind(), ErrorKind::Compacted { .. }) => {
                let (entries, revision, watch) =
                    list_and_watch(self.store.as_ref(), &self.prefix).await?;
                self.entries = entries;
                self.revision = revision;
                self.watch = watch;
                self.relists += 1;
            }
            Some(Err(e)) => return Err(e),
            None => {
                return Err(keyplane_core::Error::new(
                    ErrorKind::Unavailable,
                    "the watch ended without an error",
                ));
            }
        }
        Ok(self.revision)
    }

    fn apply(&mut self, revision: i64, event: Event) {
        let key = event.key().to_vec();
        if self
            .entries
            .get(&key)
            .is_some_and(|known| known.mod_revision >= revision)
        {
            return;
        }
        match event {
            Event::Put { entry, .. } => {
                self.entries.insert(key, entry);
            }
            Event::Delete { .. } => {
                self.entries.remove(&key);
            }
            // The mirror watches plain keys only.
            Event::Collection(_) => {}
        }
    }
}

type Listing = (BTreeMap<Vec<u8>, Entry>, i64, WatchStream);

async fn list_and_watch(store: &dyn Store, prefix: &[u8]) -> Result<Listing> {
    let mut entries = BTreeMap::new();
    let mut opts = RangeOptions::new(KeyRange::Prefix(prefix.to_vec())).limit(PAGE);
    let mut first_revision = None;
    let mut last_revision = 0;
    loop {
        let page = store.range(opts.clone()).await?;
        first_revision.get_or_insert(page.revision);
        last_revision = last_revision.max(page.revision);
        for entry in page.entries {
            entries.insert(entry.key.clone(), entry);
        }
        match page.next {
            Some(next) => opts = opts.after(next),
            None => break,
        }
    }
    // Watching from the first page's revision replays whatever later pages may have missed.
    let from = first_revision.unwrap_or(0) + 1;
    let watch = store
        .watch(WatchOptions::prefix(prefix).from_revision(from))
        .await?;
    Ok((entries, first_revision.unwrap_or(last_revision), watch))
}
