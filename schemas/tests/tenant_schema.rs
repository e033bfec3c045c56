//! The tenant keyspace: the schema checker and the invariant harness, the §7.3 segment rules,
//! the JSON field names of §2.2, and the catalog entry.

use keyplane_core::keyspace::{
    Key, Keyspace, Prefix, assert_key_invariants, assert_keyspace_invariants,
    assert_prefix_invariants, assert_segment_invariants, check_keyspace,
};
use keyplane_schemas::tenant::*;
use serde_json::json;

#[test]
fn the_layout_passes_the_checker_with_no_exception() {
    let findings = check_keyspace::<TenantKeyspace>();
    assert!(findings.is_empty(), "{findings:#?}");
    let templates = TenantKeyspace::templates();
    assert_eq!(templates.len(), 15);
    assert!(templates.iter().all(|t| t.directory_of.is_empty()));
    assert_eq!(
        TenantKeyspace::naming_rule().unwrap().describe(),
        "[a-z0-9_-]"
    );
}

#[test]
fn every_key_prefix_and_segment_passes_the_invariants() {
    assert_segment_invariants::<TenantCode>();
    assert_segment_invariants::<FtpUsername>();
    assert_segment_invariants::<TenantName>();
    assert_segment_invariants::<HostName>();
    assert_segment_invariants::<ServiceCode>();
    assert_segment_invariants::<PlatformConfigName>();
    assert_key_invariants::<TenantMetaKey>();
    assert_key_invariants::<PrimaryDomainKey>();
    assert_key_invariants::<DomainAliasesKey>();
    assert_key_invariants::<InternalDomainKey>();
    assert_key_invariants::<DatabaseConfigKey>();
    assert_key_invariants::<FtpConfigKey>();
    assert_key_invariants::<StorageConfigKey>();
    assert_key_invariants::<CodeIndexKey>();
    assert_key_invariants::<NameIndexKey>();
    assert_key_invariants::<FtpUserIndexKey>();
    assert_key_invariants::<HostIndexKey>();
    assert_key_invariants::<ResolverConfigKey>();
    assert_key_invariants::<StorageDirectoryConfigKey>();
    assert_key_invariants::<PlatformConfigKey>();
    assert_key_invariants::<HealthSentinelKey>();
    assert_prefix_invariants::<TenantDir>();
    assert_prefix_invariants::<DatabaseConfigsDir>();
    assert_prefix_invariants::<FtpConfigsDir>();
    assert_prefix_invariants::<CodeIndexDir>();
    assert_prefix_invariants::<FtpUserIndexDir>();
    assert_prefix_invariants::<HostIndexDir>();
    assert_prefix_invariants::<PlatformConfigsDir>();
}

#[test]
fn the_whole_keyspace_passes_the_invariants() {
    assert_keyspace_invariants::<TenantKeyspace>();
}

#[test]
fn keys_are_the_layout_of_section_2_byte_for_byte() {
    let code = TenantCode::new("default").unwrap();
    let user = FtpUsername::new("default_ftp").unwrap();
    let service = ServiceCode::new("evidence-command").unwrap();
    let cases: Vec<(TenantKeyspace, &str)> = vec![
        (TenantMetaKey { id: 1 }.into(), "jxt/tenants/1/meta"),
        (
            PrimaryDomainKey { id: 1 }.into(),
            "jxt/tenants/1/domain/primary",
        ),
        (
            DomainAliasesKey { id: 1 }.into(),
            "jxt/tenants/1/domain/aliases",
        ),
        (
            InternalDomainKey { id: 1 }.into(),
            "jxt/tenants/1/domain/internal",
        ),
        (
            DatabaseConfigKey { id: 1, service }.into(),
            "jxt/tenants/1/database/evidence-command",
        ),
        (
            FtpConfigKey {
                id: 1,
                username: user.clone(),
            }
            .into(),
            "jxt/tenants/1/ftp/default_ftp",
        ),
        (StorageConfigKey { id: 1 }.into(), "jxt/tenants/1/storage"),
        (
            CodeIndexKey { code }.into(),
            "jxt/tenants/_index/by-code/default",
        ),
        (
            NameIndexKey {
                name: TenantName::new("默认租户").unwrap(),
            }
            .into(),
            "jxt/tenants/_index/by-name/%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7",
        ),
        (
            FtpUserIndexKey { username: user }.into(),
            "jxt/tenants/_index/ftp-user/default_ftp",
        ),
        (
            HostIndexKey {
                host: HostName::new("api.example.com").unwrap(),
            }
            .into(),
            "jxt/tenants/_index/host/api.example.com",
        ),
        (ResolverConfigKey {}.into(), "jxt/common/resolver"),
        (
            StorageDirectoryConfigKey {}.into(),
            "jxt/common/storage-directory",
        ),
        (
            PlatformConfigKey {
                key: PlatformConfigName::new("smtp").unwrap(),
            }
            .into(),
            "jxt/platform/configs/smtp",
        ),
        (HealthSentinelKey {}.into(), "jxt/_health/sentinel"),
    ];
    for (key, raw) in cases {
        assert_eq!(key.encode(), raw);
        assert_eq!(TenantKeyspace::parse(raw), Ok(key));
    }
    assert_eq!(TenantDir { id: 1 }.encode(), "jxt/tenants/1/");
    assert!(!TenantDir { id: 1 }.contains("jxt/tenants/10/meta"));
    assert_eq!(FtpConfigsDir { id: 1 }.encode(), "jxt/tenants/1/ftp/");
}

#[test]
fn segments_follow_section_7_3() {
    for good in ["default", "Acme_01", "_"] {
        assert!(TenantCode::new(good).is_ok(), "{good}");
    }
    for bad in ["", "acme-01", "a.b", "a b", "租户", "a/b", "a%b"] {
        assert!(TenantCode::new(bad).is_err(), "{bad:?}");
    }
    for good in ["default_ftp", "sales.ftp-2", "A.b_c-d", "..."] {
        assert!(FtpUsername::new(good).is_ok(), "{good}");
    }
    for bad in ["", ".", "..", "a b", "a/b", "a:b", "a@b", "用户"] {
        assert!(FtpUsername::new(bad).is_err(), "{bad:?}");
    }
    // Free text is escaped, never refused for its characters.
    let name = TenantName::new("a b/c%d{e}").unwrap();
    let key = NameIndexKey { name };
    assert_eq!(
        key.encode(),
        "jxt/tenants/_index/by-name/a%20b%2Fc%25d%7Be%7D"
    );
    assert_eq!(NameIndexKey::parse(&key.encode()), Ok(key));
    // Strict: only the canonical escaping parses.
    assert!(NameIndexKey::parse("jxt/tenants/_index/by-name/a b").is_err());
    assert!(NameIndexKey::parse("jxt/tenants/_index/by-name/%e9%bb%98").is_err());
    assert!(NameIndexKey::parse("jxt/tenants/_index/by-name/%61").is_err());
    let host = HostIndexKey {
        host: HostName::new("[::1]:8080").unwrap(),
    };
    assert_eq!(host.encode(), "jxt/tenants/_index/host/%5B::1%5D:8080");
    assert!(TenantMetaKey::parse("jxt/tenants/01/meta").is_err());
    assert!(TenantKeyspace::parse("jxt/tenants/_index/meta").is_err());
    assert!(TenantKeyspace::parse("jxt//tenants/1/meta").is_err());
}

#[test]
fn values_have_the_field_names_of_section_2_2() {
    let t = example_tenant();
    let cases = [
        (
            serde_json::to_value(&t.meta).unwrap(),
            json!({"id": 1, "code": "default", "name": "默认租户", "status": "active",
                   "billingPlan": "enterprise"}),
        ),
        (
            serde_json::to_value(&t.databases[0]).unwrap(),
            json!({"tenantId": 1, "serviceCode": "evidence-command", "driver": "mysql",
                   "host": "mysql-command", "port": 3306,
                   "database": "tenant_default_evidence_command",
                   "username": "tenant_default_cmd", "sslMode": "disable",
                   "maxOpenConns": 100, "maxIdleConns": 20, "enabled": true}),
        ),
        (
            serde_json::to_value(&t.ftp_users[0]).unwrap(),
            json!({"tenantId": 1, "username": "default_ftp", "passwordHash": "$2a$10$...",
                   "description": "默认FTP配置", "status": "active",
                   "homeDirectory": "/tenants/1", "writePermission": true}),
        ),
        (
            serde_json::to_value(t.storage.as_ref().unwrap()).unwrap(),
            json!({"tenantId": 1, "uploadQuotaGb": 1000, "maxFileSizeMb": 2048,
                   "maxConcurrentUploads": 20}),
        ),
        (
            serde_json::to_value(CodeIndex {
                id: 1,
                code: "default".into(),
                name: "默认租户".into(),
            })
            .unwrap(),
            json!({"id": 1, "code": "default", "name": "默认租户"}),
        ),
        (
            serde_json::to_value(NameIndex {
                id: 1,
                code: "default".into(),
                primary_domain: "example.com".into(),
            })
            .unwrap(),
            json!({"id": 1, "code": "default", "primaryDomain": "example.com"}),
        ),
        (
            serde_json::to_value(FtpUserIndex {
                tenant_id: 1,
                code: "default".into(),
                name: "默认租户".into(),
            })
            .unwrap(),
            json!({"tenantId": 1, "code": "default", "name": "默认租户"}),
        ),
        (
            serde_json::to_value(HostIndex {
                tenant_id: 1,
                code: "default".into(),
                host_type: "frontend".into(),
            })
            .unwrap(),
            json!({"tenantId": 1, "code": "default", "hostType": "frontend"}),
        ),
    ];
    for (value, document) in cases {
        assert_eq!(value, document);
    }
    // The document's JSON reads back.
    let meta: TenantMeta = serde_json::from_value(json!({"id": 7, "code": "c", "name": "n",
        "status": "active", "billingPlan": "free"}))
    .unwrap();
    assert_eq!(meta.billing_plan, "free");
}

#[test]
fn the_example_tenant_is_valid() {
    example_tenant().validate().unwrap();
    assert!(KNOWN_SERVICES.iter().all(|s| ServiceCode::new(*s).is_ok()));
}

#[test]
fn the_catalog_parses_tenant_keys() {
    let schema = keyplane_schemas::find("tenant").expect("in the catalog");
    assert_eq!(schema.store, "etcd");
    assert_eq!(schema.templates().len(), 15);
    let parsed = schema.parse("jxt/tenants/7/database/file-storage").unwrap();
    assert_eq!(parsed.template, "jxt/tenants/{id}/database/{service}");
    assert_eq!(
        parsed.fields,
        vec![
            ("id", "7".to_owned()),
            ("service", "file-storage".to_owned())
        ]
    );
    let parsed = keyplane_schemas::parse_any("jxt/tenants/_index/ftp-user/sales_ftp").unwrap();
    assert_eq!(parsed.schema, "tenant");
    assert!(schema.parse("jxt/tenants/7/database/File_Storage").is_err());
}

/// The old layout of §3 is declared read-only, doubled separator included: one typed key per
/// row, exactly the bytes the old Go client wrote, disjoint from the new layout.
#[test]
fn the_old_layout_is_declared_read_only_byte_for_byte() {
    let findings = check_keyspace::<TenantLegacyKeyspace>();
    assert!(findings.is_empty(), "{findings:#?}");
    let templates = TenantLegacyKeyspace::templates();
    assert_eq!(templates.len(), 15, "the fifteen rows of §3");
    assert!(templates.iter().all(|t| t.template.is_read_only()));
    assert!(
        TenantKeyspace::templates()
            .iter()
            .all(|t| !t.template.is_read_only())
    );
    let code = TenantCode::new("default").unwrap();
    let service = ServiceCode::new("evidence-command").unwrap();
    let cases: Vec<(TenantLegacyKeyspace, &str)> = vec![
        (
            LegacyDatabaseKey {
                id: 1,
                code: service,
            }
            .into(),
            "jxt//jxt/config/tenants/1/services/evidence-command/database",
        ),
        (LegacyMetaKey { id: 1 }.into(), "jxt//tenants/1/meta"),
        (
            LegacyPrimaryDomainKey { id: 1 }.into(),
            "jxt//tenants/1/domain/primary",
        ),
        (
            LegacyDomainAliasesKey { id: 1 }.into(),
            "jxt//tenants/1/domain/aliases",
        ),
        (
            LegacyInternalDomainKey { id: 1 }.into(),
            "jxt//tenants/1/domain/internal",
        ),
        (LegacyFtpArrayKey { id: 1 }.into(), "jxt//tenants/1/ftp"),
        (LegacyStorageKey { id: 1 }.into(), "jxt//tenants/1/storage"),
        (
            LegacyCodeIndexKey { code }.into(),
            "jxt//tenants/by-code/default",
        ),
        (
            LegacyNameIndexKey {
                name: TenantName::new("默认租户").unwrap(),
            }
            .into(),
            "jxt//tenants/by-name/%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7",
        ),
        (
            LegacyFtpUserIndexKey {
                username: FtpUsername::new("default_ftp").unwrap(),
            }
            .into(),
            "jxt//ftp-users/default_ftp",
        ),
        (
            LegacyHostIndexKey {
                host: HostName::new("api.example.com").unwrap(),
            }
            .into(),
            "jxt//hosts/api.example.com",
        ),
        (LegacyResolverConfigKey {}.into(), "jxt//common/resolver"),
        (
            LegacyStorageDirectoryConfigKey {}.into(),
            "jxt//common/storage-directory",
        ),
        (LegacyHealthSentinelKey {}.into(), "jxt//_health/sentinel"),
        (
            LegacyPlatformConfigKey {
                key: PlatformConfigName::new("features").unwrap(),
            }
            .into(),
            "jxt//platform/configs/features",
        ),
    ];
    for (key, raw) in cases {
        assert_eq!(key.encode(), raw);
        assert_eq!(TenantLegacyKeyspace::parse(raw).unwrap(), key);
        // The old and the new layout never claim each other's keys.
        assert!(TenantKeyspace::parse(raw).is_err(), "{raw}");
        let new = raw.replacen("jxt//", "jxt/", 1);
        assert!(TenantLegacyKeyspace::parse(&new).is_err(), "{new}");
    }
    assert_eq!(LegacyTenantDir { id: 1 }.encode(), "jxt//tenants/1/");
    // Through the catalog: the old layout parses as its own, read-only schema.
    let parsed = keyplane_schemas::parse_any("jxt//tenants/1/meta").unwrap();
    assert_eq!(
        (parsed.schema, parsed.template),
        ("tenant-legacy", "jxt//tenants/{id}/meta")
    );
    assert!(keyplane_schemas::find("tenant-legacy").unwrap().read_only);
    assert!(!keyplane_schemas::find("tenant").unwrap().read_only);
    assert!(keyplane_schemas::legacy().iter().all(|s| s.read_only));
}

#[test]
fn the_old_layout_passes_the_invariants() {
    assert_key_invariants::<LegacyDatabaseKey>();
    assert_key_invariants::<LegacyMetaKey>();
    assert_key_invariants::<LegacyFtpArrayKey>();
    assert_key_invariants::<LegacyNameIndexKey>();
    assert_key_invariants::<LegacyHostIndexKey>();
    assert_key_invariants::<LegacyHealthSentinelKey>();
    assert_prefix_invariants::<LegacyTenantDir>();
    assert_keyspace_invariants::<TenantLegacyKeyspace>();
}

/// Nothing writes the old layout through the typed store: every write is refused before it
/// reaches the store.
#[tokio::test]
async fn the_typed_store_refuses_to_write_the_old_layout() {
    use keyplane_core::{ErrorKind, PutOptions, Store};
    let store: std::sync::Arc<dyn Store> = std::sync::Arc::new(keyplane_mem::MemStore::new());
    store
        .put(
            b"jxt//tenants/1/meta",
            br#"{"id":1}"#,
            PutOptions::default(),
        )
        .await
        .unwrap();
    let typed = keyplane_core::keyspace::TypedStore::new(store.clone());
    let revision = store.revision().await.unwrap();
    let err = typed
        .put(&LegacyMetaKey { id: 1 }, &json!({"id": 2}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ReadOnly);
    let err = typed.delete(&LegacyMetaKey { id: 1 }).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ReadOnly);
    assert_eq!(store.revision().await.unwrap(), revision);
    assert_eq!(
        typed.get(&LegacyMetaKey { id: 1 }).await.unwrap(),
        Some(json!({"id": 1}))
    );
}
