//! The Lua scripts, loaded once per connection by SHA (EVALSHA, reloaded on NOSCRIPT).

use redis::Script;

/// Prepends the shared library (layout, event encoding, plain puts and deletes, commit, lease
/// expiry) to a writing script.
macro_rules! with_lib {
    ($file:literal) => {
        Script::new(concat!(
            include_str!("scripts/lib.lua"),
            "\n",
            include_str!($file)
        ))
    };
}

/// Every script the store runs.
pub(crate) struct Scripts {
    pub(crate) txn: Script,
    pub(crate) put: Script,
    pub(crate) delete: Script,
    pub(crate) range: Script,
    pub(crate) watch_from: Script,
    pub(crate) compact: Script,
    pub(crate) lease_grant: Script,
    pub(crate) lease_keep_alive: Script,
    pub(crate) lease_revoke: Script,
    pub(crate) lease_time_to_live: Script,
    pub(crate) lease_sweep: Script,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        Scripts {
            txn: with_lib!("scripts/txn.lua"),
            put: with_lib!("scripts/put.lua"),
            delete: with_lib!("scripts/delete.lua"),
            range: Script::new(include_str!("scripts/range.lua")),
            watch_from: Script::new(include_str!("scripts/watch_from.lua")),
            compact: with_lib!("scripts/compact.lua"),
            lease_grant: with_lib!("scripts/lease_grant.lua"),
            lease_keep_alive: with_lib!("scripts/lease_keep_alive.lua"),
            lease_revoke: with_lib!("scripts/lease_revoke.lua"),
            lease_time_to_live: with_lib!("scripts/lease_time_to_live.lua"),
            lease_sweep: with_lib!("scripts/lease_sweep.lua"),
        }
    }
}
