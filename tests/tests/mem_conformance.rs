//! The conformance suite and the model-based property test on `MemStore`.

use keyplane_tests::backends::memory;

keyplane_tests::conformance_suite!(memory);

#[test]
fn model_sequences_match_the_reference_model() {
    keyplane_tests::model::check(memory, 256);
}

/// `LeaseKeeper` and `Lock` under paused time: renewals, loss after failed renewals, expiry.
mod keeper_and_lock {
    use keyplane_core::layer::{Call, Fault, FaultLayer, FaultStore, StoreExt};
    use keyplane_core::recipes::{LeaseKeeper, Lock};
    use keyplane_core::{ErrorKind, Store};
    use keyplane_mem::MemStore;
    use std::sync::Arc;
    use std::time::Duration;

    /// A store whose lease renewals fail with `Unavailable` while its faults are on, as when
    /// the server cannot be reached. They start off.
    fn unreachable_renewals() -> Arc<FaultStore<MemStore>> {
        let store = MemStore::new()
            .layer(FaultLayer::new(0).with(Fault::unavailable().on([Call::LeaseKeepAlive])));
        store.set_enabled(false);
        Arc::new(store)
    }

    #[tokio::test(start_paused = true)]
    async fn keeper_renews_for_many_ttls() {
        let store: Arc<dyn Store> = Arc::new(MemStore::new());
        let keeper = LeaseKeeper::grant(store.clone(), Duration::from_secs(5))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!keeper.is_lost());
        // One renewal every third of the TTL: 36 in a minute.
        assert!(keeper.renewals() >= 35, "{} renewals", keeper.renewals());
        keeper.renewed(40).await.unwrap();
        let info = store.lease_time_to_live(keeper.id()).await.unwrap();
        assert!(info.remaining > Duration::ZERO);
        let id = keeper.id();
        drop(keeper);
        // Without its keeper the lease expires after its TTL.
        tokio::time::sleep(Duration::from_secs(6)).await;
        let gone = store.lease_time_to_live(id).await.unwrap_err();
        assert_eq!(gone.kind(), ErrorKind::LeaseNotFound);
    }

    #[tokio::test(start_paused = true)]
    async fn keeper_reports_loss_after_a_ttl_of_failed_renewals() {
        let flaky = unreachable_renewals();
        let store: Arc<dyn Store> = flaky.clone();
        let keeper = LeaseKeeper::grant(store.clone(), Duration::from_secs(3))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(!keeper.is_lost());
        // A short outage is ridden out.
        flaky.set_enabled(true);
        tokio::time::sleep(Duration::from_secs(1)).await;
        flaky.set_enabled(false);
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(!keeper.is_lost(), "a short outage lost the lease");
        // An outage longer than the TTL loses it.
        flaky.set_enabled(true);
        let lost = keeper.lost().await;
        assert_eq!(lost.kind(), ErrorKind::LockLost, "{lost}");
        assert!(keeper.is_lost());
    }

    #[tokio::test(start_paused = true)]
    async fn expired_holder_hands_the_lock_on() {
        let store: Arc<dyn Store> = Arc::new(MemStore::new());
        let lock = Lock::new(store.clone(), "jobs/nightly").unwrap();
        let crashed = store.lease_grant(Duration::from_secs(30)).await.unwrap();
        let holder = lock.lock(crashed.id).await.unwrap();
        let keeper = LeaseKeeper::grant(store.clone(), Duration::from_secs(30))
            .await
            .unwrap();
        let waiter = {
            let (lock, id) = (lock.clone(), keeper.id());
            tokio::spawn(async move { lock.lock(id).await })
        };
        let next = waiter.await.unwrap().unwrap();
        assert_eq!(holder.lost().await.kind(), ErrorKind::LockLost);
        assert!(next.fencing_token() > holder.fencing_token());
        assert_eq!(
            holder.unlock().await.unwrap_err().kind(),
            ErrorKind::LockLost
        );
        next.unlock().await.unwrap();
    }
}
