//! [`Backoff`] and [`retry`]: the one way the library and its users retry an operation that
//! failed for a reason that may pass (a lost optimistic race, a leader election, a
//! connection being re-established): exponential backoff with full jitter, bounded by a
//! deadline and optionally by a number of attempts.
//!
//! Only errors marked [retryable](crate::Error::is_retryable) are retried by [`retry`]; a
//! failed compare the caller asked for, bad input or a missing key are answers, not
//! accidents. [`retry_if`] takes the decision from the caller.
//!
//! ```
//! use keyplane_contract::retry::{Backoff, retry};
//! use keyplane_contract::{Error, ErrorKind};
//! use std::time::Duration;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> keyplane_contract::Result<()> {
//! let policy = Backoff::default().initial(Duration::from_millis(1)).max_attempts(5);
//! let mut calls = 0;
//! let answer = retry(&policy, || {
//!     calls += 1;
//!     let attempt = calls;
//!     async move {
//!         if attempt < 3 {
//!             Err(Error::new(ErrorKind::Unavailable, "a leader election").set_retryable(true))
//!         } else {
//!             Ok(42)
//!         }
//!     }
//! })
//! .await?;
//! assert_eq!((answer, calls), (42, 3));
//! # Ok(()) }
//! ```

use crate::error::{Error, Result};
use std::borrow::Cow;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;
use tokio::time::Instant;

/// How to retry: delays growing exponentially from [`initial`](Self::initial) up to
/// [`max_delay`](Self::max_delay), each drawn uniformly between zero and that bound ("full
/// jitter", so that clients that failed together do not retry together), until the
/// [`deadline`](Self::deadline) or the [`max_attempts`](Self::max_attempts).
///
/// The default: 10 ms doubling up to 1 s, for at most 10 s, attempts unbounded.
/// [`Backoff::requests`] is the policy the backends use between attempts of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    initial: Duration,
    max_delay: Duration,
    deadline: Option<Duration>,
    max_attempts: Option<u32>,
    jitter: bool,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(10),
            max_delay: Duration::from_secs(1),
            deadline: Some(Duration::from_secs(10)),
            max_attempts: None,
            jitter: true,
        }
    }
}

impl Backoff {
    /// The policy of a backend retrying one request that failed for a reason that passes (a
    /// connection being re-established, a leader election, a lost race): 25 ms doubling up
    /// to 1 s, without jitter, so that a bounded number of attempts spans a known time (8
    /// attempts wait 3.6 s in all, about what an etcd election or a Redis failover takes).
    /// No deadline: the caller bounds the attempts.
    ///
    /// ```
    /// use keyplane_contract::retry::Backoff;
    /// use std::time::Duration;
    ///
    /// let policy = Backoff::requests();
    /// assert_eq!(policy.delay(0), Duration::from_millis(25));
    /// assert_eq!(policy.delay(3), Duration::from_millis(200));
    /// assert_eq!(policy.delay(9), Duration::from_secs(1));
    /// ```
    pub const fn requests() -> Self {
        Backoff {
            initial: Duration::from_millis(25),
            max_delay: Duration::from_secs(1),
            deadline: None,
            max_attempts: None,
            jitter: false,
        }
    }

    /// Each delay is its bound itself rather than drawn below it: for retries whose total
    /// wait must be known, where the callers that fail together are few.
    pub const fn without_jitter(mut self) -> Self {
        self.jitter = false;
        self
    }

    /// The bound of the first delay (doubled after each attempt).
    pub const fn initial(mut self, delay: Duration) -> Self {
        self.initial = delay;
        self
    }

    /// The largest bound a delay grows to.
    pub const fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// How long retrying may go on in all, from the first attempt (`None`: no limit; then
    /// give [`max_attempts`](Self::max_attempts)).
    pub const fn deadline(mut self, deadline: Option<Duration>) -> Self {
        self.deadline = deadline;
        self
    }

    /// At most this many attempts in all (at least 1).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = Some(attempts.max(1));
        self
    }

    /// The delay before attempt `attempt + 1` (the first retry is `delay(0)`): uniform in
    /// `[0, min(max_delay, initial * 2^attempt)]`, or that bound itself
    /// [without jitter](Self::without_jitter).
    pub fn delay(&self, attempt: u32) -> Duration {
        let bound = self
            .initial
            .saturating_mul(1u32 << attempt.min(20))
            .min(self.max_delay);
        if !self.jitter {
            return bound;
        }
        let nanos = u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX);
        if nanos == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(random() % (nanos + 1))
    }

    /// The delay before the next attempt after `failed` failed attempts of an operation
    /// started at `started`, or `None` when the policy allows no more.
    pub fn next_delay(&self, failed: u32, started: Instant) -> Option<Duration> {
        if self.max_attempts.is_some_and(|max| failed >= max) {
            return None;
        }
        let delay = self.delay(failed.saturating_sub(1));
        match self.deadline {
            Some(deadline) if started.elapsed() + delay > deadline => None,
            _ => Some(delay),
        }
    }

    /// Starts counting attempts and time for one operation: the [deadline](Self::deadline)
    /// counts from now, the first attempt.
    pub fn start(&self) -> Attempts<'_> {
        Attempts {
            policy: Cow::Borrowed(self),
            started: Some(Instant::now()),
            failed: 0,
        }
    }

    /// Starts counting attempts with the clock stopped until the first failure: the
    /// [deadline](Self::deadline) counts from then, so an operation that succeeds at once
    /// reads no clock. For loops on a path where nearly every call succeeds at once (one
    /// request to a backend).
    pub fn start_at_failure(&self) -> Attempts<'_> {
        Attempts {
            policy: Cow::Borrowed(self),
            started: None,
            failed: 0,
        }
    }

    /// [`start_at_failure`](Self::start_at_failure), the attempts owning the policy: for a
    /// loop whose state outlives the place the policy is made in (a watch stream that
    /// reconnects, under a policy built from its store's configuration).
    pub fn into_attempts(self) -> Attempts<'static> {
        Attempts {
            policy: Cow::Owned(self),
            started: None,
            failed: 0,
        }
    }
}

/// The attempts of one operation under a [`Backoff`] ([`Backoff::start`]): how many failed,
/// since when, whether the policy allows another and how long to pause before it. Every
/// retry loop goes through it (or through [`retry`], which does), so the counting, the
/// giving up and the start afresh after a success are the same everywhere:
///
/// - [`wait`](Self::wait) records a failure and sleeps, or says to give up;
///   [`wait_blocking`](Self::wait_blocking) is the same for blocking code;
/// - [`next_delay`](Self::next_delay) records a failure and returns the pause, for a loop
///   that sleeps in a `select!` beside something else (a shutdown signal);
/// - [`reset`](Self::reset) starts afresh after a success, for a loop that goes on (a
///   reconnecting follower counts consecutive failures only);
/// - [`exhausted`](Self::exhausted) is the error to give up with.
///
/// ```
/// use keyplane_contract::retry::Backoff;
/// use std::time::Duration;
///
/// let policy = Backoff::requests().initial(Duration::from_millis(1)).max_attempts(3);
/// let mut attempts = policy.start();
/// assert_eq!(attempts.next_delay(), Some(Duration::from_millis(1)));
/// assert_eq!(attempts.next_delay(), Some(Duration::from_millis(2)));
/// assert_eq!(attempts.next_delay(), None); // the third attempt failed: give up
/// attempts.reset(); // a success: the next failure is the first again
/// assert_eq!(attempts.next_delay(), Some(Duration::from_millis(1)));
/// ```
#[derive(Debug)]
pub struct Attempts<'a> {
    policy: Cow<'a, Backoff>,
    /// When the deadline started counting: the first attempt ([`Backoff::start`]), or the
    /// first failure (`None` until then).
    started: Option<Instant>,
    failed: u32,
}

impl Attempts<'_> {
    /// Records a failed attempt and sleeps before the next one; `false` (without sleeping)
    /// when the policy allows no more: then give up.
    pub async fn wait(&mut self) -> bool {
        match self.next_delay() {
            Some(delay) => {
                tokio::time::sleep(delay).await;
                true
            }
            None => false,
        }
    }

    /// [`wait`](Self::wait) for blocking code (a thread, not a task): the pause blocks the
    /// thread. The clock is the one [`wait`](Self::wait) reads (tokio's, which is the
    /// system's unless a runtime with a paused clock is current; blocking code does not run
    /// there).
    pub fn wait_blocking(&mut self) -> bool {
        match self.next_delay() {
            Some(delay) => {
                std::thread::sleep(delay);
                true
            }
            None => false,
        }
    }

    /// Records a failed attempt and returns the pause before the next one, or `None` when
    /// the policy allows no more (then give up). For a loop that does something between the
    /// decision and the pause (logs the retry it is about to make), or sleeps where it also
    /// waits for something else (`select!` on the pause and a shutdown signal); other loops
    /// call [`wait`](Self::wait).
    pub fn next_delay(&mut self) -> Option<Duration> {
        self.failed = self.failed.saturating_add(1);
        let started = *self.started.get_or_insert_with(Instant::now);
        self.policy.next_delay(self.failed, started)
    }

    /// Records a failed attempt that needs no pause before the next one (a lost race whose
    /// winner the caller has already read), so that it counts towards the policy's bound and
    /// lengthens the next pause as a waited one does. It never gives up: the next
    /// [`wait`](Self::wait) does.
    pub fn record_failure(&mut self) {
        self.failed = self.failed.saturating_add(1);
        if self.started.is_none() {
            self.started = Some(Instant::now());
        }
    }

    /// Starts afresh after a success, for a loop that goes on: no failure counted, and the
    /// deadline counts from the next failure. Reads no clock, so it costs nothing on a
    /// success path.
    pub fn reset(&mut self) {
        self.failed = 0;
        self.started = None;
    }

    /// How many attempts failed so far.
    pub fn failed(&self) -> u32 {
        self.failed
    }

    /// `error` with how many attempts were made and for how long: the error to return when
    /// [`wait`](Self::wait) gives up.
    pub fn exhausted(&self, error: Error) -> Error {
        let elapsed = self.started.map_or(Duration::ZERO, |at| at.elapsed());
        error
            .with_context("attempts", self.failed)
            .with_context("elapsed_ms", elapsed.as_millis())
    }
}

/// Runs `op` until it succeeds, fails with an error that is not
/// [retryable](Error::is_retryable), or `policy` gives up (the last error is returned, with
/// the attempts made).
///
/// # Errors
/// `op`'s errors.
pub async fn retry<T, F, Fut>(policy: &Backoff, op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    retry_if(policy, Error::is_retryable, op).await
}

/// [`retry`], retrying the errors `should_retry` accepts.
///
/// # Errors
/// `op`'s errors.
pub async fn retry_if<T, F, Fut>(
    policy: &Backoff,
    should_retry: impl Fn(&Error) -> bool,
    mut op: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut attempts = policy.start();
    loop {
        match op().await {
            Ok(value) => return Ok(value),
            Err(error) if should_retry(&error) => {
                if !attempts.wait().await {
                    return Err(attempts.exhausted(error));
                }
            }
            Err(error) => return Err(error),
        }
    }
}

/// A random number for the jitter (no dependency: the standard library's random hasher keys,
/// mixed with a counter).
pub(crate) fn random() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn delays_grow_to_their_bound_with_jitter() {
        let policy = Backoff::default()
            .initial(Duration::from_millis(10))
            .max_delay(Duration::from_millis(80));
        for attempt in 0..10 {
            let bound = Duration::from_millis(10 << attempt.min(3));
            let delays: Vec<Duration> = (0..200).map(|_| policy.delay(attempt)).collect();
            assert!(delays.iter().all(|d| *d <= bound), "{attempt}: {delays:?}");
            // Jitter: not every draw is the same.
            assert!(delays.iter().any(|d| *d != delays[0]), "{attempt}");
        }
        assert_eq!(
            Backoff::default().initial(Duration::ZERO).delay(3),
            Duration::ZERO
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retries_only_what_may_pass_and_gives_up() {
        let policy = Backoff::default().max_attempts(4);
        let mut calls = 0;
        let err = retry(&policy, || {
            calls += 1;
            async { Err::<(), _>(Error::new(ErrorKind::Unavailable, "down").set_retryable(true)) }
        })
        .await
        .unwrap_err();
        assert_eq!(calls, 4);
        assert_eq!(err.kind(), ErrorKind::Unavailable);
        assert!(err.to_string().contains("attempts"), "{err}");

        let mut calls = 0;
        let err = retry(&policy, || {
            calls += 1;
            async { Err::<(), _>(Error::invalid_argument("bad")) }
        })
        .await
        .unwrap_err();
        assert_eq!((calls, err.kind()), (1, ErrorKind::InvalidArgument));
    }

    #[tokio::test(start_paused = true)]
    async fn the_deadline_bounds_the_whole() {
        let policy = Backoff::default()
            .initial(Duration::from_millis(100))
            .max_delay(Duration::from_millis(100))
            .deadline(Some(Duration::from_secs(1)));
        let started = tokio::time::Instant::now();
        let mut calls = 0u32;
        let _ = retry(&policy, || {
            calls += 1;
            async { Err::<(), _>(Error::new(ErrorKind::Timeout, "slow").set_retryable(true)) }
        })
        .await;
        assert!(started.elapsed() <= Duration::from_secs(1));
        assert!(calls >= 10, "{calls}");
    }

    #[test]
    fn attempts_count_give_up_and_start_afresh() {
        let policy = Backoff::requests()
            .initial(Duration::from_millis(1))
            .max_attempts(3);
        let mut attempts = policy.start();
        assert_eq!(attempts.next_delay(), Some(Duration::from_millis(1)));
        assert_eq!(attempts.next_delay(), Some(Duration::from_millis(2)));
        assert_eq!(attempts.next_delay(), None);
        assert_eq!(attempts.failed(), 3);
        attempts.reset();
        assert_eq!(attempts.failed(), 0);
        assert_eq!(attempts.next_delay(), Some(Duration::from_millis(1)));
        // A failure recorded without a pause counts towards the bound and the growth.
        attempts.record_failure();
        assert_eq!(attempts.failed(), 2);
        assert_eq!(attempts.next_delay(), None);
        let err = attempts.exhausted(Error::new(ErrorKind::Unavailable, "down"));
        assert!(err.to_string().contains("attempts"), "{err}");
    }

    #[test]
    fn blocking_waits_pause_the_thread_and_give_up() {
        let policy = Backoff::requests()
            .initial(Duration::from_millis(5))
            .max_attempts(2);
        let mut attempts = policy.start();
        let started = std::time::Instant::now();
        assert!(attempts.wait_blocking());
        assert!(started.elapsed() >= Duration::from_millis(5));
        let before = std::time::Instant::now();
        assert!(!attempts.wait_blocking());
        assert!(before.elapsed() < Duration::from_millis(5));
    }

    #[tokio::test(start_paused = true)]
    async fn the_clock_starts_at_the_first_failure_or_afresh_after_a_reset() {
        let policy = Backoff::requests()
            .initial(Duration::from_millis(100))
            .deadline(Some(Duration::from_secs(1)));
        let mut from_start = policy.start();
        let mut from_failure = policy.start_at_failure();
        let mut owned = policy.clone().into_attempts();
        tokio::time::advance(Duration::from_secs(5)).await;
        // The first attempt took 5 s: past the deadline counted from it, not from a failure.
        assert_eq!(from_start.next_delay(), None);
        assert_eq!(from_failure.next_delay(), Some(Duration::from_millis(100)));
        assert_eq!(owned.next_delay(), Some(Duration::from_millis(100)));
        from_start.reset();
        assert_eq!(from_start.next_delay(), Some(Duration::from_millis(100)));
        assert!(from_failure.wait().await);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(!from_failure.wait().await);
    }
}
