//! A realistic example dataset written through the operations (used by `kvctl demo`).

use super::admin::{define_group, define_service};
use super::keys::ServiceId;
use super::register::{NewInstance, Registration, register};
use super::segments::{GroupName, ServiceName};
use super::values::{
    GroupInfo, InstanceConfig, InstanceData, InstanceState, InstanceStatus, ServiceInfo,
};
use keyplane_core::Result;
use keyplane_core::keyspace::{Host, HostPort, TypedStore};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::Duration;

/// What [`write_example`] wrote: the service, and the two live registrations (dropping them
/// lets their leases expire).
#[derive(Debug)]
pub struct RegistryExample {
    /// The example service, `{group}/VerifyCodeService`.
    pub service: ServiceId,
    /// The registrations of its instances `192.168.0.1:11080` and `192.168.0.2:11080`.
    pub registrations: Vec<Registration>,
}

/// Writes the document's example under `group`: the group's info, the service
/// `VerifyCodeService` with its info, and two instances registered under leases of `ttl`.
///
/// # Errors
/// As [`register`].
pub async fn write_example(
    store: &TypedStore,
    group: &GroupName,
    ttl: Duration,
) -> Result<RegistryExample> {
    let name = ServiceName::new("VerifyCodeService").expect("a valid literal service name");
    let service = ServiceId::new(group.clone(), name);
    let description = "services every product uses".to_owned();
    define_group(store, group, &GroupInfo { description }).await?;
    let info = ServiceInfo {
        description: "sends and checks verification codes".into(),
        grpc_service: Some("common.VerifyCode".into()),
    };
    define_service(store, &service, &info).await?;
    let mut registrations = Vec::new();
    for (i, ip) in [Ipv4Addr::new(192, 168, 0, 1), Ipv4Addr::new(192, 168, 0, 2)]
        .into_iter()
        .enumerate()
    {
        let new = NewInstance {
            data: InstanceData {
                version: "1.4.2".into(),
                http_port: Some(11081),
                secure_grpc_port: None,
                started_at: 1_767_225_600_000,
                metadata: BTreeMap::from([("zone".into(), format!("zone-{}", i + 1))]),
            },
            status: InstanceStatus {
                state: InstanceState::Serving,
                since: 1_767_225_600_000,
            },
            config: Some(InstanceConfig {
                weight: 100,
                settings: BTreeMap::new(),
            }),
        };
        let addr = HostPort::new(Host::Ipv4(ip), 11080).expect("a non-zero port");
        registrations.push(register(store, &service.instance(addr), &new, ttl).await?);
    }
    Ok(RegistryExample {
        service,
        registrations,
    })
}
