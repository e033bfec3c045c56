//! What a measure is, how the report prints and saves them, and the two ways figures are
//! taken: paired latencies (ours and raw alternating, so both sides see the same load) and
//! throughput over a fixed time with N tasks.

use serde_json::json;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long the figures are sampled.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// `--quick`: short samples, for checking that every measure runs.
    pub quick: bool,
    /// Rounds of a paired latency comparison (each round times a batch of each side).
    pub rounds: usize,
    /// Operations per side per round.
    pub batch: usize,
    /// Length of one throughput sample.
    pub sample: Duration,
    /// Throughput samples per side (alternating).
    pub samples: usize,
}

impl Budget {
    pub fn new(quick: bool) -> Self {
        if quick {
            Budget {
                quick,
                rounds: 15,
                batch: 40,
                sample: Duration::from_millis(200),
                samples: MIN_ROUNDS,
            }
        } else {
            Budget {
                quick,
                rounds: 41,
                batch: 100,
                sample: Duration::from_secs(1),
                samples: MIN_ROUNDS,
            }
        }
    }
}

/// Which way a ratio must go.
#[derive(Debug, Clone, Copy)]
pub enum Goal {
    /// `ours / raw` at most this (times, sizes).
    AtMost(f64),
    /// `ours / raw` at least this (rates).
    AtLeast(f64),
    /// `ours` itself at most this, in the measure's unit: a floor the issue names in
    /// absolute terms (a lookup's nanoseconds), with `raw` the reference beside it.
    Within(f64),
    /// No target: the figure is reported for what it says.
    Info,
}

/// The fewest rounds whose median ratio the report judges against a target.
pub const MIN_ROUNDS: usize = 5;

/// A paired comparison: the median of each side, and each round's ratio (ours over raw, the
/// two sides of a round taken back to back, so that both saw the machine's load of the
/// moment).
#[derive(Debug, Clone)]
pub struct Pair {
    pub ours: f64,
    pub raw: f64,
    pub ratios: Vec<f64>,
}

impl Pair {
    /// The pair of per-round samples `ours[i]` and `raw[i]`.
    pub fn of(ours: Vec<f64>, raw: Vec<f64>) -> Self {
        let ratios = ours.iter().zip(&raw).map(|(o, r)| o / r).collect();
        Pair {
            ours: median(ours),
            raw: median(raw),
            ratios,
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone)]
pub struct Measure {
    pub name: String,
    pub ours: f64,
    pub raw: f64,
    pub unit: &'static str,
    pub goal: Goal,
    /// What `raw` is, when the name does not say it.
    pub note: String,
    /// Each round's ratio, when the figure comes from alternating rounds: the ratio is then
    /// their median, shown with their spread. Empty for a figure taken once (a size).
    pub rounds: Vec<f64>,
}

impl Measure {
    pub fn new(
        name: impl Into<String>,
        ours: f64,
        raw: f64,
        unit: &'static str,
        goal: Goal,
    ) -> Self {
        Measure {
            name: name.into(),
            ours,
            raw,
            unit,
            goal,
            note: String::new(),
            rounds: Vec::new(),
        }
    }

    /// The measure of a paired comparison: the sides' medians, the rounds' ratios.
    pub fn paired(name: impl Into<String>, pair: Pair, unit: &'static str, goal: Goal) -> Self {
        Measure {
            rounds: pair.ratios,
            ..Measure::new(name, pair.ours, pair.raw, unit, goal)
        }
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = note.into();
        self
    }

    /// The median of the rounds' ratios, or `ours / raw` for a figure taken once.
    pub fn ratio(&self) -> f64 {
        if !self.rounds.is_empty() {
            median(self.rounds.clone())
        } else if self.raw == 0.0 {
            f64::NAN
        } else {
            self.ours / self.raw
        }
    }

    fn target(&self) -> Option<f64> {
        match self.goal {
            Goal::AtMost(t) | Goal::AtLeast(t) | Goal::Within(t) => Some(t),
            Goal::Info => None,
        }
    }

    /// Whether a higher ratio is the better one: a rate, or a floor to reach.
    fn higher_is_better(&self) -> bool {
        matches!(self.goal, Goal::AtLeast(_)) || self.unit.ends_with("/s")
    }

    /// Of this figure and the same one taken on another runtime, the worse.
    pub fn worse(self, other: Measure) -> Measure {
        let other_worse = if self.higher_is_better() {
            other.ratio() < self.ratio()
        } else {
            other.ratio() > self.ratio()
        };
        if other_worse { other } else { self }
    }

    /// The lowest and the highest of the rounds' ratios.
    pub fn spread(&self) -> Option<(f64, f64)> {
        let min = self.rounds.iter().copied().reduce(f64::min)?;
        let max = self.rounds.iter().copied().reduce(f64::max)?;
        Some((min, max))
    }

    /// Why this run cannot say whether the target is met, if it cannot: too few rounds, or
    /// the middle half of the rounds (from the lower to the upper quartile) on both sides of
    /// the target. A figure taken once (a size, a count) is judged as it is.
    pub fn undecided(&self) -> Option<String> {
        let (Goal::AtMost(target) | Goal::AtLeast(target)) = self.goal else {
            return None;
        };
        let (min, max) = self.spread()?;
        let (q1, q3) = quartiles(&self.rounds);
        if self.rounds.len() < MIN_ROUNDS {
            Some(format!(
                "{} rounds, fewer than {MIN_ROUNDS}",
                self.rounds.len()
            ))
        } else if q1 <= target && target <= q3 {
            Some(format!(
                "the middle half of its rounds ({q1:.2}–{q3:.2}×, all {min:.2}–{max:.2}×) \
                 lies on both sides of the target"
            ))
        } else {
            None
        }
    }

    /// Whether the target is met (a measure without one has nothing to miss).
    pub fn met(&self) -> bool {
        let r = self.ratio();
        match self.goal {
            Goal::AtMost(t) => r <= t,
            Goal::AtLeast(t) => r >= t,
            Goal::Within(t) => self.ours <= t,
            Goal::Info => true,
        }
    }

    fn json(&self) -> serde_json::Value {
        let finite = |x: f64| if x.is_finite() { json!(x) } else { json!(null) };
        json!({
            "name": self.name,
            "ours": finite(self.ours),
            "raw": finite(self.raw),
            "unit": self.unit,
            "ratio": finite(self.ratio()),
            "target": self.target(),
            "goal": match self.goal {
                Goal::AtMost(_) => "at_most",
                Goal::AtLeast(_) => "at_least",
                Goal::Within(_) => "within",
                Goal::Info => "none",
            },
            "met": self.met(),
            "rounds": self.rounds.len(),
            "spread": self.spread().map(|(min, max)| json!([finite(min), finite(max)])),
            "undecided": self.undecided(),
            "note": self.note,
        })
    }
}

/// Every measure taken, printed as each is taken and as one table at the end.
#[derive(Default)]
pub struct Report {
    pub measures: Vec<Measure>,
}

impl Report {
    pub fn add(&mut self, m: Measure) {
        let spread = m
            .spread()
            .map_or(String::new(), |(min, max)| format!("({min:.2}–{max:.2})"));
        println!(
            "  {:<58} {:>12} {:>12} {:>7} {:<13} {}",
            m.name,
            fmt(m.ours),
            fmt(m.raw),
            format!("{:.2}x", m.ratio()),
            spread,
            if m.undecided().is_some() {
                "(undecided)"
            } else if m.met() {
                ""
            } else {
                "(target missed)"
            }
        );
        self.measures.push(m);
    }

    pub fn json(&self, quick: bool, elapsed: Duration) -> serde_json::Value {
        json!({
            "quick": quick,
            "elapsed_seconds": elapsed.as_secs(),
            "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
            "measures": self.measures.iter().map(Measure::json).collect::<Vec<_>>(),
        })
    }
}

/// A figure with about four significant digits.
pub fn fmt(x: f64) -> String {
    crate::readme::fmt(Some(x))
}

/// The lower and upper quartiles of `xs` (the values a quarter and three quarters of the
/// way through them in order).
pub fn quartiles(xs: &[f64]) -> (f64, f64) {
    let mut xs = xs.to_vec();
    xs.sort_by(|a, b| a.total_cmp(b));
    match xs.len() {
        0 => (f64::NAN, f64::NAN),
        n => (xs[n / 4], xs[(3 * n) / 4]),
    }
}

pub fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[xs.len() / 2]
}

/// Median microseconds per call of `ours` and of `raw`: each round times a batch of one, then
/// a batch of the other (which goes first alternates), so both sides share the machine's
/// load of the moment.
pub async fn paired_us(
    budget: Budget,
    mut ours: impl AsyncFnMut(u64),
    mut raw: impl AsyncFnMut(u64),
) -> Pair {
    let mut o = Vec::with_capacity(budget.rounds);
    let mut r = Vec::with_capacity(budget.rounds);
    let mut i = 0u64;
    // One untimed warm-up batch each.
    for _ in 0..budget.batch {
        ours(i).await;
        raw(i).await;
        i += 1;
    }
    for round in 0..budget.rounds {
        for side in 0..2 {
            let ours_turn = (side == 0) == (round % 2 == 0);
            let started = Instant::now();
            for _ in 0..budget.batch {
                if ours_turn {
                    ours(i).await;
                } else {
                    raw(i).await;
                }
                i += 1;
            }
            let us = started.elapsed().as_secs_f64() * 1e6 / budget.batch as f64;
            if ours_turn { &mut o } else { &mut r }.push(us);
        }
    }
    Pair::of(o, r)
}

/// [`paired_us`] for synchronous code, in nanoseconds per call, with `batch` calls per
/// round.
pub fn paired_ns(
    budget: Budget,
    batch: usize,
    mut ours: impl FnMut(u64),
    mut raw: impl FnMut(u64),
) -> Pair {
    let mut o = Vec::new();
    let mut r = Vec::new();
    for i in 0..batch as u64 {
        ours(i);
        raw(i);
    }
    for round in 0..budget.rounds {
        for side in 0..2 {
            let ours_turn = (side == 0) == (round % 2 == 0);
            let started = Instant::now();
            for i in 0..batch as u64 {
                if ours_turn { ours(i) } else { raw(i) }
            }
            let ns = started.elapsed().as_secs_f64() * 1e9 / batch as f64;
            if ours_turn { &mut o } else { &mut r }.push(ns);
        }
    }
    Pair::of(o, r)
}

/// Operations per second of `tasks` tasks each calling `op(task, i)` in a loop for
/// `budget.sample`, spawned on the current runtime. Each task checks the clock itself: an
/// operation that never yields (a buffered sled write) would keep a timer from firing.
pub async fn throughput<F, Fut>(budget: Budget, tasks: usize, op: Arc<F>) -> f64
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let count = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + budget.sample;
    let mut handles = Vec::with_capacity(tasks);
    for t in 0..tasks {
        let (count, op) = (count.clone(), op.clone());
        handles.push(tokio::spawn(async move {
            let mut i = 0u64;
            while Instant::now() < deadline {
                op(t, i).await;
                i += 1;
            }
            count.fetch_add(i, Ordering::Relaxed);
        }));
    }
    for h in handles {
        h.await.expect("a throughput task panicked");
    }
    count.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// Median put throughput of 16 concurrent writers and of one on `store`, samples
/// alternating like a paired comparison; each writer cycles over 100 keys of its own.
pub async fn writers_16_vs_1(budget: Budget, store: Arc<dyn keyplane_core::Store>) -> Pair {
    let put = |store: Arc<dyn keyplane_core::Store>| {
        Arc::new(move |t: usize, i: u64| {
            let store = store.clone();
            async move {
                let k = format!("bench/gc/{t}/{}", i % 100);
                store
                    .put(
                        k.as_bytes(),
                        &crate::single::VALUE,
                        keyplane_core::PutOptions::default(),
                    )
                    .await
                    .unwrap();
            }
        })
    };
    let (mut many, mut one) = (Vec::new(), Vec::new());
    for _ in 0..budget.samples {
        many.push(throughput(budget, 16, put(store.clone())).await);
        one.push(throughput(budget, 1, put(store.clone())).await);
    }
    Pair::of(many, one)
}

/// Median throughput of `ours` and of `raw` with `tasks` tasks, samples alternating.
pub async fn paired_throughput<F, Fut, G, Gut>(
    budget: Budget,
    tasks: usize,
    ours: Arc<F>,
    raw: Arc<G>,
) -> Pair
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
    G: Fn(usize, u64) -> Gut + Send + Sync + 'static,
    Gut: Future<Output = ()> + Send + 'static,
{
    let mut o = Vec::new();
    let mut r = Vec::new();
    for s in 0..budget.samples {
        if s % 2 == 0 {
            o.push(throughput(budget, tasks, ours.clone()).await);
            r.push(throughput(budget, tasks, raw.clone()).await);
        } else {
            r.push(throughput(budget, tasks, raw.clone()).await);
            o.push(throughput(budget, tasks, ours.clone()).await);
        }
    }
    Pair::of(o, r)
}

/// A multi-thread runtime with the default number of workers (the machine's cores).
/// Runs `measure` on both runtimes (it gets the runtime's name, and notes it on each figure)
/// and reports, per figure, the runtime whose ratio is worse.
pub fn on_both_runtimes<F, Fut>(report: &mut Report, measure: F)
where
    F: Fn(&'static str) -> Fut,
    Fut: Future<Output = Vec<Measure>>,
{
    let multi = multi_thread().block_on(measure("multi-thread"));
    let current = current_thread().block_on(measure("current-thread"));
    for (m, c) in multi.into_iter().zip(current) {
        let worse = m.worse(c);
        let runtime = worse.note.clone();
        report.add(worse.note(format!("worse of two runtimes: {runtime}")));
    }
}

pub fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A current-thread runtime.
pub fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}
