//! Derives and typed operations with `keyplane` as the one library dependency, with its
//! default features: the embedded default store, redb, persists across a reopen, and sled is
//! not in the build.

#[path = "../../flow.rs"]
mod flow;

#[tokio::main(flavor = "current_thread")]
async fn main() -> keyplane::Result<()> {
    flow::run().await?;
    // The strategies the derives emit, through the facade's `proptest` feature.
    keyplane::keyspace::verify_keyspace::<flow::Tenants>().expect("keyspace invariants");
    keyplane::keyspace::verify_prefix::<flow::DatabaseDir>().expect("prefix invariants");
    keyplane::keyspace::verify_segment::<flow::Service>().expect("segment invariants");
    embedded_default().await?;
    println!("outside crate keyplane-only: ok");
    Ok(())
}

/// The default features' embedded store: a put survives closing and reopening the file, in a
/// directory that did not exist; a sled URL names the feature that would open it.
async fn embedded_default() -> keyplane::Result<()> {
    let dir = std::env::temp_dir().join(format!("keyplane-only-{}", std::process::id()));
    let url = format!("redb://{}", dir.join("data").join("store.redb").display());
    let store = keyplane::open(&url).await?;
    assert_eq!(store.capabilities().backend, "redb");
    store
        .put(b"app/k", b"kept", keyplane::PutOptions::default())
        .await?;
    drop(store);
    let store = keyplane::open(&url).await?;
    let entry = store
        .get(b"app/k")
        .await?
        .expect("the key survives a reopen");
    assert_eq!(entry.value, b"kept");
    drop(store);
    std::fs::remove_dir_all(&dir).expect("the test directory is removed");
    let err = keyplane::open("sled:///tmp/unused")
        .await
        .err()
        .expect("no sled backend in the default build");
    assert_eq!(err.kind(), keyplane::ErrorKind::Config);
    assert!(err.to_string().contains("`sled` feature"), "{err}");
    Ok(())
}
