//! Leases: time-bounded grants that keys can be attached to.

use std::fmt;
use std::time::Duration;

/// A lease identifier, as granted by [`Store::lease_grant`](crate::Store::lease_grant).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct LeaseId(pub i64);

impl fmt::Display for LeaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:x}", self.0)
    }
}

/// A granted lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LeaseGrant {
    /// The lease's identifier.
    pub id: LeaseId,
    /// The TTL actually granted (the request rounded up to the backend's granularity).
    pub ttl: Duration,
}

/// What a backend knows of a live lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseInfo {
    /// The lease's identifier.
    pub id: LeaseId,
    /// The TTL it was granted with (and is renewed to by keep-alive).
    pub granted_ttl: Duration,
    /// Time left before it expires.
    pub remaining: Duration,
    /// Keys attached to it, ascending.
    pub keys: Vec<Vec<u8>>,
}
