//! The server's status: `etcdctl endpoint status` (version, database size, leader, Raft
//! term) of the member that answers, and `etcdctl member list`.

use crate::core::Core;
use keyplane_contract::{Member, MemberRole, Result, ServerStatus};

/// The status of the member the client reaches, with every member of its cluster: the
/// leader is the one the answering member names.
pub(crate) async fn server_status(core: &Core) -> Result<ServerStatus> {
    let status = core
        .call("server_status", true, || {
            let mut maintenance = core.maintenance.clone();
            async move { maintenance.status().await }
        })
        .await?;
    let list = core
        .call("server_status", true, || {
            let mut cluster = core.cluster.clone();
            async move { cluster.member_list().await }
        })
        .await?;
    let mut out = ServerStatus::default();
    out.version = Some(status.version().to_owned());
    out.db_size = u64::try_from(status.db_size()).ok();
    out.raft_term = Some(status.raft_term());
    out.members = list
        .members()
        .iter()
        .map(|m| {
            let role = if m.id() == status.leader() {
                MemberRole::Leader
            } else if m.is_learner() {
                MemberRole::Learner
            } else {
                MemberRole::Follower
            };
            let mut member = Member::new(m.name(), role);
            member.id = Some(format!("{:x}", m.id()));
            member.client_urls = m.client_urls().to_vec();
            member
        })
        .collect();
    Ok(out)
}
