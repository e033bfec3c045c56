//! The values of the registry keyspace, as JSON documents with camelCase field names.
//!
//! The document's section on values is not part of the layout it fixes; these shapes follow
//! what it says each file holds: a description for groups and services, an instance's data
//! (the ports it serves besides gRPC, its version and metadata), its status and its
//! configuration.
//!
//! Each value describes itself as a JSON Schema ([`JsonSchema`]) that accepts what its
//! deserializer reads, integers bounded at their Rust types' ends.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `/registry/{group}/info`: what a service group is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupInfo {
    /// A human-readable description.
    pub description: String,
}

/// `/registry/{group}/{service}/info`: what a service is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceInfo {
    /// A human-readable description.
    pub description: String,
    /// The gRPC service's fully qualified name (`common.VerifyCode`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_service: Option<String>,
}

/// `/registry/{group}/{service}/{addr}/data`: what a running instance offers. The key
/// holds the gRPC address; the other ports are here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceData {
    /// The version of the running build.
    pub version: String,
    /// The HTTP port, if the instance serves HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_port: Option<u16>,
    /// The TLS gRPC port, if the instance serves one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure_grpc_port: Option<u16>,
    /// When the instance started, in milliseconds since the Unix epoch.
    #[schemars(range(max = u64::MAX))]
    pub started_at: u64,
    /// Free-form labels (zone, build hash...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// The serving state of an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum InstanceState {
    /// Accepting requests.
    Serving,
    /// Finishing its requests before it stops; clients should pick another instance.
    Draining,
    /// Up but failing its own health checks.
    Unhealthy,
}

/// `/registry/{group}/{service}/{addr}/status`: the instance's current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceStatus {
    /// The state.
    pub state: InstanceState,
    /// When it was entered, in milliseconds since the Unix epoch.
    #[schemars(range(max = u64::MAX))]
    pub since: u64,
}

/// `/registry/{group}/{service}/{addr}/config`: how clients should use the instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceConfig {
    /// The load-balancing weight, 1-1000.
    #[schemars(range(max = u32::MAX))]
    pub weight: u32,
    /// Extra settings, free-form.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
}

/// The largest load-balancing weight.
pub const MAX_WEIGHT: u32 = 1000;

impl InstanceConfig {
    /// Checks the weight is in 1-[`MAX_WEIGHT`].
    ///
    /// # Errors
    /// A message naming the rule.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_WEIGHT).contains(&self.weight) {
            return Err(format!("weight {} is outside 1-{MAX_WEIGHT}", self.weight));
        }
        Ok(())
    }
}

impl InstanceData {
    /// Checks the version is set and the extra ports are not 0.
    ///
    /// # Errors
    /// A message naming the rule.
    pub fn validate(&self) -> Result<(), String> {
        if self.version.trim().is_empty() {
            return Err("the version is empty".into());
        }
        if self.http_port == Some(0) || self.secure_grpc_port == Some(0) {
            return Err("a port is 1-65535".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_uses_camel_case() {
        let data = InstanceData {
            version: "1.4.2".into(),
            http_port: Some(8080),
            secure_grpc_port: None,
            started_at: 1,
            metadata: BTreeMap::new(),
        };
        let json = serde_json::to_string(&data).unwrap();
        assert_eq!(json, r#"{"version":"1.4.2","httpPort":8080,"startedAt":1}"#);
        let status = InstanceStatus {
            state: InstanceState::Draining,
            since: 5,
        };
        assert_eq!(
            serde_json::to_string(&status).unwrap(),
            r#"{"state":"draining","since":5}"#
        );
    }
}
