//! Benchmarks (sled).
fn main() {}
