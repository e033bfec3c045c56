//! [`LiveCluster`]: the scheduler's view of its cluster without a round trip. Every key
//! under `/Cronix/` lives in a [`LiveReader`] kept current by a watch: the live nodes, the jobs
//! assigned to each, and a stream of [`NodeEvent`]s in which a node whose lease expired is
//! [`NodeEvent::Lost`] with the jobs it held, for failover to move.

use super::keys::{CronixKeyspace, CronixValue, NodeJobsDir, NodeKey};
use super::segments::JobId;
use super::values::{JobConfig, NodeInfo};
use crate::{LiveKeyspace, LiveReader, LiveView};
use futures::{Stream, StreamExt};
use keyplane_core::keyspace::{Prefix, TypedEvent};
use std::pin::Pin;
use uuid::Uuid;

impl LiveKeyspace for CronixKeyspace {}

/// A change to the cluster's nodes.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeEvent {
    /// A node registered, or rewrote its registration.
    Up {
        /// Its registration.
        info: NodeInfo,
    },
    /// A node's registration went away: deregistered, or its lease expired. `jobs` are the
    /// jobs still assigned to it in the view current when the event is read, which failover
    /// moves to a live node.
    Lost {
        /// The node.
        node: Uuid,
        /// Its jobs when it was lost.
        jobs: Vec<JobId>,
    },
}

/// The scheduler's cluster, mirrored. Cheap to clone.
///
/// ```
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use keyplane_schemas::cronix::*;
/// use std::{sync::Arc, time::Duration};
///
/// let store = keyplane_core::keyspace::TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
/// let cluster = LiveCluster::start(&store).await?;
/// let node = uuid::Uuid::new_v4();
/// let _example = write_example(&store, node, Duration::from_secs(30)).await?;
/// let view = cluster.wait_for(store.revision().await?).await?;
/// assert_eq!(view.nodes().len(), 1);
/// assert_eq!(view.jobs(node).len(), 1);
/// # Ok(()) }
/// ```
pub type LiveCluster = LiveReader<CronixKeyspace>;

/// One consistent view of the cluster at [`revision`](LiveView::revision).
pub type ClusterView = LiveView<CronixKeyspace>;

impl LiveReader<CronixKeyspace> {
    /// The node changes from now on, each after it is visible in [`view`](Self::view).
    pub fn node_events(&self) -> Pin<Box<dyn Stream<Item = NodeEvent> + Send>> {
        let reader = self.clone();
        let events = self.mirror().subscribe().flat_map(move |batch| {
            let view = reader.view();
            let events: Vec<NodeEvent> = batch
                .events
                .into_iter()
                .filter_map(|event| match event {
                    TypedEvent::Put {
                        key: CronixKeyspace::Node(_),
                        value,
                    } => match value.value {
                        CronixValue::Node(info) => Some(NodeEvent::Up { info }),
                        _ => None,
                    },
                    TypedEvent::Delete {
                        key: CronixKeyspace::Node(key),
                    } => Some(NodeEvent::Lost {
                        node: key.node,
                        jobs: view
                            .jobs(key.node)
                            .into_iter()
                            .map(|(job, _)| job)
                            .collect(),
                    }),
                    _ => None,
                })
                .collect();
            futures::stream::iter(events)
        });
        Box::pin(events)
    }
}

impl LiveView<CronixKeyspace> {
    /// The registered nodes, by UUID.
    pub fn nodes(&self) -> Vec<NodeInfo> {
        self.entries(b"/Cronix/node/")
            .filter_map(|(_, value)| match &value.value {
                CronixValue::Node(info) => Some(info.clone()),
                _ => None,
            })
            .collect()
    }

    /// The registration of `node`, if it is registered.
    pub fn node(&self, node: Uuid) -> Option<NodeInfo> {
        match self.value(&NodeKey { node })? {
            CronixValue::Node(info) => Some(info.clone()),
            _ => None,
        }
    }

    /// The jobs assigned to `node`, by id.
    pub fn jobs(&self, node: Uuid) -> Vec<(JobId, JobConfig)> {
        let prefix = NodeJobsDir { node }.encode().into_bytes();
        self.entries(&prefix)
            .filter_map(|(key, value)| match (key, &value.value) {
                (CronixKeyspace::Job(key), CronixValue::Job(config)) => {
                    Some((key.job.clone(), config.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// Jobs assigned to nodes that are not registered: what failover still has to move.
    pub fn orphaned_jobs(&self) -> Vec<(Uuid, JobId)> {
        self.entries(b"/Cronix/job/")
            .filter_map(|(key, _)| match key {
                CronixKeyspace::Job(key) if self.node(key.node).is_none() => {
                    Some((key.node, key.job.clone()))
                }
                _ => None,
            })
            .collect()
    }
}
