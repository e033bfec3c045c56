//! kvctl.
fn main() {}
