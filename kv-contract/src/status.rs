//! What a store's server says about itself: [`ServerStatus`] and its [`Member`]s, as
//! [`Store::server_status`](crate::Store::server_status) answers.

use serde::Serialize;

/// The server behind a store, as far as the backend can tell: what `etcdctl endpoint status`
/// and `etcdctl member list` show on etcd, `INFO` and `CLUSTER NODES` on Redis. An embedded
/// store (memory, sled) has no server: no version and no members.
///
/// Non-exhaustive, so that a backend can report more later without breaking callers; a
/// backend builds one from [`ServerStatus::default`] and sets the fields it knows.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ServerStatus {
    /// The server's version (etcd's `status` version, Redis' `redis_version`); `None` for an
    /// embedded store.
    pub version: Option<String>,
    /// The servers that hold the store: etcd's cluster members, the Redis master and its
    /// replicas (on Sentinel, the master the sentinels name), or every node of a Redis
    /// Cluster. Empty for an embedded store.
    pub members: Vec<Member>,
    /// The size of the data in bytes, where the server says so at no cost: etcd's backend
    /// database size, Redis' `used_memory`, sled's size on disk.
    pub db_size: Option<u64>,
    /// etcd's Raft term (it grows with each election); `None` elsewhere.
    pub raft_term: Option<u64>,
}

/// One server of a store's deployment.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Member {
    /// The server's name: etcd's member name; on Redis its `host:port` (a cluster node
    /// also has its node ID in [`Member::id`]).
    pub name: String,
    /// The server's ID as the backend shows it (etcd's member ID in hex, a Redis Cluster
    /// node ID); `None` where it has none.
    pub id: Option<String>,
    /// Where clients reach it: etcd's client URLs, Redis' `host:port`.
    pub client_urls: Vec<String>,
    /// What it is in the deployment.
    pub role: MemberRole,
}

impl Member {
    /// A member named `name` with role `role`, no ID and no client URL yet.
    pub fn new(name: impl Into<String>, role: MemberRole) -> Self {
        Member {
            name: name.into(),
            role,
            ..Member::default()
        }
    }

    /// Whether the member takes the writes: etcd's Raft leader, a Redis master.
    pub fn is_leader(&self) -> bool {
        matches!(self.role, MemberRole::Leader | MemberRole::Master)
    }
}

/// The role of a [`Member`], in the backend's own terms.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberRole {
    /// etcd's Raft leader.
    Leader,
    /// An etcd voting member that is not the leader.
    Follower,
    /// An etcd learner (a non-voting member catching up).
    Learner,
    /// A Redis master (on a cluster, one of several, each serving its slots).
    Master,
    /// A Redis replica.
    Replica,
    /// The backend could not tell.
    #[default]
    Unknown,
}

impl MemberRole {
    /// The role's name as the JSON output spells it: `leader`, `follower`, `learner`,
    /// `master`, `replica` or `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            MemberRole::Leader => "leader",
            MemberRole::Follower => "follower",
            MemberRole::Learner => "learner",
            MemberRole::Master => "master",
            MemberRole::Replica => "replica",
            MemberRole::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for MemberRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
