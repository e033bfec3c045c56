//! Least privilege: the Redis commands and key patterns an ACL user needs for the store.

use crate::config::RedisConfig;
use crate::reconcile::glob_prefix;

/// Every command a [`RedisStore`](crate::RedisStore) sends, outside its scripts and inside
/// them (Redis checks a script's commands against the caller's ACL too): an ACL user needs
/// exactly these, on its key patterns and the store's internal prefix.
pub const REQUIRED_COMMANDS: &[&str] = &[
    // Sent by the client.
    "fcall",
    "evalsha",
    "script|load",
    "get",
    "hget",
    "scan",
    "xrange",
    "xread",
    "zrangebylex",
    "multi",
    "exec",
    "ping",
    "select",
    "wait",
    // Run inside the scripts.
    "del",
    "exists",
    "hdel",
    "hexists",
    "hgetall",
    "hlen",
    "hmget",
    "hset",
    "incr",
    "lindex",
    "llen",
    "lmove",
    "lpos",
    "lpush",
    "lrange",
    "lrem",
    "mget",
    "mset",
    "pexpire",
    "rpush",
    "sadd",
    "scard",
    "set",
    "sismember",
    "smembers",
    "srem",
    "sscan",
    "time",
    "type",
    "xadd",
    "xtrim",
    "zadd",
    "zlexcount",
    "zrange",
    "zrem",
    "zrangebyscore",
    "zrevrangebylex",
    "zcard",
    "zremrangebyrank",
    "rename",
    "zscore",
];

/// What the background reconciler adds when [`RedisConfig::reconcile_roots`] is set and
/// [`RedisConfig::keyspace_notifications`] is on: reading (and, when the server's setting
/// lacks classes it needs, changing) `notify-keyspace-events`, and subscribing to the
/// roots' keyspace channels. Without them the reconciler still runs its periodic passes.
pub const RECONCILER_COMMANDS: &[&str] =
    &["config|get", "config|set", "psubscribe", "punsubscribe"];

/// What a store on Redis Cluster adds: the cluster client reads the slot map
/// (`CLUSTER SLOTS`) when it connects and after a `MOVED`. Every node needs the ACL user.
pub const CLUSTER_COMMANDS: &[&str] = &["cluster|slots"];

/// What a store under Sentinel adds on the data servers: it asks the server the sentinels
/// name whether it is the master (`ROLE`). Every data server needs the ACL user (ACL users
/// are not replicated), since any replica may become the master.
pub const MASTER_COMMANDS: &[&str] = &["role"];

/// All a store asks of the sentinels: the master's address. The sentinels' ACL user
/// ([`RedisConfig::sentinel_username`]) needs this and nothing else.
pub const SENTINEL_COMMANDS: &[&str] = &["sentinel|get-master-addr-by-name"];

impl RedisConfig {
    /// The rules of an ACL user (`ACL SETUSER name on >password RULES`) that may use a store
    /// of this configuration on the keys matching `key_patterns` (Redis glob patterns, such
    /// as `nxc:*`) and nothing else: those patterns and the internal prefix's keys,
    /// [`REQUIRED_COMMANDS`] (and [`RECONCILER_COMMANDS`] with the keyspace channels of
    /// the reconcile roots when the reconciler follows notifications, and
    /// [`CLUSTER_COMMANDS`] on a cluster, [`MASTER_COMMANDS`] under Sentinel), no other
    /// command and no other channel.
    ///
    /// Outside them every operation fails with
    /// [`ErrorKind::PermissionDenied`](keyplane_contract::ErrorKind::PermissionDenied), and
    /// nothing is written: each script checks every key it will write against the user's
    /// ACL (Redis 7's `redis.acl_check_cmd`) before its first write.
    ///
    /// ```
    /// let rules = keyplane_redis::RedisConfig::default().acl_rules(&["nxc:*"]);
    /// assert!(rules.starts_with("resetkeys ~nxc:* ~__kv:* resetchannels -@all +fcall +evalsha "));
    /// ```
    pub fn acl_rules(&self, key_patterns: &[&str]) -> String {
        let mut rules = vec!["resetkeys".to_owned()];
        rules.extend(key_patterns.iter().map(|p| format!("~{p}")));
        rules.push(format!("~{}", glob(&self.internal_prefix)));
        rules.push("resetchannels".to_owned());
        rules.push("-@all".to_owned());
        rules.extend(REQUIRED_COMMANDS.iter().map(|c| format!("+{c}")));
        if self.is_cluster() {
            rules.extend(CLUSTER_COMMANDS.iter().map(|c| format!("+{c}")));
        }
        if self.is_sentinel() {
            rules.extend(MASTER_COMMANDS.iter().map(|c| format!("+{c}")));
        }
        if !self.reconcile_roots.is_empty() && self.keyspace_notifications {
            rules.extend(RECONCILER_COMMANDS.iter().map(|c| format!("+{c}")));
            let db = self.database.unwrap_or(0);
            rules.extend(
                self.reconcile_roots
                    .iter()
                    .map(|root| format!("&__keyspace@{db}__:{}", glob(root))),
            );
        }
        rules.join(" ")
    }

    /// The rules of the sentinels' ACL user (`ACL SETUSER name on >password RULES` on each
    /// sentinel) for a store under Sentinel: [`SENTINEL_COMMANDS`], no key, no channel.
    ///
    /// ```
    /// let rules = keyplane_redis::RedisConfig::default().sentinel_acl_rules();
    /// assert_eq!(rules, "resetkeys resetchannels -@all +sentinel|get-master-addr-by-name");
    /// ```
    pub fn sentinel_acl_rules(&self) -> String {
        let mut rules = vec![
            "resetkeys".to_owned(),
            "resetchannels".to_owned(),
            "-@all".to_owned(),
        ];
        rules.extend(SENTINEL_COMMANDS.iter().map(|c| format!("+{c}")));
        rules.join(" ")
    }
}

/// The glob pattern of every key starting with `prefix`.
fn glob(prefix: &str) -> String {
    String::from_utf8_lossy(&glob_prefix(prefix.as_bytes())).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command the scripts call by name is in the list.
    #[test]
    fn the_list_covers_every_command_of_the_scripts() {
        let scripts = [
            include_str!("core/scripts/lib.lua"),
            include_str!("core/scripts/txn.lua"),
            include_str!("core/scripts/put.lua"),
            include_str!("core/scripts/delete.lua"),
            include_str!("core/scripts/range.lua"),
            include_str!("core/scripts/watch_from.lua"),
            include_str!("core/scripts/compact.lua"),
            include_str!("core/scripts/lease_grant.lua"),
            include_str!("core/scripts/lease_keep_alive.lua"),
            include_str!("core/scripts/lease_revoke.lua"),
            include_str!("core/scripts/lease_sweep.lua"),
            include_str!("core/scripts/lease_time_to_live.lua"),
            include_str!("core/scripts/lease_list.lua"),
            include_str!("core/scripts/reconcile.lua"),
            include_str!("core/scripts/index.lua"),
            include_str!("core/scripts/index_upgrade.lua"),
            include_str!("core/scripts/lib.lua"),
            include_str!("core/scripts/run.lua"),
            include_str!("core/scripts/batch.lua"),
        ];
        let mut seen = 0;
        for script in scripts {
            // `redis.call('X', ...)`, and the tables of size commands called through a variable.
            let called = script.split("redis.call('").skip(1);
            let tables = script
                .lines()
                .filter(|l| l.starts_with("local SIZE"))
                .flat_map(|l| l.split('\'').skip(1).step_by(2));
            for name in called.filter_map(|c| c.split('\'').next()).chain(tables) {
                seen += 1;
                assert!(
                    REQUIRED_COMMANDS.contains(&name.to_lowercase().as_str()),
                    "{name} is not in REQUIRED_COMMANDS"
                );
            }
        }
        assert!(seen > 40, "{seen}");
    }

    #[test]
    fn rules_name_the_patterns_the_internal_prefix_and_the_commands() {
        let config = RedisConfig {
            internal_prefix: "k*v:".to_owned(),
            ..RedisConfig::default()
        };
        let rules = config.acl_rules(&["app:*", "jxt/*"]);
        assert!(rules.starts_with("resetkeys ~app:* ~jxt/* ~k\\*v:* resetchannels -@all +"));
        assert!(rules.contains(" +evalsha "));
        assert!(!rules.contains("config"));
        assert!(!rules.contains("cluster"));
        let cluster = RedisConfig::new("redis+cluster://10.0.0.1:7000").acl_rules(&["nxc:*"]);
        assert!(cluster.ends_with(" +cluster|slots"), "{cluster}");
        let config = RedisConfig {
            reconcile_roots: vec!["nxc:".to_owned()],
            database: Some(2),
            ..RedisConfig::default()
        };
        let rules = config.acl_rules(&["nxc:*"]);
        assert!(
            rules.ends_with(" +punsubscribe &__keyspace@2__:nxc:*"),
            "{rules}"
        );
    }
}
