//! Typed watches: batches of parsed keys and decoded values, with unreadable events
//! reported in place.

use super::{TypedStore, ValueOf, Versioned, key_bytes, parse_key, prefix_bytes};
use crate::keyspace::Keyspace;
use crate::keyspace::key::{Key, ListPrefix};
use crate::keyspace::template::{Template, TemplateKind};
use crate::{Error, Result};
use crate::{Event, WatchOptions, WatchStream};
use futures::Stream;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// One change seen by a typed watch.
///
/// `K` is the key type (a [`Key`], or a [`Keyspace`] enum), `V` the value type (the key's
/// decoded value; the raw bytes for a keyspace watch, whose variants have different codecs).
pub enum TypedEvent<K, V> {
    /// `key` was written; `value` is its new value with the entry's metadata.
    Put {
        /// The parsed key.
        key: K,
        /// The decoded new value.
        value: Versioned<V>,
    },
    /// `key` was deleted (directly, by prefix, or by its lease expiring).
    Delete {
        /// The parsed key.
        key: K,
    },
    /// A change the watch could not type: its key does not parse as `K` (`InvalidKey`), or
    /// its value does not decode (`Codec`). The raw event is kept; nothing is dropped.
    Unreadable {
        /// The raw event.
        event: Box<Event>,
        /// Why it could not be typed.
        error: Error,
    },
}

impl<K: Clone, V: Clone> Clone for TypedEvent<K, V> {
    fn clone(&self) -> Self {
        match self {
            TypedEvent::Put { key, value } => TypedEvent::Put {
                key: key.clone(),
                value: value.clone(),
            },
            TypedEvent::Delete { key } => TypedEvent::Delete { key: key.clone() },
            TypedEvent::Unreadable { event, error } => TypedEvent::Unreadable {
                event: event.clone(),
                error: error.clone(),
            },
        }
    }
}

/// Unreadable events are equal when their raw events are and their errors say the same thing
/// ([`Error::same_as`]).
impl<K: PartialEq, V: PartialEq> PartialEq for TypedEvent<K, V> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (TypedEvent::Put { key, value }, TypedEvent::Put { key: k, value: v }) => {
                key == k && value == v
            }
            (TypedEvent::Delete { key }, TypedEvent::Delete { key: k }) => key == k,
            (
                TypedEvent::Unreadable { event, error },
                TypedEvent::Unreadable { event: e, error: r },
            ) => event == e && error.same_as(r),
            _ => false,
        }
    }
}

impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for TypedEvent<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypedEvent::Put { key, value } => f
                .debug_struct("Put")
                .field("key", key)
                .field("value", value)
                .finish(),
            TypedEvent::Delete { key } => f.debug_struct("Delete").field("key", key).finish(),
            TypedEvent::Unreadable { event, error } => f
                .debug_struct("Unreadable")
                .field("event", event)
                .field("error", error)
                .finish(),
        }
    }
}

/// The typed events of one transaction, in the order it applied its writes.
#[derive(Debug, Clone, PartialEq)]
pub struct TypedBatch<K, V> {
    /// The transaction's revision.
    pub revision: i64,
    /// Its events in the watched range (never empty).
    pub events: Vec<TypedEvent<K, V>>,
}

type Decoder<K, V> = Arc<dyn Fn(Event) -> TypedEvent<K, V> + Send + Sync>;

/// A typed watch: a stream of [`TypedBatch`]es with the guarantees of the underlying
/// [`WatchStream`] (ordered, gap-free, one batch per transaction; an error such as
/// `Compacted` is the last item).
pub struct TypedWatch<K, V> {
    inner: WatchStream,
    decode: Decoder<K, V>,
}

impl<K, V> Stream for TypedWatch<K, V> {
    type Item = Result<TypedBatch<K, V>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match this.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(batch))) => Poll::Ready(Some(Ok(TypedBatch {
                revision: batch.revision,
                events: batch.events.into_iter().map(|e| (this.decode)(e)).collect(),
            }))),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<K, V> fmt::Debug for TypedWatch<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedWatch").finish_non_exhaustive()
    }
}

/// Types an event with a key parser and a value decoder.
fn typed_event<K, V>(
    event: Event,
    parse: impl Fn(&[u8]) -> Result<K>,
    decode: impl Fn(&crate::Entry) -> Result<Versioned<V>>,
) -> TypedEvent<K, V> {
    let typed = match &event {
        Event::Put { entry, .. } => parse(&entry.key).and_then(|key| {
            Ok(TypedEvent::Put {
                key,
                value: decode(entry)?,
            })
        }),
        Event::Delete { key, .. } => parse(key).map(|key| TypedEvent::Delete { key }),
        Event::Collection(_) => Err(crate::Error::new(
            crate::ErrorKind::WrongType,
            "a collection event on a typed watch of plain keys",
        )),
    };
    typed.unwrap_or_else(|error| TypedEvent::Unreadable {
        event: Box::new(event),
        error,
    })
}

fn key_decoder<K: Key>(codec: K::Value) -> Decoder<K, ValueOf<K>> {
    Arc::new(move |event| {
        typed_event(event, parse_key::<K>, |entry| {
            Versioned::decode(&codec, entry)
        })
    })
}

impl TypedStore {
    /// Watches the directory `prefix`, from `start_revision` (inclusive; `None` for changes
    /// after now). Keys under the prefix that are not keys of `P::Key` and values that do not
    /// decode arrive as [`TypedEvent::Unreadable`].
    ///
    /// # Errors
    /// `Compacted` when `start_revision` is no longer retained; `InvalidKey` for a prefix
    /// whose encoding does not end with its separator; `Config` when the key's codec needs
    /// state this typed store was not given; backend errors.
    ///
    /// ```
    /// use futures::StreamExt;
    /// use keyplane_core::keyspace::{Key, Prefix, Text, TypedEvent, TypedStore};
    ///
    /// #[derive(Key, Debug, Clone, PartialEq)]
    /// #[kv(template = "/registry/{group}/{instance}", value = Text)]
    /// struct InstanceKey { group: u64, instance: u64 }
    ///
    /// #[derive(Prefix, Debug, Clone, PartialEq)]
    /// #[kv(template = "/registry/{group}/", key = InstanceKey)]
    /// struct GroupDir { group: u64 }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> keyplane_core::Result<()> {
    /// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
    /// let from = typed.store().revision().await? + 1;
    /// let mut watch = typed.watch(&GroupDir { group: 1 }, Some(from)).await?;
    ///
    /// typed.put(&InstanceKey { group: 1, instance: 9 }, &"up".to_string()).await?;
    /// typed.store().put(b"/registry/1/not-a-number", b"up", Default::default()).await?;
    ///
    /// let batch = watch.next().await.unwrap()?;
    /// assert!(matches!(&batch.events[0],
    ///     TypedEvent::Put { key: InstanceKey { instance: 9, .. }, value } if value.value == "up"));
    /// let batch = watch.next().await.unwrap()?;
    /// assert!(matches!(&batch.events[0], TypedEvent::Unreadable { error, .. }
    ///     if error.kind() == keyplane_core::ErrorKind::InvalidKey));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn watch<P: ListPrefix>(
        &self,
        prefix: &P,
        start_revision: Option<i64>,
    ) -> Result<TypedWatch<P::Key, ValueOf<P::Key>>> {
        let codec = self.codec::<P::Key>()?;
        let opts = WatchOptions::prefix(prefix_bytes(prefix)?);
        self.watch_raw(opts, start_revision, key_decoder::<P::Key>(codec))
            .await
    }

    /// Watches one key, from `start_revision`.
    ///
    /// # Errors
    /// As [`watch`](Self::watch).
    pub async fn watch_key<K: Key>(
        &self,
        key: &K,
        start_revision: Option<i64>,
    ) -> Result<TypedWatch<K, ValueOf<K>>> {
        let codec = self.codec::<K>()?;
        let opts = WatchOptions::key(key_bytes(key));
        self.watch_raw(opts, start_revision, key_decoder::<K>(codec))
            .await
    }

    /// Watches every key of a keyspace (the longest literal prefix its templates share, the
    /// whole store if they share none), parsing keys into the keyspace's enum. Values stay
    /// bytes: decode them with the codec of the variant's key type. Keys under the watched
    /// range that belong to no template arrive as [`TypedEvent::Unreadable`].
    ///
    /// # Errors
    /// As [`watch`](Self::watch).
    pub async fn watch_keyspace<S: Keyspace>(
        &self,
        start_revision: Option<i64>,
    ) -> Result<TypedWatch<S, Vec<u8>>> {
        let templates: Vec<&Template> = S::templates().iter().map(|t| t.template).collect();
        let opts = WatchOptions::prefix(common_root(&templates));
        let decode: Decoder<S, Vec<u8>> = Arc::new(|event| {
            typed_event(event, parse_keyspace::<S>, |entry| {
                Versioned::decode(&crate::keyspace::Bytes, entry)
            })
        });
        self.watch_raw(opts, start_revision, decode).await
    }

    async fn watch_raw<K, V>(
        &self,
        mut opts: WatchOptions,
        start_revision: Option<i64>,
        decode: Decoder<K, V>,
    ) -> Result<TypedWatch<K, V>> {
        opts.start_revision = start_revision;
        let inner = self.store.watch(opts).await?;
        Ok(TypedWatch { inner, decode })
    }
}

pub(super) fn parse_keyspace<S: Keyspace>(raw: &[u8]) -> Result<S> {
    let text = std::str::from_utf8(raw).map_err(|e| {
        Error::invalid_key("the key is not UTF-8")
            .with_context("key", crate::raw::escape_bytes(raw))
            .with_source(e)
    })?;
    Ok(S::parse(text)?)
}

/// The longest prefix shared by every key of `templates`: their leading literal segments.
pub(super) fn common_root(templates: &[&Template]) -> Vec<u8> {
    let roots: Vec<String> = templates.iter().map(|t| literal_root(t)).collect();
    let Some(first) = roots.first() else {
        return Vec::new();
    };
    let mut len = first.len();
    for root in &roots[1..] {
        len = len.min(
            first
                .bytes()
                .zip(root.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    first.as_bytes()[..len].to_vec()
}

/// The text every key of `template` starts with: the leading separator and the literal
/// segments before the first variable (or hash tag), each with its separator.
fn literal_root(template: &Template) -> String {
    let sep = template.separator().as_char();
    let mut root = String::new();
    if template.leading_separator() {
        root.push(sep);
    }
    let last = template.depth().saturating_sub(1);
    for (index, segment) in template.segments().iter().enumerate() {
        let Some(text) = segment.literal() else { break };
        if template.hash_tag() == Some(index) {
            break;
        }
        root.push_str(text);
        if index < last || template.kind() == TemplateKind::Prefix {
            root.push(sep);
        }
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(sources: &[&'static str]) -> String {
        let templates: Vec<Template> = sources
            .iter()
            .map(|s| Template::key(*s, None).unwrap())
            .collect();
        let refs: Vec<&Template> = templates.iter().collect();
        String::from_utf8(common_root(&refs)).unwrap()
    }

    #[test]
    fn common_root_of_templates() {
        assert_eq!(
            roots(&["jxt/tenants/{id}/meta", "jxt/tenants/{id}/database/{s}"]),
            "jxt/tenants/"
        );
        assert_eq!(roots(&["jxt/tenants/{id}/meta", "jxt/version"]), "jxt/");
        assert_eq!(roots(&["jxt/version"]), "jxt/version");
        assert_eq!(roots(&["/registry/{g}", "/Cronix/node/{n}"]), "/");
        assert_eq!(roots(&["nxc:map:{r}:{p}", "nxc:inst:{r}:{p}:{x}"]), "nxc:");
        assert_eq!(roots(&["a/{x}", "b/{x}"]), "");
        assert_eq!(roots(&[]), "");
    }
}
