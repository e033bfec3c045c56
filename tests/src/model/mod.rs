//! The model-based property test: random operation sequences run on a store and on a simple
//! reference model, whose observable results must be identical.
//!
//! A sequence mixes puts (with and without leases and previous values), gets, ranges (prefix
//! and `[start, end)`, with limits and paging, keys-only and count-only), deletes, prefix
//! deletes, transactions with compares on version, mod/create revision, value, existence,
//! lease, and on collections (member counts, map field values, sizes) and ops in both branches, and lease grant/revoke/keep-alive/time-to-live, and set, map and list ops (alone and in txn
//! branches). Keys come
//! from a small adversarial alphabet under a per-sequence random root, so the test can share a
//! store (or a server) with other tests. Revisions are compared as ordinals of the sequence's
//! own writes and lease ids as ordinals of its grants, so concurrent writers elsewhere on the
//! store do not matter. Failing sequences shrink to a minimal one, printed op by op.
//!
//! Any backend's test file runs it with [`check`]:
//!
//! ```no_run
//! async fn mem_store() -> Option<std::sync::Arc<dyn keyplane_core::Store>> {
//!     Some(std::sync::Arc::new(keyplane_mem::MemStore::new()))
//! }
//! #[test]
//! fn model() {
//!     keyplane_tests::model::check(mem_store, 256);
//! }
//! # fn main() {}
//! ```

mod bytes;
mod collections;
mod exec;
mod ops;
mod outcome;
mod reference;

pub use bytes::Bytes;
pub use collections::{Coll, Collections, Touch, coll};
pub use exec::Exec;
pub use ops::{Cmp, LeaseRef, Op, RevRef, Span, Target, TxnStep, op, sequence};
pub use outcome::{Outcome, Page, Seen, StepResult};
pub use reference::Model;

use keyplane_core::Store;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::future::Future;
use std::sync::Arc;

/// The longest sequence generated.
pub const MAX_OPS: usize = 40;

/// Runs `cases` random sequences (each up to [`MAX_OPS`] operations) on the store returned by
/// `factory` and on the model, panicking with the shrunk failing sequence if any result
/// differs.
///
/// `factory` is called once, inside the runtime the sequences run on (a multi-threaded tokio
/// runtime with two workers); `None` means the backend is unavailable (a SKIP line was
/// printed) and the check passes without running. Set `PROPTEST_CASES` to override `cases`.
///
/// # Panics
/// On the first (shrunk) sequence whose results differ from the model's.
pub fn check<F, Fut>(factory: F, cases: u32)
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Option<Arc<dyn Store>>>,
{
    // Snapshot reads and paged listings must not race the conformance cases that compact the
    // whole server's history.
    let _history = crate::conformance::history_shared();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build the test runtime");
    let Some(store) = runtime.block_on(factory()) else {
        return;
    };
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&sequence(MAX_OPS), |ops| {
        runtime.block_on(run_sequence(store.clone(), &ops))
    });
    if let Err(e) = result {
        panic!("the store differs from the model: {e}");
    }
}

/// Runs one sequence on `store` and on a fresh model, then compares the whole root. The
/// store's listing of the root with its collections after each step is kept, and at the end
/// each is read again at its revision, in pages of three keys: a snapshot read must return
/// exactly what the store said then.
///
/// # Errors
/// A test-case failure naming the first step whose results differ, or the first snapshot
/// read that differs.
pub async fn run_sequence(store: Arc<dyn Store>, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut model = Model::default();
    let mut exec = Exec::new(store);
    let everything = Op::Range {
        span: Span::Prefix(Bytes(Vec::new())),
        limit: None,
        keys_only: false,
        count_only: false,
    };
    let mut verdict = Ok(());
    let mut listings = Vec::new();
    for (i, op) in ops.iter().chain([&everything]).enumerate() {
        let want = model.apply(op);
        let got = exec.apply(op).await;
        if want != got {
            let step = if i == ops.len() {
                "the final contents".to_owned()
            } else {
                format!("step {i}, {op:?}")
            };
            verdict = Err(TestCaseError::fail(format!(
                "{step}:\n  model: {want:?}\n  store: {got:?}"
            )));
            break;
        }
        match exec.listing(None, None).await {
            Ok(listing) => listings.push((i, listing)),
            Err(e) => {
                verdict = Err(TestCaseError::fail(format!("listing after step {i}: {e}")));
                break;
            }
        }
    }
    if verdict.is_ok() {
        // Revision 0 asks for the current revision, as on etcd: a store not written yet has
        // no past to read.
        for (i, then) in listings.iter().filter(|(_, l)| l.0 > 0) {
            let again = exec.listing(Some(then.0), Some(3)).await;
            // Another test on a shared server may compact history meanwhile: an honest
            // `Compacted` leaves nothing to compare.
            if again
                .as_ref()
                .is_err_and(|e| matches!(e.kind(), keyplane_core::ErrorKind::Compacted { .. }))
            {
                continue;
            }
            if again.as_ref().ok() != Some(then) {
                verdict = Err(TestCaseError::fail(format!(
                    "the listing after step {i}, read again at its revision:\n  then: \
                     {then:?}\n  again: {again:?}"
                )));
                break;
            }
        }
    }
    exec.cleanup().await;
    verdict
}
