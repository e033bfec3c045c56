//! Benchmarks (redis).
fn main() {}
