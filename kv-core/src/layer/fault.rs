//! [`FaultLayer`]: faults injected on purpose, for testing code against an unreliable store.

use super::intercept::Hook;
use super::{Answer, Args, Call, Interceptor, Layer, Target, around_store};
use crate::Store;
use crate::{Error, ErrorKind, Result};
use crate::{WatchOptions, WatchStream};
use futures::StreamExt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a [`Fault`] does when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Unavailable,
    Timeout,
    Latency(Duration),
    CompareFailure,
    WatchDisconnect,
}

/// One fault rule of a [`FaultLayer`]: what happens, to which calls and keys, how often.
///
/// A rule fires on a call it matches with its [`probability`](Self::probability), drawn from
/// the layer's seeded generator, at most [`times`](Self::times) times.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    kind: Kind,
    calls: Option<Vec<Call>>,
    pattern: Option<Vec<u8>>,
    probability: f64,
    times: Option<u64>,
    after: u64,
}

impl Fault {
    fn new(kind: Kind) -> Self {
        Fault {
            kind,
            calls: None,
            pattern: None,
            probability: 1.0,
            times: None,
            after: 0,
        }
    }

    /// The call fails with a retryable [`ErrorKind::Unavailable`] before it reaches the
    /// store, as when the server cannot be reached: nothing is applied, and the error says
    /// so ([`Error::is_unapplied`]).
    pub fn unavailable() -> Self {
        Fault::new(Kind::Unavailable)
    }

    /// The store runs the call, then its answer is lost: the caller gets
    /// [`ErrorKind::Timeout`] although a write was applied (an outcome the caller cannot
    /// know).
    pub fn timeout() -> Self {
        Fault::new(Kind::Timeout)
    }

    /// The call waits `delay` before it reaches the store.
    pub fn latency(delay: Duration) -> Self {
        Fault::new(Kind::Latency(delay))
    }

    /// A transaction with compares runs as if they did not hold (as when another writer got
    /// there first): the store runs its failure branch, and the answer has
    /// `succeeded == false`. Matches only transactions with compares.
    pub fn compare_failure() -> Self {
        Fault::new(Kind::CompareFailure).on([Call::Txn])
    }

    /// A watch stream fails with a retryable [`ErrorKind::Unavailable`] instead of
    /// delivering a batch, and ends (as when the connection drops). Drawn once per batch;
    /// the batch is not delivered, so a watch resumed from the last delivered revision
    /// gets it.
    pub fn watch_disconnect() -> Self {
        Fault::new(Kind::WatchDisconnect).on([Call::Watch])
    }

    /// Only these calls (all calls by default).
    pub fn on(mut self, calls: impl IntoIterator<Item = Call>) -> Self {
        self.calls = Some(calls.into_iter().collect());
        self
    }

    /// Only calls whose key matches `pattern`: `*` matches any bytes, `?` one byte, every
    /// other byte itself. A range or watch matches by its first key or prefix, a
    /// transaction when any of its keys matches; calls without a key (the revision, lease
    /// calls) never match a rule with a pattern.
    pub fn keys(mut self, pattern: impl AsRef<[u8]>) -> Self {
        self.pattern = Some(pattern.as_ref().to_vec());
        self
    }

    /// Fires with this probability (clamped to `[0, 1]`; 1 by default).
    pub fn probability(mut self, probability: f64) -> Self {
        self.probability = probability.clamp(0.0, 1.0);
        self
    }

    /// Fires at most `times` times.
    pub fn times(mut self, times: u64) -> Self {
        self.times = Some(times);
        self
    }

    /// Leaves the first `calls` calls it matches alone (a connection that drops after two
    /// transactions: `Fault::unavailable().on([Call::Txn]).after(2)`).
    pub fn after(mut self, calls: u64) -> Self {
        self.after = calls;
        self
    }

    fn matches(&self, call: Call, target: Target<'_>) -> bool {
        if self
            .calls
            .as_ref()
            .is_some_and(|calls| !calls.contains(&call))
        {
            return false;
        }
        if self.kind == Kind::CompareFailure
            && !matches!(target, Target::Txn(txn) if !txn.compares.is_empty())
        {
            return false;
        }
        match &self.pattern {
            None => true,
            Some(pattern) => target.keys(|key| glob(pattern, key)),
        }
    }
}

/// Whether `key` matches `pattern` (`*` any bytes, `?` one byte).
fn glob(pattern: &[u8], key: &[u8]) -> bool {
    let (mut p, mut k) = (0, 0);
    // Where the last `*` was, and the key position it currently stands for.
    let mut star: Option<(usize, usize)> = None;
    while k < key.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, k));
                p += 1;
            }
            Some(&c) if c == b'?' || c == key[k] => {
                p += 1;
                k += 1;
            }
            _ => match star {
                Some((sp, sk)) => {
                    p = sp + 1;
                    k = sk + 1;
                    star = Some((sp, sk + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|&c| c == b'*')
}

/// One fault that fired, as [`FaultStore::injections`] records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injection {
    /// The number of the call among those the layer saw (from 0; the batches of a watch
    /// share one number, taken when the watch opened).
    pub call_number: u64,
    /// The call.
    pub call: Call,
    /// The rule's position in the layer ([`FaultLayer::with`] order).
    pub rule: usize,
}

/// Injects faults into the calls of the store it wraps, for users' own tests: retryable
/// `Unavailable` errors, timeouts after the store applied a write, latency, failed compares
/// and watch disconnects, by operation and key pattern ([`Fault`]).
///
/// Every decision comes from a generator seeded by [`new`](Self::new): the same calls in
/// the same order get the same faults, so a failing test replays exactly. The store records
/// each fault it injected ([`FaultStore::injections`]) and can be switched off and on
/// ([`FaultStore::set_enabled`]). With no rule, or switched off, calls go straight through.
///
/// ```
/// use keyplane_core::layer::{Call, Fault, FaultLayer, StoreExt};
/// use keyplane_core::{ErrorKind, PutOptions, Store};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let store = keyplane_mem::MemStore::new()
///     .layer(FaultLayer::new(42).with(Fault::timeout().on([Call::Put]).keys("cfg/*")));
/// let err = store.put(b"cfg/a", b"1", PutOptions::default()).await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Timeout);
/// // The put was applied; only its answer was lost.
/// assert_eq!(store.inner().get(b"cfg/a").await?.unwrap().value, b"1");
/// // Keys outside the pattern are left alone.
/// store.put(b"other", b"2", PutOptions::default()).await?;
/// store.set_enabled(false);
/// store.put(b"cfg/a", b"3", PutOptions::default()).await?;
/// assert_eq!(store.injected(), 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FaultLayer {
    seed: u64,
    rules: Vec<Fault>,
    hook: Option<Hook>,
}

impl FaultLayer {
    /// No rule yet; decisions drawn from `seed`.
    pub fn new(seed: u64) -> Self {
        FaultLayer {
            seed,
            rules: Vec::new(),
            hook: None,
        }
    }

    /// Adds the test's own [`Interceptor`], asked around every call before the rules: its
    /// `before` can refuse a call that then never reaches the store, its `after` can replace
    /// a finished call's answer with an error. Pass an `Arc` of it to keep a handle on its
    /// state. One interceptor per layer; a second call replaces the first.
    pub fn intercept(mut self, interceptor: impl Interceptor) -> Self {
        self.hook = Some(Hook(Arc::new(interceptor)));
        self
    }

    /// Adds a rule. Rules are checked in the order added; several may fire on one call (a
    /// latency, then an error). A call refused by an [`unavailable`](Fault::unavailable)
    /// rule is not seen by the rules after it.
    pub fn with(mut self, fault: Fault) -> Self {
        self.rules.push(fault);
        self
    }
}

impl<S: Store> Layer<S> for FaultLayer {
    type Store = FaultStore<S>;

    fn layer(self, inner: S) -> FaultStore<S> {
        let remaining = self.rules.iter().map(|r| r.times).collect();
        let matched = vec![0; self.rules.len()];
        FaultStore {
            inner: Arc::new(inner),
            shared: Arc::new(Shared {
                enabled: AtomicBool::new(!self.rules.is_empty() || self.hook.is_some()),
                rules: self.rules,
                hook: self.hook,
                state: Mutex::new(State {
                    rng: self.seed,
                    calls: 0,
                    remaining,
                    matched,
                    log: Vec::new(),
                }),
            }),
        }
    }
}

/// The store a [`FaultLayer`] makes.
#[derive(Debug)]
pub struct FaultStore<S> {
    inner: Arc<S>,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    enabled: AtomicBool,
    rules: Vec<Fault>,
    hook: Option<Hook>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    rng: u64,
    calls: u64,
    remaining: Vec<Option<u64>>,
    matched: Vec<u64>,
    log: Vec<Injection>,
}

/// The faults that fired on one call.
#[derive(Debug, Default)]
struct Plan {
    latency: Duration,
    refuse: bool,
    fail_compares: bool,
    lose_answer: bool,
    disconnect: bool,
}

impl Shared {
    fn active(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    fn number(&self) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.calls += 1;
        state.calls - 1
    }

    /// Draws the rules that match `call` (numbered `number`) and records those that fire:
    /// the watch disconnects when `batch` (a watch's batch is about to be delivered), the
    /// others otherwise.
    fn plan(&self, number: u64, call: Call, target: Target<'_>, batch: bool) -> Plan {
        let mut plan = Plan::default();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for (rule, fault) in self.rules.iter().enumerate() {
            if (fault.kind == Kind::WatchDisconnect) != batch
                || !fault.matches(call, target)
                || state.remaining[rule] == Some(0)
            {
                continue;
            }
            state.matched[rule] += 1;
            if state.matched[rule] <= fault.after {
                continue;
            }
            let draw = splitmix(&mut state.rng);
            // 53 random bits as a fraction in [0, 1).
            if (draw >> 11) as f64 / (1u64 << 53) as f64 >= fault.probability {
                continue;
            }
            if let Some(left) = &mut state.remaining[rule] {
                *left -= 1;
            }
            state.log.push(Injection {
                call_number: number,
                call,
                rule,
            });
            match fault.kind {
                Kind::Unavailable => {
                    // A refused call never reaches the store: no later rule sees it.
                    plan.refuse = true;
                    break;
                }
                Kind::Timeout => plan.lose_answer = true,
                Kind::Latency(delay) => plan.latency += delay,
                Kind::CompareFailure => plan.fail_compares = true,
                Kind::WatchDisconnect => plan.disconnect = true,
            }
        }
        plan
    }
}

/// SplitMix64: a small, well-mixed generator; the same seed gives the same draws.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn injected(call: Call, kind: ErrorKind, what: &str) -> Error {
    Error::new(kind, format!("injected fault: {what}")).with_context("op", call.name())
}

impl<S: Store> FaultStore<S> {
    /// The wrapped store, to read or write it without faults.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Switches the faults and the interceptor on or off (they start on when the layer has
    /// rules or an interceptor).
    pub fn set_enabled(&self, enabled: bool) {
        self.shared.enabled.store(enabled, Ordering::SeqCst);
    }

    /// Whether faults are injected.
    pub fn is_enabled(&self) -> bool {
        self.shared.active()
    }

    /// How many faults fired so far.
    pub fn injected(&self) -> usize {
        let state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.log.len()
    }

    /// Every fault that fired so far, in order.
    pub fn injections(&self) -> Vec<Injection> {
        let state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.log.clone()
    }

    async fn around<A, T, F, Fut>(&self, call: Call, args: A, f: F) -> Result<T>
    where
        A: Args,
        T: Answer,
        F: FnOnce(A) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        if !self.shared.active() {
            return f(args).await;
        }
        if let Some(Hook(hook)) = &self.shared.hook {
            hook.before(call).await?;
        }
        let number = self.shared.number();
        let plan = self.shared.plan(number, call, args.target(), false);
        if !plan.latency.is_zero() {
            tokio::time::sleep(plan.latency).await;
        }
        if plan.refuse {
            return Err(
                injected(call, ErrorKind::Unavailable, "the store is unreachable")
                    .set_unapplied(true),
            );
        }
        let answer = match plan.fail_compares.then(|| args.fail_compares()).flatten() {
            Some(failure_branch) => f(failure_branch).await.map(Answer::compares_failed),
            None => f(args).await,
        };
        if let Some(Hook(hook)) = &self.shared.hook {
            hook.after(call, answer.is_ok()).await?;
        }
        if plan.lose_answer {
            return Err(injected(
                call,
                ErrorKind::Timeout,
                "the answer was lost after the store ran the call",
            ));
        }
        answer
    }

    async fn open_watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        let number = self.shared.active().then(|| self.shared.number());
        let range = opts.range.clone();
        let stream = self
            .around(Call::Watch, opts, |o| self.inner.watch(o))
            .await?;
        let Some(number) = number else {
            return Ok(stream);
        };
        let state = (stream, Arc::clone(&self.shared), range, false);
        Ok(futures::stream::unfold(
            state,
            move |(mut stream, shared, range, ended)| async move {
                if ended {
                    return None;
                }
                let item = stream.next().await?;
                if item.is_ok()
                    && shared.active()
                    && shared
                        .plan(number, Call::Watch, Target::Range(&range), true)
                        .disconnect
                {
                    let error = injected(
                        Call::Watch,
                        ErrorKind::Unavailable,
                        "the watch connection dropped",
                    );
                    return Some((Err(error), (stream, shared, range, true)));
                }
                Some((item, (stream, shared, range, false)))
            },
        )
        .boxed())
    }
}

around_store!(FaultStore, watch = open_watch);

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn glob_patterns() {
        for (pattern, key, expected) in [
            ("cfg/*", "cfg/a", true),
            ("cfg/*", "cfg/", true),
            ("cfg/*", "cf", false),
            ("*", "", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("?x", "ax", true),
            ("?x", "x", false),
            ("*/meta", "jxt/tenants/1/meta", true),
            ("*/meta", "jxt/tenants/1/meta/x", false),
            ("exact", "exact", true),
            ("exact", "exacts", false),
        ] {
            assert_eq!(
                glob(pattern.as_bytes(), key.as_bytes()),
                expected,
                "{pattern} {key}"
            );
        }
    }
}
