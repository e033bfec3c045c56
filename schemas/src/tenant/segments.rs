//! The validated variable segments of the tenant keyspace (§7.3 of the design document).

keyplane_core::text_segment!(
    /// A tenant code such as `default`: letters, digits and `_` only, checked when the tenant
    /// is created (§7.3); stored verbatim in `_index/by-code/{code}`.
    pub TenantCode, charset = "[a-zA-Z0-9_]", max_len = 64, policy = Reject
);

keyplane_core::text_segment!(
    /// An FTP username such as `default_ftp`: letters, digits, `.`, `_` and `-` (§7.3), never
    /// `.` or `..`; stored verbatim in `ftp/{username}` and `_index/ftp-user/{username}`.
    pub FtpUsername, charset = "[a-zA-Z0-9._-]", max_len = 64, policy = Reject
);

keyplane_core::text_segment!(
    /// A tenant's display name such as `默认租户`: any text, stored in `_index/by-name/{name}`
    /// percent-escaped as Go's `url.PathEscape` does (§7.3).
    pub TenantName, max_len = 256, policy = Escape
);

keyplane_core::text_segment!(
    /// A host name such as `api.example.com`, stored in `_index/host/{host}` percent-escaped
    /// as Go's `url.PathEscape` does (§7.3), so that a port (`:`) or any other character
    /// stays one segment.
    pub HostName, max_len = 253, policy = Escape
);

keyplane_core::text_segment!(
    /// A service code such as `evidence-command` (§2.2.2): lowercase kebab-case, as every
    /// literal of the layout.
    pub ServiceCode, charset = "[a-z0-9-]", max_len = 64, policy = Reject
);

keyplane_core::text_segment!(
    /// The name of a platform configuration under `platform/configs/{key}`: letters, digits,
    /// `.`, `_` and `-`.
    pub PlatformConfigName, charset = "[a-zA-Z0-9._-]", max_len = 128, policy = Reject
);

/// The service codes the design document names (§2.2.2); other codes of the same charset are
/// accepted too.
pub const KNOWN_SERVICES: [&str; 4] = [
    "evidence-command",
    "evidence-query",
    "file-storage",
    "security-management",
];
