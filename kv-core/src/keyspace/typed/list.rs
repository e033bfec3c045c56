//! Paged, typed listing of a [`Prefix`]'s directory.

use super::{TypedStore, ValueOf, Versioned, parse_key, prefix_bytes};
use crate::Continuation;
use crate::RangeOptions;
use crate::keyspace::key::{Key, ListPrefix};
use crate::{Error, Result};
use std::fmt;

/// Which page of a listing or a set scan ([`SetHandle::scan`](super::SetHandle::scan)) to
/// read: at most `limit` raw keys, after a continuation.
///
/// ```
/// use keyplane_core::keyspace::ListOptions;
/// let first = ListOptions::limit(100);
/// assert_eq!(first.page_limit(), 100);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOptions {
    pub(super) limit: usize,
    pub(super) after: Option<Continuation>,
}

impl ListOptions {
    /// The first page, of at most `limit` keys (a `limit` of 0 is rejected by the read).
    pub fn limit(limit: usize) -> Self {
        ListOptions { limit, after: None }
    }

    /// The page after the one that returned `next` ([`Page::next`]).
    pub fn after(mut self, next: Continuation) -> Self {
        self.after = Some(next);
        self
    }

    /// The page size.
    pub fn page_limit(&self) -> usize {
        self.limit
    }
}

/// A raw key under a listed or watched prefix that is not a valid item: its key does not
/// parse as the expected key type, or its value does not decode. Reported, never dropped.
///
/// Two are equal when their keys are and their errors say the same thing
/// ([`Error::same_as`]).
#[derive(Debug, Clone)]
pub struct Skipped {
    /// The raw key.
    pub key: Vec<u8>,
    /// Why it was skipped (`InvalidKey` or `Codec`).
    pub error: Error,
}

impl PartialEq for Skipped {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.error.same_as(&other.error)
    }
}

/// One page of a typed listing.
pub struct Page<K: Key> {
    /// The keys of this page that parsed, with their decoded values and metadata, in key
    /// order: the same key and [`Versioned`] value a watch's
    /// [`TypedEvent::Put`](super::TypedEvent::Put) carries.
    pub items: Vec<(K, Versioned<ValueOf<K>>)>,
    /// The keys of this page that did not parse or whose value did not decode, in key order.
    pub skipped: Vec<Skipped>,
    /// Pass to [`ListOptions::after`] for the next page; `None` after the last page.
    pub next: Option<Continuation>,
    /// The store revision the page was read at.
    pub revision: i64,
}

impl<K: Key> fmt::Debug for Page<K>
where
    ValueOf<K>: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Page")
            .field("items", &self.items)
            .field("skipped", &self.skipped)
            .field("next", &self.next)
            .field("revision", &self.revision)
            .finish()
    }
}

impl TypedStore {
    /// One page of the keys in the directory `prefix`, parsed as the prefix's key type and
    /// decoded by its codec.
    ///
    /// Only that directory is read: a prefix ends with its separator, so listing tenant `1`
    /// never returns tenant `10`'s keys. Keys under the prefix that are not keys of
    /// `P::Key`'s template (another key type sharing the directory, a key written by another
    /// program) and values that do not decode are returned in [`Page::skipped`] with the
    /// reason. The page limit counts raw keys, skipped ones included.
    ///
    /// # Errors
    /// `InvalidArgument` for a zero limit; `InvalidKey` for a prefix whose encoding does not
    /// end with its separator (a faulty hand-written impl); `Config` when the key's codec
    /// needs state this typed store was not given; backend errors.
    ///
    /// ```
    /// use keyplane_core::keyspace::{Key, ListOptions, Prefix, Text, TypedStore};
    ///
    /// #[derive(Key, Debug, Clone, PartialEq)]
    /// #[kv(template = "jxt/tenants/{id}/users/{user}", value = Text)]
    /// struct UserKey { id: u64, user: u64 }
    ///
    /// #[derive(Prefix, Debug, Clone, PartialEq)]
    /// #[kv(template = "jxt/tenants/{id}/users/", key = UserKey)]
    /// struct UsersDir { id: u64 }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> keyplane_core::Result<()> {
    /// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
    /// for (id, user) in [(1, 1), (1, 2), (1, 3), (10, 1)] {
    ///     typed.put(&UserKey { id, user }, &format!("user {user} of {id}")).await?;
    /// }
    /// // A key another program wrote into the directory.
    /// typed.store().put(b"jxt/tenants/1/users/x", b"?", Default::default()).await?;
    ///
    /// let dir = UsersDir { id: 1 };
    /// let first = typed.list(&dir, ListOptions::limit(2)).await?;
    /// assert_eq!(first.items.len(), 2);
    /// let rest = typed.list(&dir, ListOptions::limit(2).after(first.next.unwrap())).await?;
    /// let (key, value) = &rest.items[0];
    /// assert_eq!((key, value.value.as_str()), (&UserKey { id: 1, user: 3 }, "user 3 of 1"));
    /// assert_eq!(value.mod_revision, value.create_revision); // written once
    /// assert_eq!(rest.skipped[0].key, b"jxt/tenants/1/users/x"); // reported, not dropped
    /// assert_eq!(rest.next, None); // tenant 10 is another directory
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list<P: ListPrefix>(&self, prefix: &P, opts: ListOptions) -> Result<Page<P::Key>> {
        let codec = self.codec::<P::Key>()?;
        let mut range = RangeOptions::prefix(prefix_bytes(prefix)?).limit(opts.limit);
        if let Some(after) = opts.after {
            range = range.after(after);
        }
        let raw = self.store.range(range).await?;
        let mut page = Page {
            items: Vec::with_capacity(raw.entries.len()),
            skipped: Vec::new(),
            next: raw.next,
            revision: raw.revision,
        };
        for entry in raw.entries {
            let item = parse_key::<P::Key>(&entry.key)
                .and_then(|key| Ok((key, Versioned::decode(&codec, &entry)?)));
            match item {
                Ok(item) => page.items.push(item),
                Err(error) => page.skipped.push(Skipped {
                    key: entry.key,
                    error,
                }),
            }
        }
        Ok(page)
    }
}
