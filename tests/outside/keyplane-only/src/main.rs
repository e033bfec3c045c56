//! Derives and typed operations with `keyplane` as the one library dependency.

#[path = "../../flow.rs"]
mod flow;

#[tokio::main(flavor = "current_thread")]
async fn main() -> keyplane::Result<()> {
    flow::run().await?;
    // The strategies the derives emit, through the facade's `proptest` feature.
    keyplane::keyspace::verify_keyspace::<flow::Tenants>().expect("keyspace invariants");
    keyplane::keyspace::verify_prefix::<flow::DatabaseDir>().expect("prefix invariants");
    keyplane::keyspace::verify_segment::<flow::Service>().expect("segment invariants");
    println!("outside crate keyplane-only: ok");
    Ok(())
}
