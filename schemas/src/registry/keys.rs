//! Typed keys and directories of the registry keyspace, one per file of the document, and the
//! keyspace enum [`RegistryKeyspace`].

use super::segments::{GroupName, GrpcPort, ServiceName};
use super::values::{GroupInfo, InstanceConfig, InstanceData, InstanceStatus, ServiceInfo};
use keyplane_core::keyspace::{Json, Key, Keyspace, Prefix};
use std::fmt;
use std::net::Ipv4Addr;

/// `/registry/{group}/info`: the group's description.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/registry/{group}/info", value = Json<GroupInfo>)]
pub struct GroupInfoKey {
    /// The group.
    pub group: GroupName,
}

/// `/registry/{group}/{service}/info`: the service's description.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/registry/{group}/{service}/info", value = Json<ServiceInfo>)]
pub struct ServiceInfoKey {
    /// The group.
    pub group: GroupName,
    /// The service.
    pub service: ServiceName,
}

/// `/registry/{group}/{service}/{ip}:{port}/data`: a running instance's data; its presence
/// is the instance's registration.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/registry/{group}/{service}/{ip}:{port}/data", value = Json<InstanceData>)]
pub struct InstanceDataKey {
    /// The group.
    pub group: GroupName,
    /// The service.
    pub service: ServiceName,
    /// The instance's IP address.
    pub ip: Ipv4Addr,
    /// The instance's gRPC port.
    pub port: GrpcPort,
}

/// `/registry/{group}/{service}/{ip}:{port}/status`: the instance's status.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/registry/{group}/{service}/{ip}:{port}/status", value = Json<InstanceStatus>)]
pub struct InstanceStatusKey {
    /// The group.
    pub group: GroupName,
    /// The service.
    pub service: ServiceName,
    /// The instance's IP address.
    pub ip: Ipv4Addr,
    /// The instance's gRPC port.
    pub port: GrpcPort,
}

/// `/registry/{group}/{service}/{ip}:{port}/config`: the instance's configuration.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/registry/{group}/{service}/{ip}:{port}/config", value = Json<InstanceConfig>)]
pub struct InstanceConfigKey {
    /// The group.
    pub group: GroupName,
    /// The service.
    pub service: ServiceName,
    /// The instance's IP address.
    pub ip: Ipv4Addr,
    /// The instance's gRPC port.
    pub port: GrpcPort,
}

/// `/registry/`: the root directory; lists the groups' info files.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/registry/", key = GroupInfoKey)]
pub struct RegistryRoot {}

/// `/registry/{group}/`: a group's directory; lists its services' info files.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/registry/{group}/", key = ServiceInfoKey)]
pub struct GroupDir {
    /// The group.
    pub group: GroupName,
}

/// `/registry/{group}/{service}/`: a service's directory (its info file and its instances);
/// lists the instances' data files.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/registry/{group}/{service}/", key = InstanceDataKey)]
pub struct ServiceDir {
    /// The group.
    pub group: GroupName,
    /// The service.
    pub service: ServiceName,
}

/// `/registry/{group}/{service}/{ip}:{port}/`: one instance's directory (data, status,
/// config).
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/registry/{group}/{service}/{ip}:{port}/", key = InstanceDataKey)]
pub struct InstanceDir {
    /// The group.
    pub group: GroupName,
    /// The service.
    pub service: ServiceName,
    /// The instance's IP address.
    pub ip: Ipv4Addr,
    /// The instance's gRPC port.
    pub port: GrpcPort,
}

/// Every key of the registry.
///
/// Literals are lowercase (`registry`, `info`, `data`, `status`, `config`), plus the `:`
/// the document puts between an instance's IP and port (`{ip}:{port}`). No key is a
/// directory of another: the only candidate, a service named `info`, is refused by
/// [`ServiceName`], so the document's layout needs no declared exception.
#[derive(Keyspace, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(naming = "[a-z:]")]
pub enum RegistryKeyspace {
    /// `/registry/{group}/info`
    GroupInfo(GroupInfoKey),
    /// `/registry/{group}/{service}/info`
    ServiceInfo(ServiceInfoKey),
    /// `/registry/{group}/{service}/{ip}:{port}/data`
    InstanceData(InstanceDataKey),
    /// `/registry/{group}/{service}/{ip}:{port}/status`
    InstanceStatus(InstanceStatusKey),
    /// `/registry/{group}/{service}/{ip}:{port}/config`
    InstanceConfig(InstanceConfigKey),
}

/// A service: its group and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServiceId {
    /// The group.
    pub group: GroupName,
    /// The service.
    pub service: ServiceName,
}

impl ServiceId {
    /// The service `service` of `group`.
    pub fn new(group: GroupName, service: ServiceName) -> Self {
        ServiceId { group, service }
    }

    /// The service's info file.
    pub fn info_key(&self) -> ServiceInfoKey {
        ServiceInfoKey {
            group: self.group.clone(),
            service: self.service.clone(),
        }
    }

    /// The service's directory.
    pub fn dir(&self) -> ServiceDir {
        ServiceDir {
            group: self.group.clone(),
            service: self.service.clone(),
        }
    }

    /// The instance of this service at `ip:port`.
    pub fn instance(&self, ip: Ipv4Addr, port: GrpcPort) -> InstanceId {
        InstanceId {
            service: self.clone(),
            ip,
            port,
        }
    }
}

impl fmt::Display for ServiceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.group, self.service)
    }
}

/// An instance: its service and gRPC address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceId {
    /// The service.
    pub service: ServiceId,
    /// The IP address.
    pub ip: Ipv4Addr,
    /// The gRPC port.
    pub port: GrpcPort,
}

impl InstanceId {
    /// The instance's data file.
    pub fn data_key(&self) -> InstanceDataKey {
        InstanceDataKey {
            group: self.service.group.clone(),
            service: self.service.service.clone(),
            ip: self.ip,
            port: self.port,
        }
    }

    /// The instance's status file.
    pub fn status_key(&self) -> InstanceStatusKey {
        InstanceStatusKey {
            group: self.service.group.clone(),
            service: self.service.service.clone(),
            ip: self.ip,
            port: self.port,
        }
    }

    /// The instance's config file.
    pub fn config_key(&self) -> InstanceConfigKey {
        InstanceConfigKey {
            group: self.service.group.clone(),
            service: self.service.service.clone(),
            ip: self.ip,
            port: self.port,
        }
    }

    /// The instance's directory.
    pub fn dir(&self) -> InstanceDir {
        InstanceDir {
            group: self.service.group.clone(),
            service: self.service.service.clone(),
            ip: self.ip,
            port: self.port,
        }
    }

    /// The `ip:port` text of the instance's directory.
    pub fn addr(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}:{}", self.service, self.ip, self.port)
    }
}

impl RegistryKeyspace {
    /// The instance a key of an instance file belongs to.
    pub fn instance(&self) -> Option<InstanceId> {
        let (group, service, ip, port) = match self {
            RegistryKeyspace::InstanceData(k) => (&k.group, &k.service, k.ip, k.port),
            RegistryKeyspace::InstanceStatus(k) => (&k.group, &k.service, k.ip, k.port),
            RegistryKeyspace::InstanceConfig(k) => (&k.group, &k.service, k.ip, k.port),
            _ => return None,
        };
        Some(InstanceId {
            service: ServiceId::new(group.clone(), service.clone()),
            ip,
            port,
        })
    }
}
