//! `kvctl balancer load FILE [--root ROOT]`: rebuilds the balancer's M:N cache from its
//! source of truth, the database tables of the document's §2 as JSON, de-duplicating API
//! keys by value as §5's migration does.

use super::Ctx;
use crate::error::{CliError, CliResult};
use crate::output::{Format, outln, print_json};
use keyplane::keyspace::TypedStore;
use keyplane_schemas::balancer::{Balancer, BalancerRoot, BalancerSource};
use serde_json::json;
use std::path::PathBuf;

/// What to do with the balancer's cache.
#[derive(clap::Subcommand)]
pub(crate) enum Action {
    /// Rebuild the cache from a JSON file of the tables `apikeys`, `key_groups` and
    /// `keygroup_apikey_mappings` (a second run with the same file writes nothing).
    Load {
        /// The JSON file (`-` reads stdin).
        file: PathBuf,
        /// The cache's root (`ROOT:key:{id}`...); none by default, the document's keys.
        #[arg(long)]
        root: Option<String>,
    },
}

pub(crate) async fn run(ctx: &Ctx, action: Action) -> CliResult<()> {
    let Action::Load { file, root } = action;
    let bytes = if file.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
            .map_err(|e| CliError::invalid(format!("cannot read stdin: {e}")))?;
        bytes
    } else {
        std::fs::read(&file)
            .map_err(|e| CliError::invalid(format!("cannot read {}: {e}", file.display())))?
    };
    let plan = BalancerSource::from_json(&bytes)?.plan()?;
    let prefix = |p: &str| match &root {
        Some(root) => format!("{root}:{p}"),
        None => p.to_owned(),
    };
    // On Redis, keys the service wrote reach the listing once reconciled.
    ctx.store_for_listing(&prefix("group:")).await?;
    let store = ctx.store_for_listing(&prefix("key:")).await?;
    let typed = TypedStore::new(store);
    let cache = match root {
        Some(root) => {
            let root = BalancerRoot::new(root.as_str())
                .map_err(|e| CliError::invalid(format!("bad root: {e}")))?;
            Balancer::with_root(&typed, root)?
        }
        None => Balancer::new(typed),
    };
    let report = cache.rebuild(&plan.keys).await?;
    let merged: Vec<(u64, u64)> = plan
        .id_map
        .iter()
        .filter(|(old, new)| old != new)
        .map(|(old, new)| (*old, *new))
        .collect();
    match ctx.format {
        Format::Json => print_json(&json!({
            "keys": plan.keys.len(),
            "merged": merged.iter().map(|(old, new)| json!({"old": old, "new": new})).collect::<Vec<_>>(),
            "objects": report.objects,
            "reverse_indexes": report.reverse_indexes,
            "lists": report.lists,
            "keys_removed": report.keys_removed,
            "groups_removed": report.groups_removed,
            "txns": report.txns,
        })),
        Format::Table => {
            if report.unchanged() {
                outln!(
                    "balancer: {} keys, the cache already matches: nothing to do",
                    plan.keys.len()
                );
            } else {
                outln!(
                    "balancer: {} keys loaded in {} transactions ({} objects, {} reverse indexes, {} lists written; {} keys and {} groups removed)",
                    plan.keys.len(),
                    report.txns,
                    report.objects,
                    report.reverse_indexes,
                    report.lists,
                    report.keys_removed,
                    report.groups_removed
                );
            }
            for (old, new) in &merged {
                outln!("  key {old} merged into key {new} (same api_key)");
            }
        }
    }
    Ok(())
}
