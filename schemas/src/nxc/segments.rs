//! The validated variable segments of the nxc keyspace. `:` is the separator, so no segment
//! may hold one; each is letters, digits, `_`, `.` and `-`, stored verbatim.

keyplane_core::text_segment!(
    /// A realm (business unit) id such as `test_realm` or `realmA`, at most 64 bytes.
    pub RealmId, charset = "[a-zA-Z0-9_.-]", max_len = 64, policy = Reject
);

keyplane_core::text_segment!(
    /// A provider (payment channel) name such as `Alipay`, at most 64 bytes.
    pub ProviderName, charset = "[a-zA-Z0-9_.-]", max_len = 64, policy = Reject
);

keyplane_core::text_segment!(
    /// A profile id (an AppId) such as `app_001` or `2021000123456789`, at most 64 bytes.
    pub ProfileId, charset = "[a-zA-Z0-9_.-]", max_len = 64, policy = Reject
);
