//! Benchmarks (keyspace).
fn main() {}
