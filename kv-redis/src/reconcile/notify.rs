//! The reconciler's keyspace notifications: turning them on where the server allows it,
//! subscribing to the channels of the roots (on the master the sentinels name, under
//! Sentinel), and reading the keys they name.

use crate::core::Core;
use crate::error::map_error;
use crate::reconcile::pass::glob_prefix;
use futures::StreamExt;
use keyplane_contract::{Error, ErrorKind, Result};
use redis::aio::PubSubStream;
use std::sync::Weak;

/// The notification classes the reconciler needs: keyspace channels (`K`) for generic
/// commands, strings, sets, hashes and lists, expiry and eviction.
const NEEDED_FLAGS: &str = "Kg$shlxe";

/// Whether a reconciler root covers `key` (never one under the internal prefix): the
/// notified keys that are reconciled.
pub(crate) fn in_roots(core: &Core, key: &[u8]) -> bool {
    !key.starts_with(core.config.internal_prefix.as_bytes())
        && core
            .config
            .reconcile_roots
            .iter()
            .any(|root| key.starts_with(root.as_bytes()))
}

/// Whether the store (while it lives) is configured to follow notifications.
pub(crate) fn wants_notifications(weak: &Weak<Core>) -> bool {
    weak.upgrade()
        .is_some_and(|core| core.config.keyspace_notifications)
}

/// The next key named by a notification, `None` when the subscription ended.
pub(crate) async fn next_key(notifications: &mut Option<PubSubStream>) -> Option<Vec<u8>> {
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

/// Subscribes to the keyspace notifications of every root when the configuration asks for
/// them and the server sends them (turning them on where allowed); `None` otherwise.
pub(crate) async fn subscribe_if_configured(weak: &Weak<Core>) -> Option<PubSubStream> {
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
pub(crate) async fn notifications_on(core: &Core) -> Result<bool> {
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
