//! [`SetHandle`]: a typed set at a key.

use super::At;
use crate::Continuation;
use crate::keyspace::codec::Codec;
use crate::keyspace::typed::ListOptions;
use crate::{CollectionOp, CollectionResult};
use crate::{Error, Result};
use std::fmt;

/// A typed set at a key (Redis SET; one key per member on ordered backends).
///
/// ```
/// use keyplane_core::keyspace::{Key, SegmentCodec, TypedStore};
///
/// keyplane_core::text_segment!(pub Code, charset = "[a-z0-9_-]", max_len = 63, policy = Reject);
///
/// /// The profiles of a realm and provider: a set of profile codes.
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "nxc:map:{realm}:{provider}", set = SegmentCodec<Code>)]
/// struct ProfileMapKey { realm: Code, provider: Code }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// let code = |s: &str| Code::new(s).unwrap();
/// let profiles = typed.set_at(&ProfileMapKey { realm: code("prod"), provider: code("wx") });
/// assert!(profiles.add(&code("p1")).await?);
/// assert!(!profiles.add(&code("p1")).await?);
/// assert!(profiles.contains(&code("p1")).await?); // the ownership check
/// assert_eq!(profiles.members().await?, [code("p1")]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct SetHandle<C> {
    pub(super) at: At,
    pub(super) codec: Result<C>,
}

/// One page of a set scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetPage<V> {
    /// The members of this page.
    pub members: Vec<V>,
    /// Pass to [`ListOptions::after`] for the next page; `None` when the scan is complete.
    pub next: Option<Continuation>,
}

impl<C: Codec> SetHandle<C> {
    /// The collection's key bytes.
    pub fn key(&self) -> &[u8] {
        &self.at.key
    }

    /// `ReadOnly` when the key's template is read-only (an old layout's): writes are
    /// refused before reaching the store.
    pub(in crate::keyspace::typed) fn writable(&self) -> Result<()> {
        self.at.writable()
    }

    /// The member codec, or why it could not be built.
    pub(in crate::keyspace::typed) fn codec(&self) -> Result<&C> {
        self.codec.as_ref().map_err(Error::clone)
    }

    /// Adds `member`; returns whether it was new.
    ///
    /// # Errors
    /// `Codec` when the member does not encode (nothing is written); backend errors.
    pub async fn add(&self, member: &C::Value) -> Result<bool> {
        let member = self.at.encode(self.codec()?, member)?;
        match self
            .at
            .run(CollectionOp::SetAdd {
                key: self.at.key.clone(),
                member,
            })
            .await?
        {
            CollectionResult::Changed(changed) => Ok(changed),
            other => Err(self.at.unexpected("set add", other)),
        }
    }

    /// Removes `member`; returns whether it was there.
    ///
    /// # Errors
    /// `Codec` when the member does not encode; backend errors.
    pub async fn remove(&self, member: &C::Value) -> Result<bool> {
        let member = self.at.encode(self.codec()?, member)?;
        match self
            .at
            .run(CollectionOp::SetRemove {
                key: self.at.key.clone(),
                member,
            })
            .await?
        {
            CollectionResult::Changed(changed) => Ok(changed),
            other => Err(self.at.unexpected("set remove", other)),
        }
    }

    /// Whether `member` is in the set.
    ///
    /// # Errors
    /// `Codec` when the member does not encode; backend errors.
    pub async fn contains(&self, member: &C::Value) -> Result<bool> {
        let member = self.at.encode(self.codec()?, member)?;
        let op = CollectionOp::SetContains {
            key: self.at.key.clone(),
            member,
        };
        match self.at.run(op).await? {
            CollectionResult::Contains(found) => Ok(found),
            other => Err(self.at.unexpected("set contains", other)),
        }
    }

    /// Every member, in ascending byte order of their encodings. For large sets prefer
    /// [`scan`](Self::scan).
    ///
    /// # Errors
    /// `Codec` when a stored member does not decode; backend errors.
    pub async fn members(&self) -> Result<Vec<C::Value>> {
        let codec = self.codec()?;
        match self
            .at
            .run(CollectionOp::SetMembers {
                key: self.at.key.clone(),
            })
            .await?
        {
            CollectionResult::Members(members) => self.at.decode_all(codec, members),
            other => Err(self.at.unexpected("set members", other)),
        }
    }

    /// One page of about `opts`' limit members, paged as a listing is: the first page with
    /// [`ListOptions::limit`], the next ones `after` the previous page's
    /// [`next`](SetPage::next). Every member present during the whole scan is returned at
    /// least once (exactly once, in byte order, on ordered backends; Redis `SSCAN` may repeat
    /// one).
    ///
    /// ```
    /// use keyplane_core::keyspace::{Key, ListOptions, Text, TypedStore};
    ///
    /// #[derive(Key, Debug, Clone, PartialEq)]
    /// #[kv(template = "bal:pool:{id}", set = Text)]
    /// struct PoolKey { id: u64 }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> keyplane_core::Result<()> {
    /// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
    /// let pool = typed.set_at(&PoolKey { id: 1 });
    /// for member in ["a", "b", "c"] {
    ///     pool.add(&member.to_string()).await?;
    /// }
    /// let mut seen = Vec::new();
    /// let mut opts = ListOptions::limit(2);
    /// loop {
    ///     let page = pool.scan(opts.clone()).await?;
    ///     seen.extend(page.members);
    ///     match page.next {
    ///         Some(next) => opts = opts.after(next),
    ///         None => break,
    ///     }
    /// }
    /// assert_eq!(seen, ["a", "b", "c"]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// `InvalidArgument` for a zero limit; `Codec` when a member does not decode; backend
    /// errors.
    pub async fn scan(&self, opts: ListOptions) -> Result<SetPage<C::Value>> {
        let codec = self.codec()?;
        let op = CollectionOp::SetScan {
            key: self.at.key.clone(),
            after: opts.after,
            limit: opts.limit,
        };
        match self.at.run(op).await? {
            CollectionResult::Page { members, next } => Ok(SetPage {
                members: self.at.decode_all(codec, members)?,
                next,
            }),
            other => Err(self.at.unexpected("set scan", other)),
        }
    }
}

impl<C> fmt::Debug for SetHandle<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.at.debug(f, "SetHandle")
    }
}
