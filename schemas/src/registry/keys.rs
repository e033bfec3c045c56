//! Typed keys and directories of the registry keyspace, one per file of the document, and the
//! keyspace enum [`RegistryKeyspace`].

use super::segments::{GroupName, ServiceName};
use super::values::{GroupInfo, InstanceConfig, InstanceData, InstanceStatus, ServiceInfo};
use keyplane_core::keyspace::{HostPort, Json, Key, Keyspace, Prefix};
use std::fmt;

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

/// `/registry/{group}/{service}/{addr}/data`: a running instance's data; its presence
/// is the instance's registration.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/registry/{group}/{service}/{addr}/data", value = Json<InstanceData>)]
pub struct InstanceDataKey {
    /// The group.
    pub group: GroupName,
    /// The service.
    pub service: ServiceName,
    /// The instance's gRPC address.
    pub addr: HostPort,
}

/// `/registry/{group}/{service}/{addr}/status`: the instance's status.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/registry/{group}/{service}/{addr}/status", value = Json<InstanceStatus>)]
pub struct InstanceStatusKey {
    /// The group.
    pub group: GroupName,
    /// The service.
    pub service: ServiceName,
    /// The instance's gRPC address.
    pub addr: HostPort,
}

/// `/registry/{group}/{service}/{addr}/config`: the instance's configuration.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/registry/{group}/{service}/{addr}/config", value = Json<InstanceConfig>)]
pub struct InstanceConfigKey {
    /// The group.
    pub group: GroupName,
    /// The service.
    pub service: ServiceName,
    /// The instance's gRPC address.
    pub addr: HostPort,
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

/// `/registry/{group}/{service}/{addr}/`: one instance's directory (data, status,
/// config).
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "/registry/{group}/{service}/{addr}/", key = InstanceDataKey)]
pub struct InstanceDir {
    /// The group.
    pub group: GroupName,
    /// The service.
    pub service: ServiceName,
    /// The instance's gRPC address.
    pub addr: HostPort,
}

/// Every key of the registry.
///
/// Literals are lowercase (`registry`, `info`, `data`, `status`, `config`). An instance's
/// `{addr}` is one [`HostPort`] segment: `192.168.0.1:11080` (IPv4, the document's form),
/// `[2001:db8::1]:11080` (IPv6 in brackets, RFC 5952 canonical form) or
/// `api.internal:11080` (a lowercase DNS name); only the canonical spelling parses, so one
/// address has one key. No key is a directory of another: the only candidate, a service named `info`, is refused by
/// [`ServiceName`], so the document's layout needs no declared exception.
#[derive(Keyspace, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(naming = "[a-z]", value_enum = RegistryValue)]
pub enum RegistryKeyspace {
    /// `/registry/{group}/info`
    GroupInfo(GroupInfoKey),
    /// `/registry/{group}/{service}/info`
    ServiceInfo(ServiceInfoKey),
    /// `/registry/{group}/{service}/{addr}/data`
    InstanceData(InstanceDataKey),
    /// `/registry/{group}/{service}/{addr}/status`
    InstanceStatus(InstanceStatusKey),
    /// `/registry/{group}/{service}/{addr}/config`
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

    /// The instance of this service at `addr`.
    pub fn instance(&self, addr: HostPort) -> InstanceId {
        InstanceId {
            service: self.clone(),
            addr,
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
    /// The gRPC address: an IPv4 address, a bracketed IPv6 address or a DNS name, and the
    /// port.
    pub addr: HostPort,
}

impl InstanceId {
    /// The instance's data file.
    pub fn data_key(&self) -> InstanceDataKey {
        InstanceDataKey {
            group: self.service.group.clone(),
            service: self.service.service.clone(),
            addr: self.addr.clone(),
        }
    }

    /// The instance's status file.
    pub fn status_key(&self) -> InstanceStatusKey {
        InstanceStatusKey {
            group: self.service.group.clone(),
            service: self.service.service.clone(),
            addr: self.addr.clone(),
        }
    }

    /// The instance's config file.
    pub fn config_key(&self) -> InstanceConfigKey {
        InstanceConfigKey {
            group: self.service.group.clone(),
            service: self.service.service.clone(),
            addr: self.addr.clone(),
        }
    }

    /// The instance's directory.
    pub fn dir(&self) -> InstanceDir {
        InstanceDir {
            group: self.service.group.clone(),
            service: self.service.service.clone(),
            addr: self.addr.clone(),
        }
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.service, self.addr)
    }
}

impl RegistryKeyspace {
    /// The instance a key of an instance file belongs to.
    pub fn instance(&self) -> Option<InstanceId> {
        let (group, service, addr) = match self {
            RegistryKeyspace::InstanceData(k) => (&k.group, &k.service, &k.addr),
            RegistryKeyspace::InstanceStatus(k) => (&k.group, &k.service, &k.addr),
            RegistryKeyspace::InstanceConfig(k) => (&k.group, &k.service, &k.addr),
            _ => return None,
        };
        Some(InstanceId {
            service: ServiceId::new(group.clone(), service.clone()),
            addr: addr.clone(),
        })
    }
}
