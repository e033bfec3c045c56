//! The background reconciler: follows keyspace notifications under the configured roots and
//! scans them in full periodically, so that other programs' writes reach ranges and watches.
//!
//! Every store with roots runs this task, but only one per Redis database, internal prefix
//! and set of roots works at a time: the one holding the leader key of those roots
//! (`P reconciler:<digest of the roots>`, renewed every second, expiring after five). Stores
//! with other roots elect their own, so that a tool following one prefix (`kvctl watch`)
//! is never kept idle by a service that reconciles another. The reconcile script is
//! idempotent besides (a key that already matches its metadata produces no event), so
//! reconcilers whose roots overlap, or a pass that overlaps a notification, never repeat an
//! event.

use crate::core::Core;
use crate::core::reconcile::{Mode, glob_prefix, reconcile_keys, reconcile_prefix};
use crate::error::map_error;
use futures::StreamExt;
use keyplane_contract::{Error, ErrorKind, Result};
use redis::aio::PubSubStream;
use std::collections::BTreeSet;
use std::sync::Weak;
use std::time::Duration;
use tokio::time::{Instant, MissedTickBehavior};

/// How long the leader key lives unless renewed.
const LEADER_TTL: Duration = Duration::from_secs(5);
/// How often the leader renews its key and the others try to take it.
const RENEW: Duration = Duration::from_secs(1);
/// How long notified keys wait to be reconciled together.
const FLUSH_DELAY: Duration = Duration::from_millis(5);
/// Notified keys that are reconciled at once without waiting for the delay.
const FLUSH_AT: usize = 2000;
/// The notification classes the reconciler needs: keyspace channels (`K`) for generic
/// commands, strings, sets, hashes and lists, expiry and eviction.
const NEEDED_FLAGS: &str = "Kg$shlxe";

/// The task of one store: takes part in the leader election until the store is dropped,
/// and reconciles while it leads.
pub(crate) async fn run(core: Weak<Core>, id: String) {
    loop {
        match lead(&core, &id).await {
            Ok(()) => {}
            Err(err) => tracing::debug!(%err, "the reconciler failed; retrying"),
        }
        if core.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(RENEW).await;
    }
}

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
    let led: i64 = core
        .scripts
        .lead
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
        let script = core.scripts.resign.clone();
        let (key, id) = (leader_key(core), id.to_owned());
        let mut con = core.con.clone();
        runtime.spawn(async move {
            let _: redis::RedisResult<i64> = script.key(key).arg(id).invoke_async(&mut con).await;
        });
    }
}

/// Leads while the leader key stays this store's: subscribes to notifications, runs a full
/// pass (which covers whatever happened before the subscription), then reconciles notified
/// keys in small batches and every root at each interval. Returns when leadership is lost
/// or the store dropped.
async fn lead(weak: &Weak<Core>, id: &str) -> Result<()> {
    let interval = {
        let Some(core) = weak.upgrade() else {
            return Ok(());
        };
        if !try_lead(&core, id).await? {
            return Ok(());
        }
        core.config.reconcile_period()
    };
    let mut notifications = subscribe_if_configured(weak).await;
    full_pass(weak).await?;
    let mut renew = tokio::time::interval_at(Instant::now() + RENEW, RENEW);
    renew.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // Without a periodic pass, a tick that never comes in practice (a year).
    let period = interval.unwrap_or(Duration::from_secs(365 * 24 * 3600));
    let mut pass = tokio::time::interval_at(Instant::now() + period, period);
    pass.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut pending: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut deadline: Option<Instant> = None;
    loop {
        tokio::select! {
            message = next_key(&mut notifications), if notifications.is_some() => {
                match message {
                    Some(key) => {
                        let Some(core) = weak.upgrade() else { return Ok(()) };
                        if core.in_roots(&key) {
                            pending.insert(key);
                            deadline.get_or_insert_with(|| Instant::now() + FLUSH_DELAY);
                        }
                        if pending.len() >= FLUSH_AT {
                            deadline = Some(Instant::now());
                        }
                    }
                    None => {
                        // The subscription connection is gone: notifications sent meanwhile
                        // are lost, so the next subscription is followed by a full pass.
                        notifications = None;
                    }
                }
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                let Some(core) = weak.upgrade() else { return Ok(()) };
                let keys: Vec<Vec<u8>> = std::mem::take(&mut pending).into_iter().collect();
                deadline = None;
                if let Err(err) = reconcile_keys(&core, &keys, Mode::Full).await {
                    // Kept for the next attempt; the periodic pass is the safety net too.
                    pending.extend(keys);
                    deadline = Some(Instant::now() + RENEW);
                    tracing::debug!(%err, "reconciling notified keys failed");
                }
            }
            _ = renew.tick() => {
                let Some(core) = weak.upgrade() else { return Ok(()) };
                if !try_lead(&core, id).await? {
                    return Ok(());
                }
                drop(core);
                if notifications.is_none() && wants_notifications(weak) {
                    notifications = subscribe_if_configured(weak).await;
                    if notifications.is_some() {
                        full_pass(weak).await?;
                    }
                }
            }
            _ = pass.tick() => {
                // Notifications may have been turned off on the server meanwhile.
                if notifications.is_some() {
                    let Some(core) = weak.upgrade() else { return Ok(()) };
                    if !notifications_on(&core).await.unwrap_or(false) {
                        notifications = None;
                    }
                }
                full_pass(weak).await?;
            }
        }
    }
}

fn wants_notifications(weak: &Weak<Core>) -> bool {
    weak.upgrade()
        .is_some_and(|core| core.config.keyspace_notifications)
}

/// The next key named by a notification, `None` when the subscription ended.
async fn next_key(notifications: &mut Option<PubSubStream>) -> Option<Vec<u8>> {
    let stream = notifications.as_mut()?;
    loop {
        let message = stream.next().await?;
        let Ok(channel) = message.get_channel::<Vec<u8>>() else {
            continue;
        };
        // `__keyspace@<db>__:<key>`
        if let Some(at) = channel.windows(3).position(|w| w == b"__:") {
            return Some(channel[at + 3..].to_vec());
        }
    }
}

/// Reconciles every root once.
async fn full_pass(weak: &Weak<Core>) -> Result<()> {
    let Some(core) = weak.upgrade() else {
        return Ok(());
    };
    for root in &core.config.reconcile_roots {
        let report = reconcile_prefix(&core, root.as_bytes()).await?;
        if !report.is_empty() {
            tracing::debug!(?report, root, "reconciled other programs' writes");
        }
    }
    Ok(())
}

/// Subscribes to the keyspace notifications of every root when the configuration asks for
/// them and the server sends them (turning them on where allowed); `None` otherwise.
async fn subscribe_if_configured(weak: &Weak<Core>) -> Option<PubSubStream> {
    let core = weak.upgrade()?;
    if !core.config.keyspace_notifications {
        return None;
    }
    match subscribe(&core).await {
        Ok(stream) => Some(stream),
        Err(err) => {
            tracing::info!(
                %err,
                "keyspace notifications are unavailable; other programs' writes reach \
                 ranges and watches through the periodic scan"
            );
            None
        }
    }
}

async fn subscribe(core: &Core) -> Result<PubSubStream> {
    if !notifications_on(core).await? {
        enable_notifications(core).await?;
    }
    // Under Sentinel, the master the sentinels name now: after a failover the sentinels
    // disconnect the demoted master's clients, the subscription ends, and the next one
    // goes to the new master (whose notification setting `notifications_on` checks anew,
    // since configuration is not replicated), followed by a full pass.
    let connect = async {
        match core
            .dial
            .pubsub_client(core.config.connect_timeout, core.config.request_timeout)
            .await?
        {
            Some(client) => client.get_async_pubsub().await.map(Some),
            None => Ok(None),
        }
    };
    let pubsub = tokio::time::timeout(core.config.connect_timeout * 2, connect)
        .await
        .map_err(|_| Error::new(ErrorKind::Timeout, "subscribing to notifications timed out"))?
        .map_err(|e| map_error("reconcile", e))?;
    let Some(mut pubsub) = pubsub else {
        return Err(Error::new(
            ErrorKind::Unsupported,
            "the reconciler does not run on Redis Cluster",
        ));
    };
    for root in &core.config.reconcile_roots {
        let mut channel = format!("__keyspace@{}__:", core.db).into_bytes();
        channel.extend(glob_prefix(root.as_bytes()));
        pubsub
            .psubscribe(channel)
            .await
            .map_err(|e| map_error("reconcile", e))?;
    }
    Ok(pubsub.into_on_message())
}

/// The server's `notify-keyspace-events` setting.
async fn notification_flags(core: &Core) -> Result<String> {
    let reply: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("notify-keyspace-events")
        .query_async(&mut core.con.clone())
        .await
        .map_err(|e| map_error("reconcile", e))?;
    Ok(reply.get(1).cloned().unwrap_or_default())
}

/// Whether the server sends every notification the reconciler needs.
async fn notifications_on(core: &Core) -> Result<bool> {
    Ok(missing_flags(&notification_flags(core).await?).is_empty())
}

/// Adds the missing notification classes to the server's setting, keeping the others.
async fn enable_notifications(core: &Core) -> Result<()> {
    let current = notification_flags(core).await?;
    let wanted = format!("{current}{}", missing_flags(&current));
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg(wanted)
        .query_async(&mut core.con.clone())
        .await
        .map_err(|e| map_error("reconcile", e))?;
    Ok(())
}

/// The classes of [`NEEDED_FLAGS`] that `flags` lacks (`A` stands for every class but `K`,
/// `E`, `m` and `n`).
fn missing_flags(flags: &str) -> String {
    NEEDED_FLAGS
        .chars()
        .filter(|&c| !(flags.contains(c) || (c != 'K' && flags.contains('A'))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::missing_flags;

    #[test]
    fn missing_flags_reads_the_alias() {
        assert_eq!(missing_flags(""), "Kg$shlxe");
        assert_eq!(missing_flags("AKE"), "");
        assert_eq!(missing_flags("KA"), "");
        assert_eq!(missing_flags("Ex"), "Kg$shle");
        assert_eq!(missing_flags("Kg$shlxe"), "");
    }
}
