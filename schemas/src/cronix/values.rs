//! The values of the cronix keyspace. The document names what each JSON value holds; the
//! field names are camelCase.
//!
//! Each JSON value describes itself as a JSON Schema ([`JsonSchema`]) that accepts what its
//! deserializer reads: integers bounded at their Rust types' ends, the UUID and the IP
//! address by patterns of the forms they parse.

use keyplane_core::keyspace::Codec;
use keyplane_core::{Error, ErrorKind};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use uuid::Uuid;

/// The JSON Schema of a [`Uuid`] as its deserializer reads it: a string of 32 hex digits
/// of either case, plain, hyphenated (8-4-4-4-12), or hyphenated and braced (`{…}`) or
/// prefixed `urn:uuid:`.
fn uuid_schema(_: &mut SchemaGenerator) -> Schema {
    const HYPHENATED: &str =
        "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
    let pattern =
        format!("^(?:[0-9a-fA-F]{{32}}|{HYPHENATED}|\\{{{HYPHENATED}\\}}|urn:uuid:{HYPHENATED})$");
    json_schema!({
        "type": "string",
        "format": "uuid",
        "pattern": pattern,
    })
}

/// The JSON Schema of an [`IpAddr`] as its deserializer reads it: an IPv4 address in
/// dotted decimal (no leading zeros) or an IPv6 address (at most one `::`, an IPv4 address
/// allowed as its last 32 bits, no zone).
fn ip_schema(_: &mut SchemaGenerator) -> Schema {
    const V4: &str = "(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}\
                      (?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
    const H: &str = "[0-9a-fA-F]{1,4}";
    // Eight groups, or six and an IPv4 address; else `head::tail` with `head` of `a`
    // groups and `tail` of at most `7 - a` groups (an IPv4 address counting as two).
    let mut forms = vec![
        format!("{H}(?::{H}){{7}}"),
        format!("{H}(?::{H}){{5}}:{V4}"),
    ];
    for a in 0..=7 {
        let head = match a {
            0 => String::new(),
            1 => H.to_owned(),
            _ => format!("{H}(?::{H}){{{}}}", a - 1),
        };
        let tail = match 7 - a {
            0 => String::new(),
            1 => format!("(?:{H})?"),
            n => format!("(?:{H}(?::{H}){{0,{}}})?", n - 1),
        };
        forms.push(format!("{head}::{tail}"));
        if a <= 5 {
            forms.push(format!("{head}::(?:{H}:){{0,{}}}{V4}", 5 - a));
        }
    }
    let pattern = format!("^(?:{V4}|{})$", forms.join("|"));
    json_schema!({
        "type": "string",
        "pattern": pattern,
    })
}

/// The state a node reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum NodeStatus {
    /// Accepting jobs.
    Online,
    /// Running its jobs but accepting no new ones.
    Paused,
}

/// `/Cronix/node/<node_uuid>`: a node's information (UUID, IP, port, status...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    /// The node's UUID (the key's segment).
    #[schemars(schema_with = "uuid_schema")]
    pub uuid: Uuid,
    /// The node's IP address.
    #[schemars(schema_with = "ip_schema")]
    pub ip: IpAddr,
    /// The node's service port.
    pub port: u16,
    /// Its state.
    pub status: NodeStatus,
    /// The host name.
    pub hostname: String,
    /// When the node started, in milliseconds since the Unix epoch.
    #[schemars(range(max = u64::MAX))]
    pub started_at: u64,
}

/// `/Cronix/proc/<node_uuid>/<job_id>/<pid>`: a running job process (process id, job id,
/// whether it was killed...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcInfo {
    /// The process id (the key's segment).
    #[schemars(range(max = u32::MAX))]
    pub pid: u32,
    /// The job id (the key's segment).
    pub job_id: String,
    /// Whether the process has been told to terminate.
    pub killed: bool,
    /// When the process started, in milliseconds since the Unix epoch.
    #[schemars(range(max = u64::MAX))]
    pub started_at: u64,
}

/// How a failed run is retried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryPolicy {
    /// Retries after the first failed run (0: none).
    #[schemars(range(max = u32::MAX))]
    pub max_retries: u32,
    /// Seconds between retries.
    #[schemars(range(max = u64::MAX))]
    pub interval_seconds: u64,
}

/// `/Cronix/job/<node_uuid>/<job_id>`: a job's configuration (cron expression, command,
/// retry policy...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobConfig {
    /// A display name.
    pub name: String,
    /// The schedule: a cron expression of 5 fields, or 6 with seconds first, or a descriptor
    /// (`@daily`, `@every 5m`...); see [`CronSpec`](super::CronSpec).
    pub cron: String,
    /// The command line to run.
    pub command: String,
    /// Seconds a run may last before it is killed (0: no limit).
    #[schemars(range(max = u64::MAX))]
    pub timeout_seconds: u64,
    /// The retry policy.
    pub retry: RetryPolicy,
}

impl JobConfig {
    /// Checks the schedule parses as a [`CronSpec`](super::CronSpec) (five or six fields, or
    /// a descriptor such as `@daily` or `@every 5m`) and the command is not empty.
    ///
    /// # Errors
    /// A message naming the rule.
    pub fn validate(&self) -> Result<(), String> {
        super::CronSpec::parse(&self.cron)?;
        if self.command.trim().is_empty() {
            return Err("the command is empty".into());
        }
        Ok(())
    }
}

/// `/Cronix/once/<job_id>`: which nodes run a one-shot trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OnceTarget {
    /// The node with this UUID (stored as the UUID, lowercase hyphenated).
    Node(Uuid),
    /// Every node (stored as the empty string).
    AllNodes,
}

/// The codec of [`OnceTarget`]: a node UUID, or the empty string for all nodes; anything
/// else is a `Codec` error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct OnceTargetCodec;

impl Codec for OnceTargetCodec {
    type Value = OnceTarget;
    const FORMAT: keyplane_core::keyspace::ValueFormat = keyplane_core::keyspace::ValueFormat::Text;

    fn encode(&self, value: &OnceTarget) -> keyplane_core::Result<Vec<u8>> {
        Ok(match value {
            OnceTarget::Node(id) => id.hyphenated().to_string().into_bytes(),
            OnceTarget::AllNodes => Vec::new(),
        })
    }

    fn decode(&self, bytes: &[u8]) -> keyplane_core::Result<OnceTarget> {
        if bytes.is_empty() {
            return Ok(OnceTarget::AllNodes);
        }
        let text = std::str::from_utf8(bytes).ok();
        match text.map(|t| {
            <Uuid as keyplane_core::keyspace::Segment>::decode(
                t,
                keyplane_core::keyspace::Separator::Slash,
            )
        }) {
            Some(Ok(id)) => Ok(OnceTarget::Node(id)),
            _ => Err(Error::new(
                ErrorKind::Codec,
                "a one-shot trigger holds a node UUID (lowercase hyphenated) or the empty string",
            )
            .with_context("value", keyplane_core::raw::escape_bytes(bytes))),
        }
    }
}

/// CPU figures of a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CpuInfo {
    /// Logical cores.
    #[schemars(range(max = u32::MAX))]
    pub cores: u32,
    /// Busy share over the last sample, 0-100.
    pub usage_percent: f64,
}

/// Used and total bytes of a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Total bytes.
    #[schemars(range(max = u64::MAX))]
    pub total_bytes: u64,
    /// Used bytes.
    #[schemars(range(max = u64::MAX))]
    pub used_bytes: u64,
}

/// `/Cronix/system/get/<node_uuid>`: a node's system information (CPU, memory, disk...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SystemInfo {
    /// CPU.
    pub cpu: CpuInfo,
    /// Memory.
    pub memory: Usage,
    /// Disk.
    pub disk: Usage,
    /// When it was collected, in milliseconds since the Unix epoch.
    #[schemars(range(max = u64::MAX))]
    pub collected_at: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_target_is_a_uuid_or_empty() {
        let id = Uuid::from_u128(0x67e5504410b1426f9247bb680e5fe0c8);
        let c = OnceTargetCodec;
        assert_eq!(
            c.encode(&OnceTarget::Node(id)).unwrap(),
            b"67e55044-10b1-426f-9247-bb680e5fe0c8"
        );
        assert_eq!(c.encode(&OnceTarget::AllNodes).unwrap(), b"");
        assert_eq!(c.decode(b"").unwrap(), OnceTarget::AllNodes);
        assert_eq!(
            c.decode(b"67e55044-10b1-426f-9247-bb680e5fe0c8").unwrap(),
            OnceTarget::Node(id)
        );
        for bad in [
            &b" "[..],
            b"67E55044-10B1-426F-9247-BB680E5FE0C8",
            b"all",
            b"\xff",
        ] {
            assert_eq!(c.decode(bad).unwrap_err().kind(), ErrorKind::Codec);
        }
    }

    #[test]
    fn jobs_need_a_cron_expression_and_a_command() {
        let mut job = JobConfig {
            name: "backup".into(),
            cron: "0 2 * * *".into(),
            command: "/usr/local/bin/backup".into(),
            timeout_seconds: 0,
            retry: RetryPolicy {
                max_retries: 1,
                interval_seconds: 30,
            },
        };
        assert!(job.validate().is_ok());
        job.cron = "*/5 * * * * *".into();
        assert!(job.validate().is_ok());
        job.cron = "0 2 * *".into();
        assert!(job.validate().is_err());
        job.cron = "0 2 * * *".into();
        job.command = " ".into();
        assert!(job.validate().is_err());
        let json = serde_json::to_value(&job).unwrap();
        assert!(json.get("timeoutSeconds").is_some() && json["retry"].get("maxRetries").is_some());
    }
}
