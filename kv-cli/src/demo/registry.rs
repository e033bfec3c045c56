//! The registry: group `Common`, service `VerifyCodeService` and two instances registered
//! under leases of [`LEASE`].

use super::step::{LEASE, Step};
use keyplane::keyspace::{Host, HostPort, TypedStore};
use keyplane_schemas::registry::{GroupName, InstanceDataKey, ServiceName, write_example};
use std::net::Ipv4Addr;

pub(crate) async fn write(store: &TypedStore) -> keyplane::Result<Step> {
    let group = GroupName::new("Common").map_err(invalid)?;
    let service = ServiceName::new("VerifyCodeService").map_err(invalid)?;
    let mut present = true;
    for ip in [Ipv4Addr::new(192, 168, 0, 1), Ipv4Addr::new(192, 168, 0, 2)] {
        let data = InstanceDataKey {
            group: group.clone(),
            service: service.clone(),
            addr: HostPort::new(Host::Ipv4(ip), 11080).map_err(invalid)?,
        };
        present &= store.exists(&data).await?;
    }
    if present {
        return Ok(Step::present(
            "registry",
            "Common/VerifyCodeService with 2 instances",
        ));
    }
    // The registrations' keep-alives end with the process; the leases outlive it by LEASE.
    write_example(store, &group, LEASE).await?;
    Ok(Step::written(
        "registry",
        "Common/VerifyCodeService with 2 instances (leased)",
    ))
}

fn invalid(e: impl std::fmt::Display) -> keyplane::Error {
    keyplane::Error::invalid_argument(e.to_string())
}
