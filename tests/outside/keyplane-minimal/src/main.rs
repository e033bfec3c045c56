//! Derives and typed operations with `keyplane` as the one library dependency, default
//! features off (no redb, no proptest strategies).

#[path = "../../flow.rs"]
mod flow;

#[tokio::main(flavor = "current_thread")]
async fn main() -> keyplane::Result<()> {
    flow::run().await?;
    println!("outside crate keyplane-minimal: ok");
    Ok(())
}
