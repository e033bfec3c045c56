//! Benchmarks (etcd).
fn main() {}
