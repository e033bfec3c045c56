//! [`RetryLayer`]: retries what may pass, and resumes watches.

use super::{Args, Call, Layer, around_store};
use crate::Store;
use crate::retry::{Attempts, Backoff};
use crate::{Error, Result};
use crate::{WatchOptions, WatchPosition, WatchStream};
use futures::StreamExt;
use std::future::Future;
use std::sync::Arc;

/// Retries calls that failed with a [retryable](Error::is_retryable) error, under a
/// [`Backoff`] (exponential, full jitter, a deadline and optionally a number of attempts).
///
/// What is retried:
/// - reads (`get`, `range`, `revision`, lease queries, opening a watch, a transaction or
///   collection operation made only of reads) and lease renewals, whenever the error is
///   retryable;
/// - writes only when the error says the request never reached the backend
///   ([`Error::is_unapplied`]: a refused connection, an injected fault before the call).
///   A write whose outcome is unknown (a timeout, a connection lost while waiting for the
///   answer) is not retried, since it may have been applied: a second attempt could apply a
///   non-idempotent write twice or overwrite a concurrent writer. A caller whose writes are
///   safe to repeat opts in with [`retry_unknown_writes`](Self::retry_unknown_writes).
///
/// Never retried: a transaction whose compares failed (that is an answer, `Ok` with
/// `succeeded == false`), and errors that are not retryable (bad input, `NotFound`,
/// `Compacted`, `ReadOnly`...).
///
/// The policy's deadline counts from the first failure (a call that succeeds at once reads
/// no clock).
///
/// A watch from "now" is pinned to the revision after the store's current one when it
/// opens; if its stream later fails with a retryable error, the watch is opened again from
/// the revision after the last batch it delivered, under the same policy, so the consumer
/// sees one stream with no gap and no repeat.
///
/// ```
/// use keyplane_core::layer::{Fault, FaultLayer, RetryLayer, StoreExt};
/// use keyplane_core::retry::Backoff;
/// use keyplane_core::{PutOptions, Store};
/// use std::time::Duration;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// // The first two puts are refused before they reach the store; the third goes through.
/// let store = keyplane_mem::MemStore::new()
///     .layer(FaultLayer::new(7).with(Fault::unavailable().times(2)))
///     .layer(RetryLayer::new(Backoff::default().initial(Duration::from_millis(1))));
/// store.put(b"cfg/a", b"1", PutOptions::default()).await?;
/// assert_eq!(store.inner().injected(), 2);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct RetryLayer {
    policy: Backoff,
    unknown_writes: bool,
}

impl RetryLayer {
    /// Retries under `policy`.
    pub fn new(policy: Backoff) -> Self {
        RetryLayer {
            policy,
            unknown_writes: false,
        }
    }

    /// Also retry writes whose outcome is unknown (a retryable error that may have come after
    /// the backend applied the write). Only for callers whose writes are idempotent.
    pub fn retry_unknown_writes(mut self, retry: bool) -> Self {
        self.unknown_writes = retry;
        self
    }
}

impl<S: Store> Layer<S> for RetryLayer {
    type Store = RetryStore<S>;

    fn layer(self, inner: S) -> RetryStore<S> {
        RetryStore {
            inner: Arc::new(inner),
            policy: self.policy,
            unknown_writes: self.unknown_writes,
        }
    }
}

/// The store a [`RetryLayer`] makes.
#[derive(Debug)]
pub struct RetryStore<S> {
    inner: Arc<S>,
    policy: Backoff,
    unknown_writes: bool,
}

impl<S: Store> RetryStore<S> {
    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The policy.
    pub fn policy(&self) -> &Backoff {
        &self.policy
    }

    fn may_retry(&self, call: Call, args: &impl Args, error: &Error) -> bool {
        error.is_retryable()
            && (error.is_unapplied() || self.unknown_writes || args.target().idempotent(call))
    }

    async fn around<A, T, F, Fut>(&self, call: Call, args: A, f: F) -> Result<T>
    where
        A: Args,
        F: Fn(A) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        // The clock starts at the first failure: a call that succeeds at once reads none.
        let mut attempts = self.policy.start_at_failure();
        loop {
            match f(args.clone()).await {
                Ok(answer) => return Ok(answer),
                Err(error) if self.may_retry(call, &args, &error) => {
                    tracing::debug!(
                        op = call.name(),
                        attempt = attempts.failed() + 1,
                        %error,
                        "retrying"
                    );
                    if !attempts.wait().await {
                        return Err(attempts.exhausted(error));
                    }
                }
                Err(error) => return Err(error),
            }
        }
    }

    async fn open_watch(&self, mut opts: WatchOptions) -> Result<WatchStream> {
        if opts.start_revision.is_none() && opts.group_starts.is_none() {
            let range = opts.range.clone();
            let now = self
                .around(Call::Revision, (), |()| {
                    WatchPosition::now(&*self.inner, &range)
                })
                .await?;
            opts = opts.from_position(&now);
        }
        let stream = self
            .around(Call::Watch, opts.clone(), |o| self.inner.watch(o))
            .await?;
        Ok(resuming(
            Resume {
                inner: Arc::clone(&self.inner),
                attempts: self.policy.clone().into_attempts(),
                opts,
                done: false,
            },
            stream,
        ))
    }
}

around_store!(RetryStore, watch = open_watch);

/// The state of a resuming watch between two items.
struct Resume<S> {
    inner: Arc<S>,
    /// Failures since the last delivered batch, under the layer's policy (its clock from the
    /// first of them).
    attempts: Attempts<'static>,
    /// The options to reopen with: the start revision follows the delivered batches.
    opts: WatchOptions,
    done: bool,
}

impl<S: Store> Resume<S> {
    /// After a failure: `None` to try again (after the backoff's delay), or the error to end
    /// the stream with.
    async fn failed(&mut self, error: Error) -> Option<Error> {
        if !error.is_retryable() {
            self.done = true;
            return Some(error);
        }
        match self.attempts.next_delay() {
            Some(delay) => {
                tracing::debug!(
                    attempt = self.attempts.failed(),
                    from = self.opts.start_revision,
                    groups = self.opts.group_starts.as_ref().map_or(0, |g| g.len()),
                    %error,
                    "resuming watch"
                );
                tokio::time::sleep(delay).await;
                None
            }
            None => {
                self.done = true;
                Some(error.with_context("attempts", self.attempts.failed()))
            }
        }
    }
}

fn resuming<S: Store>(state: Resume<S>, first: WatchStream) -> WatchStream {
    futures::stream::unfold((state, Some(first)), |(mut st, mut current)| async move {
        loop {
            if st.done {
                return None;
            }
            let stream = match current.as_mut() {
                Some(stream) => stream,
                None => match st.inner.watch(st.opts.clone()).await {
                    Ok(stream) => current.insert(stream),
                    Err(error) => match st.failed(error).await {
                        Some(error) => return Some((Err(error), (st, None))),
                        None => continue,
                    },
                },
            };
            match stream.next().await {
                Some(Ok(batch)) => {
                    st.attempts.reset();
                    if !batch.is_progress() {
                        let mut position = WatchPosition {
                            next: st.opts.start_revision,
                            groups: st.opts.group_starts.take(),
                        };
                        position.record(&batch);
                        st.opts = st.opts.from_position(&position);
                    }
                    return Some((Ok(batch), (st, current)));
                }
                Some(Err(error)) => {
                    current = None;
                    if let Some(error) = st.failed(error).await {
                        return Some((Err(error), (st, None)));
                    }
                }
                None => return None,
            }
        }
    })
    .boxed()
}
