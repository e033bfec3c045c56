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
    pub(crate) reconcile: Script,
    /// Takes or renews the reconciler's leader key: `KEYS[1]` the key, `ARGV` the store's id
    /// and the TTL in ms; returns 1 while the caller leads.
    pub(crate) lead: Script,
    /// Deletes the reconciler's leader key if the store of `ARGV[1]` holds it.
    pub(crate) resign: Script,
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
            reconcile: with_lib!("scripts/reconcile.lua"),
            lead: Script::new(
                "if redis.call('GET', KEYS[1]) == ARGV[1] then \
                   redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end \
                 if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end \
                 return 0",
            ),
            resign: Script::new(
                "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end \
                 return 0",
            ),
        }
    }
}
