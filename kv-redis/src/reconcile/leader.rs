//! The reconcilers' leader election: of the stores with the same roots on one Redis
//! database and internal prefix, only the one holding the leader key reconciles
//! (`P reconciler:<digest of the roots>`, renewed every [`RENEW`], expiring after
//! [`LEADER_TTL`]). The two small scripts that take and hand over the key live here, not in
//! the function library: they touch no store data and need no revision.

use crate::core::Core;
use crate::error::map_error;
use keyplane_contract::Result;
use redis::Script;
use std::sync::LazyLock;
use std::time::Duration;

/// How long the leader key lives unless renewed.
const LEADER_TTL: Duration = Duration::from_secs(5);
/// How often the leader renews its key and the others try to take it.
pub(crate) const RENEW: Duration = Duration::from_secs(1);

/// Takes or renews the leader key: `KEYS[1]` the key, `ARGV` the store's id and the TTL in
/// ms; returns 1 while the caller leads.
static LEAD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "if redis.call('GET', KEYS[1]) == ARGV[1] then \
           redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end \
         if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end \
         return 0",
    )
});

/// Deletes the leader key if the store of `ARGV[1]` holds it.
static RESIGN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end \
         return 0",
    )
});

/// The leader key of the reconcilers of `core`'s roots: `P reconciler:` and the digest of
/// the roots, sorted and NUL-separated (the digest keeps the key short and free of the
/// roots' bytes).
fn leader_key(core: &Core) -> Vec<u8> {
    let mut roots: Vec<&str> = core
        .config
        .reconcile_roots
        .iter()
        .map(String::as_str)
        .collect();
    roots.sort_unstable();
    roots.dedup();
    let mut key = core.internal("reconciler:");
    key.extend(crate::core::value_digest(roots.join("\0").as_bytes()));
    key
}

/// Takes or renews the leader key; true while this store leads.
pub(crate) async fn try_lead(core: &Core, id: &str) -> Result<bool> {
    let ttl = LEADER_TTL.as_millis().to_string();
    let led: i64 = LEAD
        .key(leader_key(core))
        .arg(id)
        .arg(ttl)
        .invoke_async(&mut core.con.clone())
        .await
        .map_err(|e| map_error("reconcile", e))?;
    Ok(led == 1)
}

/// Deletes the leader key if the store of `id` holds it, so that another store takes over at
/// once rather than after the key expires. It runs on a task of the current runtime (if any),
/// since a store's `drop` cannot wait for it.
pub(crate) fn resign(core: &Core, id: &str) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let (key, id) = (leader_key(core), id.to_owned());
        let mut con = core.con.clone();
        runtime.spawn(async move {
            let _: redis::RedisResult<i64> = RESIGN.key(key).arg(id).invoke_async(&mut con).await;
        });
    }
}
