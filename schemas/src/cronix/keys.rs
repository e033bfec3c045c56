//! Typed keys and directories of the cronix keyspace, one per row of the document's table,
//! and the keyspace enum [`CronixKeyspace`].

use super::segments::{JobId, LockName};
use super::values::{JobConfig, NodeInfo, OnceTargetCodec, ProcInfo, SystemInfo};
use keyplane_core::keyspace::{Empty, Json, Key, Keyspace, Prefix, Text};
use uuid::Uuid;

/// `/Cronix/node/<node_uuid>`: a node's information, attached to the node's lease.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/node/{node}", value = Json<NodeInfo>)]
pub struct NodeKey {
    /// The node.
    pub node: Uuid,
}

/// `/Cronix/proc/<node_uuid>/<job_id>/<pid>`: a running job process, attached to a lease.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/proc/{node}/{job}/{pid}", value = Json<ProcInfo>)]
pub struct ProcKey {
    /// The node running the process.
    pub node: Uuid,
    /// The job.
    pub job: JobId,
    /// The process id.
    pub pid: u32,
}

/// `/Cronix/job/<node_uuid>/<job_id>`: a job assigned to a node.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/job/{node}/{job}", value = Json<JobConfig>)]
pub struct JobKey {
    /// The node the job is assigned to.
    pub node: Uuid,
    /// The job.
    pub job: JobId,
}

/// `/Cronix/once/<job_id>`: a one-shot trigger, naming the node that runs it or every node.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/once/{job}", value = OnceTargetCodec)]
pub struct OnceKey {
    /// The job.
    pub job: JobId,
}

/// `/Cronix/lock/<key>`: a distributed lock; its presence (empty value, attached to the
/// holder's lease) is the lock.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/lock/{name}", value = Empty)]
pub struct LockKey {
    /// The lock's name.
    pub name: LockName,
}

/// `/Cronix/system/switch/<node_uuid>`: the scheduler's request that a node report its system
/// information.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/system/switch/{node}", value = Text)]
pub struct SystemSwitchKey {
    /// The node asked.
    pub node: Uuid,
}

/// `/Cronix/system/get/<node_uuid>`: a node's system information, attached to a 5-minute
/// lease.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/system/get/{node}", value = Json<SystemInfo>)]
pub struct SystemInfoKey {
    /// The node reporting.
    pub node: Uuid,
}

/// `/Cronix/node/`: every registered node.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/node/", key = NodeKey)]
pub struct NodesDir {}

/// `/Cronix/proc/<node_uuid>/`: a node's running processes.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/proc/{node}/", key = ProcKey)]
pub struct NodeProcsDir {
    /// The node.
    pub node: Uuid,
}

/// `/Cronix/proc/<node_uuid>/<job_id>/`: a job's running processes on a node.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/proc/{node}/{job}/", key = ProcKey)]
pub struct JobProcsDir {
    /// The node.
    pub node: Uuid,
    /// The job.
    pub job: JobId,
}

/// `/Cronix/job/<node_uuid>/`: the jobs assigned to a node.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/job/{node}/", key = JobKey)]
pub struct NodeJobsDir {
    /// The node.
    pub node: Uuid,
}

/// `/Cronix/once/`: pending one-shot triggers.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/once/", key = OnceKey)]
pub struct OncesDir {}

/// `/Cronix/lock/`: held locks.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/lock/", key = LockKey)]
pub struct LocksDir {}

/// `/Cronix/system/switch/`: pending system-information requests.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/system/switch/", key = SystemSwitchKey)]
pub struct SwitchesDir {}

/// `/Cronix/system/get/`: reported system information.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/Cronix/system/get/", key = SystemInfoKey)]
pub struct SystemInfosDir {}

/// Every key of cronix.
///
/// The document's own exception to a lowercase naming rule: its root literal is `Cronix`,
/// capitalised, so the schema's naming rule is `[a-zA-Z]` and the layout keeps `/Cronix/`
/// byte for byte. No key is a directory of another.
#[derive(Keyspace, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(naming = "[a-zA-Z]", value_enum = CronixValue)]
pub enum CronixKeyspace {
    /// `/Cronix/node/<node_uuid>`
    Node(NodeKey),
    /// `/Cronix/proc/<node_uuid>/<job_id>/<pid>`
    Proc(ProcKey),
    /// `/Cronix/job/<node_uuid>/<job_id>`
    Job(JobKey),
    /// `/Cronix/once/<job_id>`
    Once(OnceKey),
    /// `/Cronix/lock/<key>`
    Lock(LockKey),
    /// `/Cronix/system/switch/<node_uuid>`
    SystemSwitch(SystemSwitchKey),
    /// `/Cronix/system/get/<node_uuid>`
    SystemInfo(SystemInfoKey),
}
