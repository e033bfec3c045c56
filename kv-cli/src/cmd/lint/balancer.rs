//! The balancer's checks: key objects whose status the balancer does not know or whose
//! fields are missing, and active-list entries that disagree with their key.

use super::contents::{fields, members};
use super::finding::{Finding, Repair};
use crate::error::CliResult;
use keyplane::{CollectionOp, CollectionResult, Store};
use keyplane_schemas::balancer::{API_KEY_FIELD, KeyStatus, STATUS_FIELD};

/// Checks the key object `key` (`key:{id}`): both fields present, and a status of the
/// document's. Another status is kept and read as it is, and the key is never handed out,
/// so it is reported for a person to judge, not repaired.
pub(super) async fn key_object(
    store: &dyn Store,
    key: &str,
    findings: &mut Vec<Finding>,
) -> CliResult<()> {
    let fields = fields(store, key).await?;
    let value = |name: &str| {
        fields
            .iter()
            .find(|(f, _)| f == name.as_bytes())
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    };
    for name in [API_KEY_FIELD, STATUS_FIELD] {
        if value(name).is_none() {
            findings.push(Finding::new(
                key,
                "incomplete-key-object",
                format!("the key object lacks its `{name}` field, so the key cannot be read"),
                "write the key again (Balancer::put_key, or kvctl balancer load)",
            ));
        }
    }
    if let Some(status) = value(STATUS_FIELD).map(KeyStatus::from)
        && !status.is_known()
    {
        findings.push(Finding::new(
            key,
            "unknown-key-status",
            format!(
                "status {:?} is neither `active` nor `disabled`: the key is kept as it is and \
                 never handed out",
                status.as_str()
            ),
            "nothing, if the program that wrote it means it; otherwise set_status it to \
             `active` or `disabled`",
        ));
    }
    Ok(())
}

/// Checks the active list `key` (`group:{id}:keys:active`) of group `group`: every entry
/// names a key object whose status is `active` and whose reverse index holds the group.
pub(super) async fn active_list(
    store: &dyn Store,
    key: &str,
    group: &str,
    findings: &mut Vec<Finding>,
) -> CliResult<()> {
    // The cache's root, if any (`{demo}:` on a cluster): the list's key minus the template.
    let prefix = &key[..key.len() - format!("group:{group}:keys:active").len()];
    let items = match store
        .collection(CollectionOp::ListRange {
            key: key.as_bytes().to_vec(),
            start: 0,
            stop: -1,
        })
        .await?
    {
        CollectionResult::Items(items) => items,
        _ => Vec::new(),
    };
    for item in items {
        let id = String::from_utf8_lossy(&item).into_owned();
        let object = format!("{prefix}key:{id}");
        let fields = fields(store, &object).await?;
        if fields.is_empty() {
            findings.push(Finding::new(
                key,
                "list-entry-without-object",
                format!("lists key {id}, which has no object `{object}`"),
                "Balancer::repair removes it, or load the key",
            ));
            continue;
        }
        let status = fields
            .iter()
            .find(|(f, _)| f == STATUS_FIELD.as_bytes())
            .map(|(_, v)| KeyStatus::from(String::from_utf8_lossy(v).into_owned()));
        if !status.as_ref().is_some_and(KeyStatus::is_active) {
            let shown = status.as_ref().map_or("none", KeyStatus::as_str);
            findings.push(Finding::new(
                key,
                "list-entry-not-active",
                format!("lists key {id}, whose status is {shown:?}: picks hand it out"),
                "Balancer::repair removes it, or set_status it to `active`",
            ));
        }
        let reverse = format!("{prefix}key:{id}:groups");
        if !members(store, &reverse)
            .await?
            .iter()
            .any(|m| m == group.as_bytes())
        {
            findings.push(
                Finding::new(
                    &reverse,
                    "reverse-index-disagrees",
                    format!(
                        "key {id} is in group {group}'s active list, but its reverse index \
                         lacks the group"
                    ),
                    format!("add {group} to `{reverse}`"),
                )
                .with_repair(Repair::SetAdd {
                    key: reverse.into_bytes(),
                    member: group.as_bytes().to_vec(),
                }),
            );
        }
    }
    Ok(())
}
