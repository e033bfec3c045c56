//! How a mirror types its entries: the key parser, the value decoder, the indexers.

use crate::Entry;
use crate::Result;
use crate::keyspace::Versioned;
use std::sync::Arc;

pub(super) type ParseFn<K> = Arc<dyn Fn(&[u8]) -> Result<K> + Send + Sync>;
pub(super) type DecodeFn<K, V> = Arc<dyn Fn(&K, &Entry) -> Result<Versioned<V>> + Send + Sync>;
pub(super) type IndexFn<K, V> = Arc<dyn Fn(&K, &V) -> Vec<String> + Send + Sync>;

/// Parses raw keys and decodes entries of a mirrored range.
pub(crate) struct Typer<K, V> {
    pub(super) parse: ParseFn<K>,
    pub(super) decode: DecodeFn<K, V>,
}

impl<K, V> Clone for Typer<K, V> {
    fn clone(&self) -> Self {
        Typer {
            parse: Arc::clone(&self.parse),
            decode: Arc::clone(&self.decode),
        }
    }
}

impl<K, V> Typer<K, V> {
    pub(super) fn type_entry(&self, entry: &Entry) -> Result<(K, Versioned<V>)> {
        let key = (self.parse)(&entry.key)?;
        let value = (self.decode)(&key, entry)?;
        Ok((key, value))
    }
}

/// A secondary index: the values a key is found under.
pub(crate) struct Indexer<K, V> {
    pub(super) name: &'static str,
    pub(super) f: IndexFn<K, V>,
}

impl<K, V> Clone for Indexer<K, V> {
    fn clone(&self) -> Self {
        Indexer {
            name: self.name,
            f: Arc::clone(&self.f),
        }
    }
}
