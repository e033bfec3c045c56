//! [`LiveCluster`]: the scheduler's view of its cluster without a round trip. Every key
//! under `/Cronix/` lives in a [`Mirror`] kept current by a watch: the live nodes, the jobs
//! assigned to each, and a stream of [`NodeEvent`]s in which a node whose lease expired is
//! [`NodeEvent::Lost`] with the jobs it held, for failover to move.

use super::error::Result;
use super::keys::{CronixKeyspace, NodeJobsDir, NodeKey};
use super::segments::JobId;
use super::values::{JobConfig, NodeInfo};
use futures::{Stream, StreamExt};
use keyplane_core::keyspace::{Key, Prefix, TypedEvent, TypedStore};
use keyplane_core::mirror::{Mirror, MirrorHealth, MirrorSnapshot};
use std::pin::Pin;
use std::sync::Arc;
use uuid::Uuid;

/// The decoded value of a scheduler key the cluster view uses; other keys stay bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum CronixValue {
    /// `/Cronix/node/<uuid>`.
    Node(NodeInfo),
    /// `/Cronix/job/<node>/<job>`.
    Job(JobConfig),
    /// Any other key of the layout (processes, one-shot triggers, locks, system keys).
    Other(Vec<u8>),
}

fn decode(key: &CronixKeyspace, bytes: &[u8]) -> keyplane_core::Result<CronixValue> {
    use crate::decode_as as with;
    Ok(match key {
        CronixKeyspace::Node(_) => CronixValue::Node(with::<NodeKey>(bytes)?),
        CronixKeyspace::Job(_) => CronixValue::Job(with::<super::keys::JobKey>(bytes)?),
        _ => CronixValue::Other(bytes.to_vec()),
    })
}

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
#[derive(Debug, Clone)]
pub struct LiveCluster {
    mirror: Mirror<CronixKeyspace, CronixValue>,
}

impl LiveCluster {
    /// Mirrors `/Cronix/` through `store`.
    ///
    /// # Errors
    /// [`CronixError::Store`](super::CronixError::Store).
    pub async fn start(store: &TypedStore) -> Result<Self> {
        let mirror = store
            .mirror_keyspace::<CronixKeyspace>()
            .decode_with(decode)
            .start()
            .await?;
        Ok(LiveCluster { mirror })
    }

    /// The current view.
    pub fn view(&self) -> ClusterView {
        ClusterView(self.mirror.snapshot())
    }

    /// The view once it reflects `revision`.
    ///
    /// # Errors
    /// [`CronixError::Store`](super::CronixError::Store) when the mirror has stopped.
    pub async fn wait_for(&self, revision: i64) -> Result<ClusterView> {
        Ok(ClusterView(self.mirror.wait_for(revision).await?))
    }

    /// The node changes from now on, each after it is visible in [`view`](Self::view).
    pub fn node_events(&self) -> Pin<Box<dyn Stream<Item = NodeEvent> + Send>> {
        let mirror = self.mirror.clone();
        let events = self.mirror.subscribe().flat_map(move |batch| {
            let view = ClusterView(mirror.snapshot());
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

    /// The mirror's health.
    pub fn health(&self) -> MirrorHealth {
        self.mirror.health()
    }
}

/// One consistent view of the cluster at [`revision`](Self::revision).
#[derive(Debug, Clone)]
pub struct ClusterView(Arc<MirrorSnapshot<CronixKeyspace, CronixValue>>);

impl ClusterView {
    /// The store revision the view reflects.
    pub fn revision(&self) -> i64 {
        self.0.revision()
    }

    /// The registered nodes, by UUID.
    pub fn nodes(&self) -> Vec<NodeInfo> {
        self.0
            .iter_prefix(b"/Cronix/node/")
            .filter_map(|(_, value)| match &value.value {
                CronixValue::Node(info) => Some(info.clone()),
                _ => None,
            })
            .collect()
    }

    /// The registration of `node`, if it is registered.
    pub fn node(&self, node: Uuid) -> Option<NodeInfo> {
        match &self
            .0
            .get_raw(NodeKey { node }.encode().as_bytes())?
            .1
            .value
        {
            CronixValue::Node(info) => Some(info.clone()),
            _ => None,
        }
    }

    /// The jobs assigned to `node`, by id.
    pub fn jobs(&self, node: Uuid) -> Vec<(JobId, JobConfig)> {
        let prefix = NodeJobsDir { node }.encode().into_bytes();
        self.0
            .iter_prefix(&prefix)
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
        self.0
            .iter_prefix(b"/Cronix/job/")
            .filter_map(|(key, _)| match key {
                CronixKeyspace::Job(key) if self.node(key.node).is_none() => {
                    Some((key.node, key.job.clone()))
                }
                _ => None,
            })
            .collect()
    }
}
