//! [`TypedStore::mirror`] and [`TypedStore::mirror_keyspace`]: a typed store's door to the
//! mirror, which keeps a directory or a whole keyspace in memory.
//!
//! The typed store parses keys and decodes values; the mirror only needs the two as
//! functions, given to its constructor with the store and the range to follow.

use super::watch::{common_root, parse_keyspace};
use super::{TypedStore, ValueOf, Versioned, parse_key, prefix_bytes};
use crate::Entry;
use crate::Result;
use crate::keyspace::codec::Bytes;
use crate::keyspace::key::ListPrefix;
use crate::keyspace::keyspace::Keyspace;
use crate::mirror::MirrorBuilder;
use std::sync::Arc;

impl TypedStore {
    /// A mirror of the directory `prefix`, typed as its key type.
    ///
    /// # Errors
    /// `InvalidKey` for a prefix that does not end with its separator; `Config` when the
    /// key's codec needs state this typed store was not given.
    pub fn mirror<P: ListPrefix>(
        &self,
        prefix: &P,
    ) -> Result<MirrorBuilder<P::Key, ValueOf<P::Key>>>
    where
        ValueOf<P::Key>: Clone,
    {
        let range = prefix_bytes(prefix)?;
        let codec = Arc::new(self.codec::<P::Key>()?);
        Ok(MirrorBuilder::new(
            Arc::clone(self.store()),
            range,
            parse_key::<P::Key>,
            move |_: &P::Key, entry: &Entry| Versioned::decode(&*codec, entry),
        ))
    }

    /// A mirror of every key of a keyspace (the longest literal prefix its templates share),
    /// parsed into the keyspace's enum; values stay bytes, as in
    /// [`watch_keyspace`](TypedStore::watch_keyspace).
    pub fn mirror_keyspace<S: Keyspace + Clone>(&self) -> MirrorBuilder<S, Vec<u8>> {
        let templates: Vec<_> = S::templates().iter().map(|t| t.template).collect();
        MirrorBuilder::new(
            Arc::clone(self.store()),
            common_root(&templates),
            parse_keyspace::<S>,
            |_: &S, entry: &Entry| Versioned::decode(&Bytes, entry),
        )
    }
}
