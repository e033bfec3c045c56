//! Calls shared under load, without a timer: what the group commit ([`super::commit`]) and
//! the grouped reads ([`super::reads`]) have in common.
//!
//! Redis runs one command at a time, and each call costs it (and the client) something of
//! its own besides the work it carries. So a request sent while fewer than
//! [`Limits::in_flight`] calls of a group are in flight goes alone, at once; one issued while
//! that many are in flight queues, and when one of those calls returns, what queued goes
//! together, as one batch, from a driver task that keeps sending whatever queued meanwhile
//! until the queue is empty. Batches therefore form only under load and grow with it, a lone
//! caller is never delayed, and the server always has the next call queued behind the one it
//! runs, so it never idles through a round trip.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// What carries a group's batches to the server.
pub(crate) trait Carrier: Send + Sync + 'static {
    /// One caller's request.
    type Request: Send + 'static;
    /// Its answer.
    type Answer: Send + 'static;

    /// The bytes `request` adds to a batch, which bound a batch's size.
    fn size(request: &Self::Request) -> usize;

    /// The work `request` asks of the server, in the unit of [`Carrier::budget`]: a call holds
    /// the server for the work of all its requests, so the work of a batch is bounded, as
    /// the work of a request alone is. None counted unless the carrier says so.
    fn weight(_request: &Self::Request) -> u64 {
        0
    }

    /// The most work one batch carries (a batch always carries at least one request).
    fn budget(&self) -> u64 {
        u64::MAX
    }

    /// Sends `batch` and answers every request in it. A request dropped unanswered (its
    /// driver ended, its runtime shut down) tells its caller through the closed channel.
    fn send(&self, batch: Vec<Queued<Self>>) -> impl Future<Output = ()> + Send;
}

/// A queued request, and where its answer goes.
pub(crate) struct Queued<C: Carrier + ?Sized> {
    pub(crate) request: C::Request,
    pub(crate) reply: oneshot::Sender<C::Answer>,
}

/// A caller's turn: a call of its own, or a place in the queue.
pub(crate) enum Turn<'a, C: Carrier> {
    /// Make the call, then drop the [`Lead`].
    Alone(Lead<'a, C>, C::Request),
    /// The answer arrives here; an error when the request was dropped unanswered.
    Queued(oneshot::Receiver<C::Answer>),
}

/// The bounds of a group.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// The most calls in flight at once: enough that the server never idles through a round
    /// trip while callers wait, few enough that what comes meanwhile queues and shares a call.
    pub(crate) in_flight: usize,
    /// The most items one batch carries: a call holds the server for the time of all of
    /// them, so a bound keeps any one call short while still sharing its cost widely.
    pub(crate) items: usize,
    /// The most bytes one batch carries (a batch always carries at least one item).
    pub(crate) bytes: usize,
}

/// A group: its carrier, its limits, and its calls in flight with the items queued behind.
pub(crate) struct Group<C: Carrier> {
    carrier: Arc<C>,
    limits: Limits,
    state: Arc<Mutex<State<Queued<C>>>>,
}

/// How many calls are in flight, and the items queued behind them.
struct State<T> {
    in_flight: usize,
    queue: VecDeque<T>,
}

impl<C: Carrier> Group<C> {
    pub(crate) fn new(carrier: C, limits: Limits) -> Self {
        Group {
            carrier: Arc::new(carrier),
            limits,
            state: Arc::new(Mutex::new(State {
                in_flight: 0,
                queue: VecDeque::new(),
            })),
        }
    }

    /// What sends this group's calls.
    pub(crate) fn carrier(&self) -> &C {
        &self.carrier
    }

    /// A place among the calls in flight for `request`, or, when every place is taken (or
    /// others already wait), a place in the queue.
    pub(crate) fn enter(&self, request: C::Request) -> Turn<'_, C> {
        let mut state = lock(&self.state);
        if state.in_flight == self.limits.in_flight || !state.queue.is_empty() {
            let (reply, answer) = oneshot::channel();
            state.queue.push_back(Queued { request, reply });
            return Turn::Queued(answer);
        }
        state.in_flight += 1;
        Turn::Alone(Lead(self), request)
    }
}

/// A lone call's place among the calls in flight. When it is dropped (the call returned, or
/// its future was dropped) the items that queued meanwhile go to a driver, which takes over
/// the place.
pub(crate) struct Lead<'a, C: Carrier>(&'a Group<C>);

impl<C: Carrier> Drop for Lead<'_, C> {
    fn drop(&mut self) {
        let group = self.0;
        let mut state = lock(&group.state);
        if state.queue.is_empty() {
            state.in_flight -= 1;
            return;
        }
        let batch = take_batch(&mut state.queue, group.limits, group.carrier.as_ref());
        drop(state);
        // The guard exists before the driver's future does, and goes into it: a future dropped
        // before its first poll (spawned on a runtime that is shutting down, or with no
        // runtime at all) still frees the place and fails the queue.
        let driving = Driving(Some(Arc::clone(&group.state)));
        let driver = drive(Arc::clone(&group.carrier), driving, group.limits, batch);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(driver);
        }
        // Without a runtime the driver is dropped unstarted, and its guard fails the queue.
    }
}

/// Sends `batch`, then every batch that queued meanwhile, until the queue is empty; `driving`
/// holds the group's state, and its place among the calls in flight.
async fn drive<C: Carrier>(
    carrier: Arc<C>,
    mut driving: Driving<Queued<C>>,
    limits: Limits,
    batch: Vec<Queued<C>>,
) {
    let Some(state) = driving.0.clone() else {
        return;
    };
    let mut batch = batch;
    loop {
        carrier.send(batch).await;
        let mut queued = lock(&state);
        if queued.queue.is_empty() {
            queued.in_flight -= 1;
            driving.0 = None;
            return;
        }
        batch = take_batch(&mut queued.queue, limits, carrier.as_ref());
    }
}

/// A driver that may end before the queue is empty (its runtime shut down, or its future
/// dropped before its first poll): then the queued requests are dropped unsent, which fails
/// their callers, and its place among the calls in flight is freed, so that no caller waits
/// forever.
struct Driving<T>(Option<Arc<Mutex<State<T>>>>);

impl<T> Drop for Driving<T> {
    fn drop(&mut self) {
        if let Some(state) = self.0.take() {
            let mut state = lock(&state);
            state.queue.clear();
            state.in_flight -= 1;
        }
    }
}

fn lock<T>(state: &Mutex<State<T>>) -> MutexGuard<'_, State<T>> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// The items at the front of the queue that one batch carries: at least one, then as many as
/// fit the bounds of items and bytes, and the carrier's budget of work.
fn take_batch<C: Carrier>(
    queue: &mut VecDeque<Queued<C>>,
    limits: Limits,
    carrier: &C,
) -> Vec<Queued<C>> {
    let (mut bytes, mut work) = (0, 0u64);
    let budget = carrier.budget();
    let mut batch = Vec::new();
    while let Some(next) = queue.front() {
        let size = C::size(&next.request);
        let weight = C::weight(&next.request);
        if !batch.is_empty()
            && (batch.len() == limits.items
                || bytes + size > limits.bytes
                || work.saturating_add(weight) > budget)
        {
            break;
        }
        bytes += size;
        work = work.saturating_add(weight);
        batch.extend(queue.pop_front());
    }
    batch
}

#[cfg(test)]
mod tests {
    use super::{Carrier, Group, Limits, Queued, Turn, take_batch};
    use std::collections::VecDeque;
    use tokio::sync::oneshot;

    /// A carrier that answers every request with itself; a request's work is its value, and
    /// a batch carries at most 10 of it.
    struct Echo;

    impl Carrier for Echo {
        type Request = u32;
        type Answer = u32;

        fn size(_: &u32) -> usize {
            1
        }

        fn weight(request: &u32) -> u64 {
            u64::from(*request)
        }

        fn budget(&self) -> u64 {
            10
        }

        async fn send(&self, batch: Vec<Queued<Self>>) {
            for queued in batch {
                let _ = queued.reply.send(queued.request);
            }
        }
    }

    const ONE: Limits = Limits {
        in_flight: 1,
        items: 8,
        bytes: 1 << 20,
    };

    /// Fills the group's one place, queues a request behind it, then ends the lone call
    /// with `end` (which drops the lead where its driver cannot run); the queued caller is
    /// told, and the next caller gets the place instead of queueing for good.
    fn driver_dropped_unpolled(end: impl FnOnce(Turn<'_, Echo>)) {
        let group = Group::new(Echo, ONE);
        let lead = group.enter(1);
        assert!(matches!(lead, Turn::Alone(..)));
        let Turn::Queued(mut answer) = group.enter(2) else {
            panic!("the second caller queues behind the first");
        };
        end(lead);
        assert!(
            answer.try_recv().is_err(),
            "the queued request was dropped unanswered"
        );
        assert!(
            matches!(group.enter(3), Turn::Alone(..)),
            "a driver dropped before its first poll kept its place among the calls in flight"
        );
    }

    #[test]
    fn a_driver_without_a_runtime_frees_its_place() {
        driver_dropped_unpolled(|lead| drop(lead));
    }

    #[test]
    fn a_driver_spawned_on_a_shut_down_runtime_frees_its_place() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let handle = runtime.handle().clone();
        runtime.shutdown_background();
        driver_dropped_unpolled(|lead| {
            let _entered = handle.enter();
            drop(lead);
        });
    }

    #[test]
    fn a_batch_carries_at_most_its_budget_of_work_and_always_one_request() {
        let mut queue: VecDeque<Queued<Echo>> = [4, 5, 2, 30, 1, 1]
            .into_iter()
            .map(|request| Queued {
                request,
                reply: oneshot::channel().0,
            })
            .collect();
        let mut batches = Vec::new();
        while !queue.is_empty() {
            let batch = take_batch(&mut queue, ONE, &Echo);
            batches.push(batch.iter().map(|q| q.request).collect::<Vec<_>>());
        }
        assert_eq!(batches, [vec![4, 5], vec![2], vec![30], vec![1, 1]]);
    }
}
