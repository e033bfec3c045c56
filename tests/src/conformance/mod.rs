//! The conformance suite: one set of behaviour cases, written once against `dyn Store`, that
//! every backend runs.
//!
//! Each case is a public `async fn(Arc<dyn Store>)` that panics on a contract violation. Every
//! case works under its own random key root (`ct-<uuid>/`), never lists outside it and never
//! assumes absolute revisions or an empty store, so cases run in any order and concurrently on
//! one shared server. The cases that compact ([`watch::watch_from_compacted_revision`],
//! [`snapshot::range_at_compacted_revision_is_rejected`],
//! [`bad_input::watch_from_compacted_revision_is_rejected`] and
//! [`bad_input::compact_rejects_future_and_compacted_revisions`],
//! [`mirror::mirror_relists_once_after_compaction`]) compact the whole server's
//! history, which could turn another case's watch from a past revision into `Compacted`; so
//! they run alone: [`run_case`] gives them an exclusive lock that every other case of the test
//! binary shares.
//!
//! A backend runs the whole suite with [`conformance_suite!`](crate::conformance_suite), one
//! `#[test]` per case:
//!
//! ```no_run
//! async fn mem_store() -> Option<std::sync::Arc<dyn keyplane_core::Store>> {
//!     Some(std::sync::Arc::new(keyplane_mem::MemStore::new()))
//! }
//! keyplane_tests::conformance_suite!(mem_store);
//! # fn main() {}
//! ```

pub mod bad_input;
pub mod blip;
pub mod bulk;
pub mod busy;
pub mod capabilities;
pub mod collection_compares;
pub mod collection_ranges;
pub mod collection_watch;
pub mod collections;
pub mod election;
pub mod foreign;
pub mod leases;
pub mod locks;
pub mod metadata;
pub mod migrate;
pub mod mirror;
mod mirror_collections;
pub mod read;
pub mod snapshot;
pub mod txn;
pub mod update;
pub mod watch;
pub mod write;

mod collection_lists;
mod collection_replay;
mod support;

use std::future::Future;
use std::sync::RwLock;
use std::time::Duration;

/// Cases that compact the server's history; they run alone (see [`run_case`]).
const COMPACTING_CASES: [&str; 5] = [
    "watch_from_compacted_revision",
    "mirror_relists_once_after_compaction",
    "watch_from_compacted_revision_is_rejected",
    "compact_rejects_future_and_compacted_revisions",
    "range_at_compacted_revision_is_rejected",
];

/// Held shared by every case, exclusively by the compacting ones.
static COMPACTION: RwLock<()> = RwLock::new(());

/// Held by a test that reads past revisions on a shared server (the model-based test), so
/// that no compacting case runs meanwhile.
pub(crate) fn history_shared() -> std::sync::RwLockReadGuard<'static, ()> {
    COMPACTION.read().unwrap_or_else(|e| e.into_inner())
}

/// How long one case may run before it fails as hung (leases and watches on real servers
/// included).
pub const CASE_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs one case on a fresh multi-threaded runtime (two workers), failing it if it runs longer
/// than [`CASE_TIMEOUT`]. Used by [`conformance_suite!`](crate::conformance_suite).
///
/// # Panics
/// When the case panics or times out.
pub fn run_case<F: Future<Output = ()> + Send + 'static>(name: &str, case: F) {
    // A failed case poisons the lock; the lock guards no data, so the poison is ignored.
    let (_shared, _exclusive);
    if COMPACTING_CASES.contains(&name) {
        _exclusive = COMPACTION.write().unwrap_or_else(|e| e.into_inner());
    } else {
        _shared = history_shared();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build the test runtime");
    runtime.block_on(async {
        match tokio::time::timeout(CASE_TIMEOUT, tokio::spawn(case)).await {
            Ok(Ok(())) => {}
            Ok(Err(join)) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
            Ok(Err(join)) => panic!("conformance case {name} was cancelled: {join}"),
            Err(_) => panic!("conformance case {name} did not finish within {CASE_TIMEOUT:?}"),
        }
    });
}

/// Expands to one `#[test]` per conformance case, each running the case on the store returned
/// by `factory`.
///
/// `factory` is a path to an `async fn() -> Option<Arc<dyn keyplane_core::Store>>`, called once per
/// case inside the case's runtime (a multi-threaded tokio runtime with two workers). It returns
/// `None` when the backend is unavailable, after printing a SKIP line; the case then passes
/// without running. Cases are named after the functions in [`conformance`](crate::conformance),
/// so `cargo test --test mem_conformance txn_compare_version` runs one case. To keep the cases' names
/// apart from a file's own tests, invoke the macro inside a module
/// (`mod conformance { keyplane_tests::conformance_suite!(super::store); }`).
///
/// ```no_run
/// async fn mem_store() -> Option<std::sync::Arc<dyn keyplane_core::Store>> {
///     Some(std::sync::Arc::new(keyplane_mem::MemStore::new()))
/// }
/// keyplane_tests::conformance_suite!(mem_store);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! conformance_suite {
    ($factory:path) => {
        $crate::__conformance_cases! { $factory;
            bad_input::empty_key_is_rejected,
            bad_input::nul_key_is_rejected,
            bad_input::empty_prefix_delete_is_rejected,
            bad_input::txn_writing_a_key_twice_is_rejected,
            bad_input::txn_put_inside_deleted_prefix_is_rejected,
            bad_input::txn_over_the_op_limit_is_rejected,
            bad_input::zero_lease_ttl_is_rejected,
            bad_input::watch_from_compacted_revision_is_rejected,
            bad_input::compact_rejects_future_and_compacted_revisions,
            bad_input::keep_alive_of_revoked_lease_is_rejected,
            bad_input::put_with_unknown_lease_writes_nothing,
            bulk::bulk_load_writes_everything_and_reports_progress,
            bulk::bulk_load_rejects_bad_input_before_writing,
            bulk::bulk_load_retries_a_lost_answer_once,
            bulk::bulk_load_retry_keeps_a_newer_write,
            capabilities::capabilities_are_sane,
            capabilities::server_status_describes_the_server,
            collection_compares::collection_compares,
            collection_compares::collection_compares_pick_the_branch,
            collection_compares::collection_compares_guard_concurrent_writers,
            collection_ranges::range_lists_collections,
            collection_ranges::collection_listings_at_a_past_revision,
            collection_ranges::paged_collection_listings_read_one_revision,
            collection_watch::collection_events_report_each_change,
            collection_watch::collection_events_share_the_txn_batch,
            collection_watch::emptied_and_deleted_collections_report_deleted,
            collection_watch::collection_events_are_opt_in_and_isolated,
            collection_watch::collection_events_replay_exactly,
            collections::set_operations,
            collections::set_scan_pages_cover_the_set,
            collections::map_operations,
            collections::list_operations,
            collections::list_push_front_inserts_at_the_head,
            collections::list_rotate_is_atomic_under_concurrency,
            collections::list_rotate_get_reads_the_moved_items_map,
            collections::list_rotate_get_rejects_bad_input,
            collections::list_rotate_get_is_atomic_under_concurrency,
            collections::several_list_writes_in_one_txn,
            collections::many_set_adds_in_one_txn,
            collections::collection_ops_in_txn_branches,
            collections::delete_removes_collections,
            collections::collections_are_invisible_to_range,
            election::election_campaign_proclaim_resign,
            election::election_hands_over_when_the_lease_ends,
            election::election_one_leader_at_a_time,
            election::election_observe_follows_the_leadership,
            election::election_rejects_bad_input,
            leases::lease_grant_rounds_ttl_up,
            leases::lease_keeper_renews_and_reports_loss,
            leases::lease_keep_alive_renews,
            leases::lease_revoke_deletes_keys_and_watchers_see_it,
            leases::lease_time_to_live_lists_keys,
            leases::lease_list_shows_only_live_leases,
            leases::lease_expiry_deletes_keys_and_watchers_see_it,
            leases::put_with_lease_attaches_it,
            locks::lock_mutual_exclusion,
            locks::lock_waiter_acquires_after_unlock,
            locks::lock_released_when_lease_revoked,
            locks::lock_released_when_lease_expires,
            locks::lock_fencing_token_increases,
            locks::lock_fencing_token_guards_txn,
            locks::lock_rejects_bad_leases,
            locks::lock_waiters_acquire_in_order,
            locks::lock_names_sharing_a_prefix_are_independent,
            metadata::revision_bumps_once_per_write_txn,
            metadata::entry_metadata_evolves_like_etcd,
            metadata::read_only_txn_keeps_revision,
            migrate::migration_applies_verifies_and_finalizes,
            migrate::migration_resumes_and_rolls_back,
            mirror::mirror_lists_then_follows_writes,
            mirror::mirror_converges_under_concurrent_writers,
            mirror::mirror_never_shows_half_a_transaction,
            mirror::mirror_subscription_delivers_each_change_once,
            mirror::mirror_waits_for_a_write_outside_its_range,
            mirror::mirror_resync_finds_no_drift,
            mirror::mirror_with_collections_lists_then_follows,
            mirror::mirror_with_collections_never_shows_half_a_transaction,
            mirror::mirror_with_collections_converges,
            mirror::mirror_relists_once_after_compaction,
            read::get_missing_and_present,
            read::range_prefix_and_interval,
            read::range_limit_and_paging,
            read::range_keys_only_and_count_only,
            read::range_prefix_isolation,
            read::range_prefix_ending_in_ff,
            read::range_key_rules,
            snapshot::range_at_a_past_revision,
            snapshot::paged_range_reads_one_revision,
            snapshot::range_at_compacted_revision_is_rejected,
            busy::paged_listing_of_a_quiet_directory_while_others_write,
            busy::paged_listing_while_its_own_keys_are_written,
            txn::txn_compare_version,
            txn::txn_compare_mod_revision,
            txn::txn_compare_create_revision,
            txn::txn_compare_value,
            txn::txn_compare_exists_and_absent,
            txn::txn_compare_lease,
            txn::txn_branches_and_results,
            txn::txn_all_compares_must_hold,
            update::update_loses_no_concurrent_change,
            watch::watch_key_sees_puts_and_deletes,
            watch::watch_prefix_one_batch_per_txn,
            watch::watch_is_ordered_without_gaps,
            watch::watch_resumes_from_revision,
            watch::watch_replays_a_long_backlog,
            watch::watch_from_a_future_revision,
            watch::watch_prev_values,
            watch::watch_from_compacted_revision,
            watch::watch_prefix_isolation,
            watch::watch_interval,
            watch::watch_resumes_from_a_position,
            watch::watch_progress_marks_the_catch_up,
            write::put_returns_prev,
            write::delete_returns_prev,
            write::delete_prefix_counts_and_isolates,
        }
    };
}

/// Expands the case list of [`conformance_suite!`]; not part of the public interface.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_cases {
    ($factory:path; $($group:ident :: $case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::conformance::run_case(stringify!($case), async {
                    if let Some(store) = $factory().await {
                        $crate::conformance::$group::$case(store).await;
                    }
                });
            }
        )*
    };
}
