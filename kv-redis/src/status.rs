//! The server's status (`kvctl status`): the version and memory `INFO` reports, and who
//! holds the data: the master and its replicas (`INFO replication`; on Sentinel, of the master
//! the sentinels name), or every node of a cluster (`CLUSTER NODES`).

use crate::con::{Con, Dial};
use crate::core::Core;
use crate::error::map_error;
use keyplane_contract::{Member, MemberRole, Result, ServerStatus};
use std::collections::HashMap;

/// The status of the store's server, or of its cluster.
pub(crate) async fn server_status(core: &Core) -> Result<ServerStatus> {
    if core.config.is_cluster() {
        return cluster(core).await;
    }
    let info = info(&mut core.con.clone()).await?;
    Ok(from_info(&info, &address(core)))
}

/// `INFO`'s default sections (server, memory and replication among them) as `field: value`.
async fn info(con: &mut Con) -> Result<HashMap<String, String>> {
    let text: String = redis::cmd("INFO")
        .query_async(con)
        .await
        .map_err(|e| map_error("server_status", e))?;
    Ok(fields(&text))
}

/// The `field:value` lines of an `INFO` answer (section headers and blank lines skipped).
fn fields(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

/// The `host:port` the store's connection reaches: the URL's server, or the master the
/// sentinels named last.
fn address(core: &Core) -> String {
    match (&core.dial, &core.con) {
        (Dial::Single(client), _) => client.get_connection_info().addr().to_string(),
        (_, Con::Sentinel(following)) => {
            let (host, port) = following.address();
            format!("{host}:{port}")
        }
        _ => String::new(),
    }
}

/// A member at `host:port`.
fn member(address: String, role: MemberRole) -> Member {
    let mut member = Member::new(address.clone(), role);
    member.client_urls = vec![address];
    member
}

/// The status one server's `INFO` gives; `here` is the address it was reached at. A master
/// lists itself then its replicas (`slaveN:ip=…,port=…`); a replica lists its master then
/// itself.
fn from_info(info: &HashMap<String, String>, here: &str) -> ServerStatus {
    let mut status = ServerStatus::default();
    status.version = info.get("redis_version").cloned();
    status.db_size = info.get("used_memory").and_then(|m| m.parse().ok());
    if info.get("role").map(String::as_str) == Some("slave") {
        let host = info.get("master_host").map_or("", String::as_str);
        let port = info.get("master_port").map_or("", String::as_str);
        status.members = vec![
            member(format!("{host}:{port}"), MemberRole::Master),
            member(here.to_owned(), MemberRole::Replica),
        ];
        return status;
    }
    status.members = vec![member(here.to_owned(), MemberRole::Master)];
    let mut replicas: Vec<(usize, String)> = info
        .iter()
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("slave")?.parse().ok()?;
            let part = |name: &str| {
                v.split(',')
                    .find_map(|p| p.strip_prefix(name)?.strip_prefix('='))
                    .unwrap_or_default()
            };
            Some((n, format!("{}:{}", part("ip"), part("port"))))
        })
        .collect();
    replicas.sort();
    status.members.extend(
        replicas
            .into_iter()
            .map(|(_, address)| member(address, MemberRole::Replica)),
    );
    status
}

/// A cluster's status: every node from `CLUSTER NODES` (masters first, each by address, with
/// its node ID), and the version of the master of slot 0. The used memory is each node's own,
/// so no size is given.
async fn cluster(core: &Core) -> Result<ServerStatus> {
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut core.con.clone())
        .await
        .map_err(|e| map_error("server_status", e))?;
    let cfg = &core.config;
    let mut one = core
        .dial
        .dedicated(b"", &core.con, cfg.connect_timeout, cfg.request_timeout)
        .await
        .map_err(|e| map_error("server_status", e))?;
    let mut status = ServerStatus::default();
    status.version = info(&mut one).await?.remove("redis_version");
    status.members = cluster_members(&nodes);
    Ok(status)
}

/// The nodes of a `CLUSTER NODES` answer, masters first, then by address.
fn cluster_members(nodes: &str) -> Vec<Member> {
    let mut members: Vec<Member> = nodes
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let (id, address, flags) = (parts.next()?, parts.next()?, parts.next()?);
            let address = address.split(['@', ',']).next().unwrap_or_default();
            let flags: Vec<&str> = flags.split(',').collect();
            let role = if flags.contains(&"master") {
                MemberRole::Master
            } else if flags.contains(&"slave") {
                MemberRole::Replica
            } else {
                MemberRole::Unknown
            };
            let mut member = member(address.to_owned(), role);
            member.id = Some(id.to_owned());
            Some(member)
        })
        .collect();
    members.sort_by(|a, b| (!a.is_leader(), &a.name).cmp(&(!b.is_leader(), &b.name)));
    members
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_master_lists_itself_then_its_replicas() {
        let info = fields(
            "# Server\r\nredis_version:7.2.4\r\n\r\n# Memory\r\nused_memory:1024\r\n\
             # Replication\r\nrole:master\r\nconnected_slaves:2\r\n\
             slave1:ip=127.0.0.1,port=7002,state=online,offset=1,lag=0\r\n\
             slave0:ip=127.0.0.1,port=7001,state=online,offset=1,lag=0\r\n",
        );
        let status = from_info(&info, "127.0.0.1:7000");
        assert_eq!(status.version.as_deref(), Some("7.2.4"));
        assert_eq!(status.db_size, Some(1024));
        let names: Vec<(&str, MemberRole)> = status
            .members
            .iter()
            .map(|m| (m.name.as_str(), m.role))
            .collect();
        assert_eq!(
            names,
            [
                ("127.0.0.1:7000", MemberRole::Master),
                ("127.0.0.1:7001", MemberRole::Replica),
                ("127.0.0.1:7002", MemberRole::Replica),
            ]
        );
    }

    #[test]
    fn a_replica_names_its_master() {
        let info = fields("role:slave\r\nmaster_host:10.1.1.1\r\nmaster_port:6379\r\n");
        let status = from_info(&info, "h:6380");
        assert_eq!(status.members[0].name, "10.1.1.1:6379");
        assert!(status.members[0].is_leader());
        assert_eq!(status.members[1].role, MemberRole::Replica);
    }

    #[test]
    fn cluster_nodes_put_masters_first() {
        let nodes = "b1 127.0.0.1:7004@17004 slave a1 0 1 1 connected\n\
                     a1 127.0.0.1:7001@17001,host myself,master - 0 1 1 connected 0-5460\n";
        let members = cluster_members(nodes);
        assert_eq!(members[0].name, "127.0.0.1:7001");
        assert_eq!(members[0].id.as_deref(), Some("a1"));
        assert_eq!(members[1].role, MemberRole::Replica);
    }
}
