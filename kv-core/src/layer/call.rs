//! [`Call`]: which [`Store`](crate::Store) method a layer is looking at.

/// Which [`Store`](crate::Store) method a call is.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Call {
    /// [`Store::revision`](crate::Store::revision).
    Revision,
    /// [`Store::range`](crate::Store::range).
    Range,
    /// [`Store::txn`](crate::Store::txn).
    Txn,
    /// [`Store::lease_grant`](crate::Store::lease_grant).
    LeaseGrant,
    /// [`Store::lease_keep_alive`](crate::Store::lease_keep_alive).
    LeaseKeepAlive,
    /// [`Store::lease_revoke`](crate::Store::lease_revoke).
    LeaseRevoke,
    /// [`Store::lease_time_to_live`](crate::Store::lease_time_to_live).
    LeaseTimeToLive,
    /// [`Store::lease_list`](crate::Store::lease_list).
    LeaseList,
    /// [`Store::server_status`](crate::Store::server_status).
    ServerStatus,
    /// [`Store::watch`](crate::Store::watch).
    Watch,
    /// [`Store::compact`](crate::Store::compact).
    Compact,
    /// [`Store::get`](crate::Store::get).
    Get,
    /// [`Store::put`](crate::Store::put).
    Put,
    /// [`Store::delete`](crate::Store::delete).
    Delete,
    /// [`Store::delete_prefix`](crate::Store::delete_prefix).
    DeletePrefix,
    /// [`Store::collection`](crate::Store::collection).
    Collection,
}

impl Call {
    /// Every call, in declaration order.
    pub const ALL: [Call; 16] = [
        Call::Revision,
        Call::Range,
        Call::Txn,
        Call::LeaseGrant,
        Call::LeaseKeepAlive,
        Call::LeaseRevoke,
        Call::LeaseTimeToLive,
        Call::LeaseList,
        Call::ServerStatus,
        Call::Watch,
        Call::Compact,
        Call::Get,
        Call::Put,
        Call::Delete,
        Call::DeletePrefix,
        Call::Collection,
    ];

    /// The method's name (`"get"`, `"lease_grant"`...), as spans and metrics label it.
    pub fn name(self) -> &'static str {
        match self {
            Call::Revision => "revision",
            Call::Range => "range",
            Call::Txn => "txn",
            Call::LeaseGrant => "lease_grant",
            Call::LeaseKeepAlive => "lease_keep_alive",
            Call::LeaseRevoke => "lease_revoke",
            Call::LeaseTimeToLive => "lease_time_to_live",
            Call::LeaseList => "lease_list",
            Call::ServerStatus => "server_status",
            Call::Watch => "watch",
            Call::Compact => "compact",
            Call::Get => "get",
            Call::Put => "put",
            Call::Delete => "delete",
            Call::DeletePrefix => "delete_prefix",
            Call::Collection => "collection",
        }
    }

    /// The call's position in [`Call::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// Whether the call may change the store's data (a transaction, a single-key write, a
    /// collection operation, a compaction, a lease revoke). A transaction or collection
    /// operation counts as a write whatever its ops are.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Call::Txn
                | Call::Put
                | Call::Delete
                | Call::DeletePrefix
                | Call::Collection
                | Call::Compact
                | Call::LeaseRevoke
        )
    }
}
