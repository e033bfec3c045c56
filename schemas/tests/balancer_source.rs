//! `balancer-load` on every backend: the database tables of §2 as JSON (with the old 1:N
//! `group_id` column and duplicated API key values, as §5 migrates them) become the cache.

use keyplane_core::keyspace::TypedStore;
use keyplane_core::{ErrorKind, Store};
use keyplane_schemas::balancer::*;
use std::sync::Arc;

const TABLES: &str = r#"{
  "apikeys": [
    {"id": 1, "api_key": "sk-a", "status": "active"},
    {"id": 2, "api_key": "sk-b", "status": "disabled"},
    {"id": 3, "api_key": "sk-a", "status": "disabled", "group_id": 20},
    {"id": 4, "api_key": "sk-c", "group_id": 10}
  ],
  "key_groups": [{"id": 10, "name": "default"}, {"id": 20, "name": "batch"}],
  "keygroup_apikey_mappings": [
    {"key_group_id": 10, "api_key_id": 1},
    {"key_group_id": 10, "api_key_id": 2},
    {"key_group_id": 20, "api_key_id": 4}
  ]
}"#;

#[test]
fn duplicates_merge_and_old_group_ids_become_mappings() {
    let plan = BalancerSource::from_json(TABLES.as_bytes())
        .unwrap()
        .plan()
        .unwrap();
    assert_eq!(
        plan.id_map.get(&3),
        Some(&1),
        "sk-a's rows merge into the smallest id"
    );
    assert_eq!(plan.id_map.get(&4), Some(&4));
    let ids: Vec<u64> = plan.keys.iter().map(|k| k.id).collect();
    assert_eq!(ids, [1, 2, 4]);
    let a = &plan.keys[0];
    assert_eq!(
        (a.record.status.clone(), a.groups.clone()),
        (KeyStatus::Active, vec![10, 20])
    );
    assert_eq!(plan.keys[2].groups, [10, 20]);
    assert_eq!(plan.keys[1].record.status, KeyStatus::Disabled);

    for bad in [
        r#"{"apikeys": [{"id": 1, "api_key": ""}]}"#,
        r#"{"apikeys": [{"id": 1, "api_key": "x"}, {"id": 1, "api_key": "y"}]}"#,
        r#"{"apikeys": [{"id": 1, "api_key": "x"}], "keygroup_apikey_mappings": [{"key_group_id": 9, "api_key_id": 1}]}"#,
        r#"{"apikeys": [], "keygroup_apikey_mappings": [{"key_group_id": 9, "api_key_id": 1}], "key_groups": [{"id": 9}]}"#,
        r#"{"apikeys": [{"id": 1, "api_key": "x", "group_id": 7}]}"#,
    ] {
        let err = BalancerSource::from_json(bad.as_bytes())
            .unwrap()
            .plan()
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad}: {err}");
    }
    let err = BalancerSource::from_json(b"[1, 2]").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);

    // A status beyond the document's examples is kept: a merged key is active when any of
    // its rows is, and otherwise has the status of the row whose id it keeps.
    let plan = BalancerSource::from_json(
        br#"{"apikeys": [
            {"id": 1, "api_key": "x", "status": "paused"},
            {"id": 2, "api_key": "x", "status": "disabled"},
            {"id": 3, "api_key": "y", "status": "paused"},
            {"id": 4, "api_key": "y", "status": "active"},
            {"id": 5, "api_key": "z", "status": "disabled"},
            {"id": 6, "api_key": "z", "status": "paused"}
        ]}"#,
    )
    .unwrap()
    .plan()
    .unwrap();
    let statuses: Vec<(u64, KeyStatus)> = plan
        .keys
        .iter()
        .map(|k| (k.id, k.record.status.clone()))
        .collect();
    assert_eq!(
        statuses,
        [
            (1, KeyStatus::Other("paused".to_owned())),
            (3, KeyStatus::Active),
            (5, KeyStatus::Disabled),
        ]
    );
}

async fn the_tables_become_the_cache(store: Arc<dyn Store>) {
    let root = BalancerRoot::new(format!("bal{}", uuid::Uuid::new_v4().simple())).unwrap();
    let cache = Balancer::with_root(&TypedStore::new(store), root).unwrap();
    let plan = BalancerSource::from_json(TABLES.as_bytes())
        .unwrap()
        .plan()
        .unwrap();
    let first = cache.rebuild(&plan.keys).await.unwrap();
    assert!(!first.unchanged());
    assert_eq!(cache.active_keys(10).await.unwrap(), [1, 4]);
    assert_eq!(cache.active_keys(20).await.unwrap(), [1, 4]);
    assert_eq!(cache.groups_of(2).await.unwrap(), [10]);
    assert_eq!(cache.key(3).await.unwrap(), None, "merged into key 1");
    assert!(cache.rebuild(&plan.keys).await.unwrap().unchanged());
}

keyplane_tests::on_every_backend!(the_tables_become_the_cache);
