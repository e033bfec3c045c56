//! `kvctl demo`: writes a realistic dataset for every schema through its domain operations,
//! then prints the store's key tree and a summary.
//!
//! Idempotent: each schema's part is skipped when its data is already there, so a second run
//! writes nothing and leaves the store's revision as it was. Lease-bound keys (registry
//! instances, the cronix node and lock) are granted [`LEASE`](step::LEASE): their
//! keep-alives end when `kvctl` exits and the keys stay for that long, then expire as their
//! systems intend; a run after that writes them again.

mod balancer;
mod cronix;
mod nxc;
mod registry;
mod step;
mod tenant;

use step::Step;

use crate::cmd::{Ctx, scan};
use crate::error::CliResult;
use crate::output::{Format, print_json, typed};
use keyplane::keyspace::TypedStore;
use keyplane::{RangeOptions, Sharding, Store};
use serde_json::json;

/// Why the etcd systems are not written to Redis Cluster.
const NO_TAG: &str = "an etcd system, whose keys carry no hash tag (Redis Cluster needs one)";

pub(crate) async fn run(ctx: &Ctx) -> CliResult<()> {
    let store = ctx.store().await?;
    let typed_store = TypedStore::new(store.clone());
    let sharded = store.capabilities().sharding != Sharding::Unsharded;
    let before = revisions(store.as_ref()).await?;
    let bar = crate::output::steps(5, "writing the example dataset");
    let mut steps = Vec::new();
    bar.set_message("tenant");
    steps.push(if sharded {
        Step::skipped("tenant", NO_TAG)
    } else {
        tenant::write(&typed_store).await?
    });
    bar.inc(1);
    bar.set_message("registry");
    steps.push(if sharded {
        Step::skipped("registry", NO_TAG)
    } else {
        registry::write(&typed_store).await?
    });
    bar.inc(1);
    bar.set_message("cronix");
    steps.push(if sharded {
        Step::skipped("cronix", NO_TAG)
    } else {
        cronix::write(&typed_store).await?
    });
    bar.inc(1);
    bar.set_message("nxc");
    steps.push(if sharded {
        nxc::write_cluster(&typed_store).await?
    } else {
        nxc::write(&typed_store).await?
    });
    bar.inc(1);
    bar.set_message("balancer");
    steps.push(if sharded {
        balancer::write_cluster(&typed_store).await?
    } else {
        balancer::write(&typed_store).await?
    });
    bar.finish_and_clear();
    let after = revisions(store.as_ref()).await?;
    let shown_url = keyplane::raw::redact_url(&ctx.url);
    let entries = scan(store.as_ref(), "", true).await?;
    let mut keys: Vec<(String, String)> = entries
        .iter()
        .filter_map(|e| {
            let key = String::from_utf8_lossy(&e.key).into_owned();
            typed(&key).map(|(address, _)| (key, address))
        })
        .collect();
    for step in &steps {
        keys.extend(step.collections.iter().cloned());
    }
    let mut per_schema: Vec<(&'static str, usize)> = Vec::new();
    for schema in keyplane_schemas::all() {
        let count = keys
            .iter()
            .filter(|(_, a)| {
                a.split('.').next().map(|s| s.trim_end_matches("-cluster")) == Some(schema.name)
            })
            .count();
        per_schema.push((schema.name, count));
    }
    match ctx.format {
        Format::Json => print_json(&json!({
            "store": shown_url,
            "revision_before": before,
            "revision": after,
            "steps": steps.iter().map(|s| json!({
                "schema": s.schema, "written": s.written, "what": s.what,
                "collections": s.collections.len(),
            })).collect::<Vec<_>>(),
            "keys": keys.iter().map(|(k, a)| json!({ "key": k, "type": a })).collect::<Vec<_>>(),
        })),
        Format::Table => {
            crate::output::out!("{}", crate::tree::render(&keys));
            crate::output::outln!();
            if sharded {
                crate::output::outln!(
                    "store {}: the demo's co-location groups at revision {after} (the sum of \
                     {{{}}}'s)",
                    shown_url,
                    DEMO_GROUPS.join("}, {")
                );
            } else {
                crate::output::outln!("store {shown_url} at revision {after}");
            }
            for step in &steps {
                let count = per_schema
                    .iter()
                    .find(|(n, _)| *n == step.schema)
                    .map_or(0, |c| c.1);
                let verb = if step.written {
                    "written"
                } else if step.what == NO_TAG {
                    "skipped"
                } else {
                    "already present"
                };
                crate::output::outln!(
                    "  {:<9} {:>3} keys  {verb}: {}",
                    step.schema,
                    count,
                    step.what
                );
            }
            if after == before {
                crate::output::outln!("nothing changed (the dataset was already there)");
            } else {
                crate::output::outln!(
                    "{} keys in the tree; {} revisions written",
                    keys.len(),
                    after - before
                );
            }
        }
    }
    Ok(())
}

/// The co-location groups the demo writes on a store sharded into groups: nxc's realm and
/// its two profiles' pools, and the balancer's cache.
const DEMO_GROUPS: [&str; 4] = ["test_realm", "app_001", "app_002", "demo"];

/// The store's revision; on a store sharded into co-location groups, which has none, the sum
/// of the demo's groups' revisions, which grows by one per transaction of the demo (and not
/// with what other programs write elsewhere in the store).
async fn revisions(store: &dyn Store) -> keyplane::Result<i64> {
    if store.capabilities().sharding == Sharding::Unsharded {
        return store.revision().await;
    }
    let mut sum = 0;
    for tag in DEMO_GROUPS {
        // A prefix holding the whole tag lies in the group: its read names the group's revision.
        let read = store
            .range(RangeOptions::prefix(format!("{{{tag}}}")).count_only())
            .await?;
        sum += read
            .groups
            .and_then(|groups| groups.get(tag.as_bytes()).copied())
            .unwrap_or(0);
    }
    Ok(sum)
}
