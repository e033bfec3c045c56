//! The distributed cron scheduler's coordination keys (`/Cronix/`, etcd).
//!
//! ```text
//! /Cronix/node/<node_uuid>                 NodeKey          Json<NodeInfo>     node lease
//! /Cronix/proc/<node_uuid>/<job_id>/<pid>  ProcKey          Json<ProcInfo>     lease
//! /Cronix/job/<node_uuid>/<job_id>         JobKey           Json<JobConfig>
//! /Cronix/once/<job_id>                    OnceKey          node UUID or ""
//! /Cronix/lock/<key>                       LockKey          empty              holder's lease
//! /Cronix/system/switch/<node_uuid>        SystemSwitchKey  Text ("1")
//! /Cronix/system/get/<node_uuid>           SystemInfoKey    Json<SystemInfo>   5-minute lease
//! ```
//!
//! The root literal is `Cronix`, capitalised as the document writes it: the schema's naming
//! rule is `[a-zA-Z]` for that reason (the document's one departure from lowercase
//! literals), declared on [`CronixKeyspace`]. No key is a directory of another.
//!
//! Segments: node ids are UUIDs (lowercase hyphenated), job ids `[a-zA-Z0-9_-]` (1-64
//! bytes), process ids `u32`, lock names `[a-zA-Z0-9._-]` (1-128 bytes).
//!
//! Operations: [`register_node`] ([`NodeRegistration`], kept alive), [`take_over_node`] (a
//! restart with the old UUID revokes the old lease at once), [`list_nodes`] (at one
//! revision, with the nodes whose JSON does not decode reported); [`record_process`] /
//! [`end_process`]; [`terminate_process`] (the scheduler sets the process's `killed` flag),
//! [`termination_requests`] and [`finish_process`] (the node ends the process and removes
//! only the key it recorded); [`assign_job`], [`remove_job`], [`move_job`] (one transaction guarded by
//! the old key's revision); [`fail_over`] (every job of a lost node to live nodes, each move
//! guarded on the node's absence and the job's revision: two schedulers racing move each job
//! once); [`trigger_once`] / [`finish_once`] (which deletes only the trigger it read);
//! [`try_lock`] / [`lock`] / [`CronixLock::unlock`]; [`DispatcherElection`] elects the one
//! scheduler instance that dispatches (candidates hold `/Cronix/lock/dispatcher.<lease>`, the
//! document's lock keys; a [`Dispatcher`]'s writes are fenced on its leadership); [`request_system_info`],
//! [`publish_system_info`], [`collect_system_info`]; [`write_example`] for a demo dataset.

mod cron;
mod dispatch;
mod error;
mod example;
mod failover;
mod fencing;
mod job;
mod keys;
mod live;
mod lock;
mod node;
mod once;
mod process;
mod segments;
mod system;
mod values;

pub use cron::CronSpec;
pub use dispatch::{DISPATCHER, Dispatcher, DispatcherElection, DispatcherLeader};
pub use error::CronixError;
pub use example::{CronixExample, write_example};
pub use failover::{FailoverReport, fail_over};
pub use job::{assign_job, move_job, remove_job};
pub use keys::{
    CronixKeyspace, CronixValue, JobKey, JobProcsDir, LockKey, LocksDir, NodeJobsDir, NodeKey,
    NodeProcsDir, NodesDir, OnceKey, OncesDir, ProcKey, SwitchesDir, SystemInfoKey, SystemInfosDir,
    SystemSwitchKey,
};
pub use live::{ClusterView, LiveCluster, NodeEvent};
pub use lock::{CronixLock, lock, try_lock};
pub use node::{NodeListing, NodeRegistration, list_nodes, register_node, take_over_node};
pub use once::{PendingOnce, finish_once, pending_once, trigger_once};
pub use process::{
    TerminateRequest, TerminationRequests, end_process, finish_process, job_processes,
    record_process, terminate_process, termination_requests,
};
pub use segments::{JobId, LockName};
pub use system::{
    SWITCH_ON, SYSTEM_INFO_TTL, collect_system_info, publish_system_info, request_system_info,
    system_info,
};
pub use values::{
    CpuInfo, JobConfig, NodeInfo, NodeStatus, OnceTarget, OnceTargetCodec, ProcInfo, RetryPolicy,
    SystemInfo, Usage,
};

use keyplane_core::keyspace::Schema;

/// The cronix catalog entry.
pub fn schema() -> Schema {
    Schema::of::<CronixKeyspace>("cronix")
        .with_store("etcd")
        .with_summary("distributed cron scheduler: nodes, processes, jobs, triggers, locks, system info under /Cronix/")
}
