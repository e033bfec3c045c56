//! The balancer at the document's exact keys (`key:1`, `group:1:keys:active`,
//! `key:1:groups`): keys 1 to 11 in 3 groups of 5, groups sharing keys (`EXAMPLE_GROUPS`).

use super::step::Step;
use keyplane::keyspace::{Key, TypedStore};
use keyplane_schemas::balancer::{Balancer, BalancerRoot, EXAMPLE_GROUPS, write_example};

pub(crate) async fn write(store: &TypedStore) -> keyplane::Result<Step> {
    let cache = Balancer::new(store.clone());
    let what = "the document's keys: 11 keys in 3 groups of 5, keys 4, 5, 7 and 8 shared";
    write_cache(&cache, "", what).await
}

/// On Redis Cluster: the same cache under the root `demo` as hash tag (`{demo}:key:1`), one
/// co-location group.
pub(crate) async fn write_cluster(store: &TypedStore) -> keyplane::Result<Step> {
    let root = BalancerRoot::new(CLUSTER_ROOT)
        .map_err(|e| keyplane::Error::invalid_argument(format!("the demo's balancer root: {e}")))?;
    let cache = Balancer::with_cluster_root(store, root)?;
    let what = "the document's keys under {demo}: (one group): 11 keys in 3 groups of 5";
    write_cache(&cache, &format!("{{{CLUSTER_ROOT}}}:"), what).await
}

/// The root of the demo's cache on Redis Cluster.
const CLUSTER_ROOT: &str = "demo";

/// Writes the example into `cache` unless it is there; `shown` is what stands before each
/// of its keys in the store.
async fn write_cache(cache: &Balancer, shown: &str, what: &'static str) -> keyplane::Result<Step> {
    let written = if cache.key(1).await?.is_some() {
        false
    } else {
        write_example(cache).await?;
        true
    };
    // Every balancer key is a Redis HASH, LIST or SET (emulated elsewhere), which key
    // listings do not show: the tree gets them from the balancer's reads.
    let mut collections = Vec::new();
    for (group, _) in EXAMPLE_GROUPS {
        let active: Vec<String> = cache
            .active_keys(group)
            .await?
            .iter()
            .map(u64::to_string)
            .collect();
        let note = format!("balancer.active-keys  LIST [{}]", active.join(", "));
        collections.push((format!("{shown}{}", cache.active_key(group).encode()), note));
    }
    let mut ids: Vec<u64> = EXAMPLE_GROUPS
        .iter()
        .flat_map(|(_, keys)| keys.iter().copied())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        if let Some(record) = cache.key(id).await? {
            let note = format!(
                "balancer.key-object  HASH api_key={} status={:?}",
                record.api_key, record.status
            );
            collections.push((format!("{shown}{}", cache.object_key(id).encode()), note));
        }
        let groups: Vec<String> = cache
            .groups_of(id)
            .await?
            .iter()
            .map(u64::to_string)
            .collect();
        let note = format!("balancer.key-groups  SET {{{}}}", groups.join(", "));
        collections.push((format!("{shown}{}", cache.groups_key(id).encode()), note));
    }
    Ok(Step {
        schema: "balancer",
        written,
        what,
        collections,
    })
}
