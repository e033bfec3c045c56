//! `tenant-legacy` on every backend: all fifteen rows of the tenant document's §3, written
//! raw in the old layout (`jxt//...`), planned, applied twice, interrupted and resumed,
//! verified, finalized; a rollback; data written to the new layout meanwhile kept.

use keyplane_core::layer::Namespaced;
use keyplane_core::migrate::{Migrator, Phase};
use keyplane_core::{PutOptions, RangeOptions, Store};
use keyplane_schemas::tenant::TenantLegacy;
use std::sync::Arc;

fn isolated(store: Arc<dyn Store>) -> Arc<dyn Store> {
    let prefix = format!("t{}/", uuid::Uuid::new_v4().simple());
    Arc::new(Namespaced::new(store, prefix).unwrap())
}

async fn put(store: &dyn Store, key: &str, value: &str) {
    store
        .put(key.as_bytes(), value.as_bytes(), PutOptions::default())
        .await
        .unwrap();
}

async fn get(store: &dyn Store, key: &str) -> Option<String> {
    store
        .get(key.as_bytes())
        .await
        .unwrap()
        .map(|e| String::from_utf8(e.value).unwrap())
}

async fn keys(store: &dyn Store, prefix: &str) -> Vec<String> {
    store
        .range(RangeOptions::prefix(prefix).keys_only())
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|e| String::from_utf8(e.key).unwrap())
        .collect()
}

const META: &str =
    r#"{"id":1,"code":"default","name":"默认租户","status":"active","billingPlan":"enterprise"}"#;
const DB_OLD: &str = r#"{"driver":"mysql","host":"mysql-command","port":3306,"database":"tenant_default_evidence_command","username":"tenant_default_cmd","sslMode":"disable","maxOpenConns":100,"maxIdleConns":20,"enabled":true}"#;
const STORAGE: &str =
    r#"{"tenantId":1,"uploadQuotaGb":1000,"maxFileSizeMb":2048,"maxConcurrentUploads":20}"#;
const FTP: &str = r#"{"ftpConfigs":[{"username":"default_ftp","passwordHash":"$2a$10$x","description":"默认FTP配置","status":"active","homeDirectory":"/tenants/1","writePermission":true},{"tenantId":1,"username":"backup_ftp","passwordHash":"$2a$10$y","description":"","status":"active","homeDirectory":"/tenants/1/backup","writePermission":false}]}"#;
const BY_CODE: &str = r#"{"id":1,"code":"default","name":"默认租户"}"#;
const BY_NAME: &str = r#"{"id":1,"code":"default","primaryDomain":"example.com"}"#;
const FTP_INDEX: &str = r#"{"tenantId":1,"code":"default","name":"默认租户"}"#;
const HOST: &str = r#"{"tenantId":1,"code":"default","hostType":"frontend"}"#;
const NAME_SEGMENT: &str = "%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7";

/// The fifteen rows of §3 in the old layout, as the old Go client wrote them.
async fn old_layout(store: &dyn Store) {
    put(
        store,
        "jxt//jxt/config/tenants/1/services/evidence-command/database",
        DB_OLD,
    )
    .await;
    put(store, "jxt//tenants/1/meta", META).await;
    put(store, "jxt//tenants/1/domain/primary", "example.com").await;
    put(
        store,
        "jxt//tenants/1/domain/aliases",
        r#"["www.example.com"]"#,
    )
    .await;
    put(store, "jxt//tenants/1/domain/internal", "default.internal").await;
    put(store, "jxt//tenants/1/ftp", FTP).await;
    put(store, "jxt//tenants/1/storage", STORAGE).await;
    put(store, "jxt//tenants/by-code/default", BY_CODE).await;
    put(
        store,
        &format!("jxt//tenants/by-name/{NAME_SEGMENT}"),
        BY_NAME,
    )
    .await;
    put(store, "jxt//ftp-users/default_ftp", FTP_INDEX).await;
    put(store, "jxt//hosts/api.example.com", HOST).await;
    put(store, "jxt//common/resolver", r#"{"mode":"host"}"#).await;
    put(
        store,
        "jxt//common/storage-directory",
        r#"{"root":"/data"}"#,
    )
    .await;
    put(store, "jxt//_health/sentinel", "ok").await;
    put(store, "jxt//platform/configs/features", r#"{"beta":false}"#).await;
}

/// Every new key of the fifteen rows (the FTP array gives two).
const NEW_KEYS: [&str; 16] = [
    "jxt/_health/sentinel",
    "jxt/common/resolver",
    "jxt/common/storage-directory",
    "jxt/platform/configs/features",
    "jxt/tenants/1/database/evidence-command",
    "jxt/tenants/1/domain/aliases",
    "jxt/tenants/1/domain/internal",
    "jxt/tenants/1/domain/primary",
    "jxt/tenants/1/ftp/backup_ftp",
    "jxt/tenants/1/ftp/default_ftp",
    "jxt/tenants/1/meta",
    "jxt/tenants/1/storage",
    "jxt/tenants/_index/by-code/default",
    "jxt/tenants/_index/by-name/%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7",
    "jxt/tenants/_index/ftp-user/default_ftp",
    "jxt/tenants/_index/host/api.example.com",
];

async fn all_fifteen_rows_migrate(store: Arc<dyn Store>) {
    let store = isolated(store);
    old_layout(&*store).await;
    // Keys under jxt// that no row covers, and a database value that contradicts its key.
    put(&*store, "jxt//tenants/1/unknown", "x").await;
    put(
        &*store,
        "jxt//jxt/config/tenants/2/services/file-storage/database",
        r#"{"tenantId":3,"driver":"mysql"}"#,
    )
    .await;
    let migrator = Migrator::new(store.clone(), Arc::new(TenantLegacy));
    let plan = migrator.plan().await.unwrap();
    assert_eq!((plan.old, plan.created), (17, 16), "{plan:?}");
    assert_eq!(plan.unmappable.len(), 2, "{plan:?}");
    assert!(
        keys(&*store, "jxt/")
            .await
            .iter()
            .all(|k| k.starts_with("jxt//"))
    );

    let applied = migrator.apply().await.unwrap();
    assert_eq!(applied.created, 16);
    let mut new: Vec<String> = keys(&*store, "jxt/")
        .await
        .into_iter()
        .filter(|k| !k.starts_with("jxt//"))
        .collect();
    new.sort();
    assert_eq!(new, NEW_KEYS);
    // Bytes kept where the new layout needs nothing more.
    assert_eq!(get(&*store, "jxt/tenants/1/meta").await.unwrap(), META);
    assert_eq!(
        get(
            &*store,
            &format!("jxt/tenants/_index/by-name/{NAME_SEGMENT}")
        )
        .await
        .unwrap(),
        BY_NAME
    );
    // Fields the new layout needs, from the old key.
    let db: serde_json::Value = serde_json::from_str(
        &get(&*store, "jxt/tenants/1/database/evidence-command")
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (db["tenantId"].as_u64(), db["serviceCode"].as_str()),
        (Some(1), Some("evidence-command"))
    );
    assert_eq!(db["port"], 3306);
    let ftp: serde_json::Value =
        serde_json::from_str(&get(&*store, "jxt/tenants/1/ftp/default_ftp").await.unwrap())
            .unwrap();
    assert_eq!(
        (ftp["tenantId"].as_u64(), ftp["homeDirectory"].as_str()),
        (Some(1), Some("/tenants/1"))
    );
    // The new layout's own reader finds the tenant.
    let typed = keyplane_core::keyspace::TypedStore::new(store.clone());
    let tenant = keyplane_schemas::tenant::load_tenant(&typed, 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(tenant.ftp_users.len(), 2);

    let again = migrator.apply().await.unwrap();
    assert_eq!((again.created, again.batches), (0, 0));
    let verified = migrator.verify().await.unwrap();
    assert_eq!(
        (
            verified.checked,
            verified.missing.len(),
            verified.differs.len()
        ),
        (16, 0, 0)
    );
    let finalized = migrator.finalize().await.unwrap();
    assert_eq!(finalized.deleted, 15, "{finalized:?}");
    let mut old = keys(&*store, "jxt//").await;
    old.sort();
    assert_eq!(
        old,
        [
            "jxt//jxt/config/tenants/2/services/file-storage/database",
            "jxt//tenants/1/unknown"
        ],
        "only what cannot be mapped stays"
    );
    assert_eq!(migrator.phase().await.unwrap(), Phase::Finalized);
}

async fn interrupted_resumed_and_rolled_back(store: Arc<dyn Store>) {
    let store = isolated(store);
    old_layout(&*store).await;
    let first = Migrator::new(store.clone(), Arc::new(TenantLegacy))
        .page_size(4)
        .max_batches(2);
    let partial = first.apply().await.unwrap();
    assert!(!partial.complete);
    assert_eq!(partial.batches, 2);
    // A new program writes the storage config and an alias in the new layout meanwhile.
    put(
        &*store,
        "jxt/tenants/1/storage",
        r#"{"tenantId":1,"uploadQuotaGb":5,"maxFileSizeMb":1,"maxConcurrentUploads":1}"#,
    )
    .await;
    let rest = Migrator::new(store.clone(), Arc::new(TenantLegacy))
        .page_size(4)
        .apply()
        .await
        .unwrap();
    assert!(rest.complete);
    assert_eq!(partial.old + rest.old, 15);
    assert_eq!(partial.created + rest.created, 15, "{partial:?} {rest:?}");
    assert_eq!(rest.conflicts.len(), 1);
    assert!(
        get(&*store, "jxt/tenants/1/storage")
            .await
            .unwrap()
            .contains(r#""uploadQuotaGb":5"#)
    );

    let migrator = Migrator::new(store.clone(), Arc::new(TenantLegacy));
    let rolled = migrator.rollback().await.unwrap();
    assert_eq!((rolled.deleted, rolled.kept.len()), (15, 0), "{rolled:?}");
    let new: Vec<String> = keys(&*store, "jxt/")
        .await
        .into_iter()
        .filter(|k| !k.starts_with("jxt//"))
        .collect();
    assert_eq!(new, ["jxt/tenants/1/storage"], "only the newer write stays");
    assert_eq!(
        keys(&*store, "jxt//").await.len(),
        15,
        "the old layout is untouched"
    );
    assert_eq!(migrator.phase().await.unwrap(), Phase::New);
}

keyplane_tests::on_every_backend!(
    all_fifteen_rows_migrate,
    interrupted_resumed_and_rolled_back
);

/// An old value that disagrees with its key (a meta saying another tenant's id) is reported,
/// not migrated: the new layout's typed puts would refuse it.
#[tokio::test]
async fn a_value_that_disagrees_with_its_key_is_not_migrated() {
    let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
    put(&*store, "jxt//tenants/5/meta", META).await;
    let migrator = Migrator::new(store.clone(), Arc::new(TenantLegacy));
    let plan = migrator.plan().await.unwrap();
    assert_eq!((plan.created, plan.unmappable.len()), (0, 1), "{plan:?}");
    assert!(plan.unmappable[0].reason.contains("disagrees"), "{plan:?}");
}
