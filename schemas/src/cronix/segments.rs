//! The validated variable segments of the cronix keyspace. Node ids are UUIDs
//! ([`uuid::Uuid`], lowercase hyphenated) and process ids are `u32`.

keyplane_core::text_segment!(
    /// A job id such as `nightly-backup` or `1024`: letters, digits, `_` and `-`, at most 64
    /// bytes, stored verbatim.
    pub JobId, charset = "[a-zA-Z0-9_-]", max_len = 64, policy = Reject
);

keyplane_core::text_segment!(
    /// The name of a distributed lock such as `scheduler.dispatch`: letters, digits, `.`, `_`
    /// and `-`, at most 128 bytes, stored verbatim.
    pub LockName, charset = "[a-zA-Z0-9._-]", max_len = 128, policy = Reject
);
