//! The model-based property test on RedisStore, against a harness-started `redis-server`.

use kv_core::Store;
use kv_redis::RedisStore;
use kv_tests::harness::shared_redis;
use std::sync::Arc;

async fn redis_store() -> Option<Arc<dyn Store>> {
    let server = shared_redis().await?;
    Some(Arc::new(
        RedisStore::from_url(&server.url())
            .await
            .expect("connect to Redis"),
    ))
}

#[test]
fn redis_store_matches_the_model() {
    kv_tests::model::check(redis_store, 128);
}
