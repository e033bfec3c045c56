//! The validated variable segments of the balancer keyspace. Key and group ids are the
//! database's `uint` primary keys (`u64`, canonical decimal).

keyplane_core::text_segment!(
    /// The root of a cache that shares its store with others ([`Balancer::with_root`](super::Balancer::with_root)),
    /// such as `gemini` (keys `gemini:key:7`...): letters, digits, `_` and `-`, at most 64
    /// bytes.
    pub BalancerRoot, charset = "[a-zA-Z0-9_-]", max_len = 64, policy = Reject
);
