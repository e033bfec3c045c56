//! A cluster store's co-location groups: each group's [`Core`], made on first use, and the
//! registry of groups (the set `{internal prefix}groups`, which every store adds a group to
//! before its first write there). The reads that span groups use them
//! (`range/span.rs`, `watch/span.rs`).

use crate::core::Core;
use crate::error::{map_error, unavailable};
use keyplane_contract::{KeyRange, Result};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often a watch spanning groups reads the registry for groups that appeared since.
/// A new group's changes are delivered from its first revision, so this bounds how late its
/// first events arrive, never whether they do.
pub(crate) const DISCOVERY: Duration = Duration::from_millis(200);

/// The co-location groups of a cluster store.
pub(crate) struct Groups {
    /// The store's own core, which the groups' cores are made from.
    pub(crate) base: Arc<Core>,
    /// The core of each group used so far, by hash tag.
    cores: Mutex<HashMap<Vec<u8>, Arc<Core>>>,
    /// The registry of groups.
    registry: Vec<u8>,
}

impl Groups {
    pub(crate) fn new(base: Arc<Core>) -> Self {
        Groups {
            registry: base.internal("groups"),
            base,
            cores: Mutex::new(HashMap::new()),
        }
    }

    /// The core of the group whose hash tag is `tag`.
    pub(crate) fn core(&self, tag: &[u8]) -> Arc<Core> {
        let mut cores = self.cores.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(
            cores
                .entry(tag.to_vec())
                .or_insert_with(|| Arc::new(self.base.group(tag))),
        )
    }

    /// Every group in the registry (a connection failure is retryable).
    pub(crate) async fn registered(&self, op: &'static str) -> Result<BTreeSet<Vec<u8>>> {
        let mut con = self.base.con.clone();
        let tags: Vec<Vec<u8>> = redis::cmd("SMEMBERS")
            .arg(self.registry.as_slice())
            .query_async(&mut con)
            .await
            .map_err(|e| unavailable(map_error(op, e)))?;
        Ok(tags.into_iter().collect())
    }

    /// How many groups the registry holds (a connection failure is retryable).
    pub(crate) async fn registered_count(&self, op: &'static str) -> Result<u64> {
        let mut con = self.base.con.clone();
        redis::cmd("SCARD")
            .arg(self.registry.as_slice())
            .query_async(&mut con)
            .await
            .map_err(|e| unavailable(map_error(op, e)))
    }
}

/// Which groups a range may reach: the keys of a group all hold `{tag}` at their first `{`,
/// so a range whose keys share a first `{` names the start of every tag it may reach.
pub(crate) fn tag_start(range: &KeyRange) -> &[u8] {
    let shared = range.shared_prefix();
    match shared.iter().position(|&b| b == b'{') {
        Some(open) => &shared[open + 1..],
        None => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_names_the_start_of_the_tags_it_may_reach() {
        assert_eq!(tag_start(&KeyRange::Prefix(b"nxc:map:".to_vec())), b"");
        assert_eq!(tag_start(&KeyRange::Prefix(b"nxc:map:{eu".to_vec())), b"eu");
        assert_eq!(
            tag_start(&KeyRange::Interval {
                start: b"a{x1".to_vec(),
                end: Some(b"a{x2".to_vec())
            }),
            b"x"
        );
        assert_eq!(
            tag_start(&KeyRange::Interval {
                start: b"a{x1".to_vec(),
                end: None
            }),
            b""
        );
    }
}
