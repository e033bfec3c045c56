//! Derives and typed operations with `keyplane-core` taken under another name (`kp`): the
//! derives name the crate as this crate does.

#[path = "../../flow.rs"]
mod flow;

/// A key derived in this file, used through the renamed crate's paths.
#[derive(kp::keyspace::Key, Debug, Clone, PartialEq, Eq)]
#[kv(template = "app/{service}/config", value = kp::keyspace::Text)]
struct ConfigKey {
    service: u32,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> kp::Result<()> {
    flow::run().await?;
    assert_eq!(
        kp::keyspace::Key::encode(&ConfigKey { service: 7 }),
        "app/7/config"
    );
    kp::keyspace::verify_key::<ConfigKey>().expect("key invariants");
    kp::keyspace::verify_keyspace::<flow::Tenants>().expect("keyspace invariants");
    kp::keyspace::verify_prefix::<flow::DatabaseDir>().expect("prefix invariants");
    println!("outside crate core-renamed: ok");
    Ok(())
}
