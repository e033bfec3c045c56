//! The example tenant of §6.1, published on every backend: exactly the fifteen keys §6.1
//! lists (the by-name key escaped, §7.3), read back whole, found by every index, deleted
//! without a trace. The only test of this binary, so that it owns `jxt/` on the shared
//! servers.

mod tenant_common;

use keyplane_core::Store;
use keyplane_core::keyspace::TypedStore;
use keyplane_schemas::tenant::{
    FtpUsername, HostName, ServiceCode, TenantCode, TenantName, database_config, delete_tenant,
    example_tenant, load_tenant, publish_tenant, tenant_by_code, tenant_by_ftp_user,
    tenant_by_host, tenant_by_name,
};
use std::sync::Arc;
use tenant_common::keys_under;

/// §6.1 of the design document, in its order, with `默认租户` percent-escaped.
const SECTION_6_1: &str = "
jxt/tenants/1/meta
jxt/tenants/1/domain/primary
jxt/tenants/1/domain/aliases
jxt/tenants/1/domain/internal
jxt/tenants/1/database/evidence-command
jxt/tenants/1/database/evidence-query
jxt/tenants/1/database/file-storage
jxt/tenants/1/ftp/default_ftp
jxt/tenants/1/ftp/sales_ftp
jxt/tenants/1/storage

jxt/tenants/_index/by-code/default
jxt/tenants/_index/by-name/%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7
jxt/tenants/_index/ftp-user/default_ftp
jxt/tenants/_index/ftp-user/sales_ftp
jxt/tenants/_index/host/api.example.com
";

async fn the_example_tenant_has_exactly_the_keys_of_section_6_1(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let tenant = example_tenant();
    publish_tenant(&typed, &tenant).await.expect("publish");

    let mut expected: Vec<&str> = SECTION_6_1.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(expected.len(), 15);
    expected.sort_unstable();
    let keys = keys_under(store.as_ref(), "jxt/").await;
    assert_eq!(keys, expected, "{}", store.capabilities().backend);
    assert_eq!(
        "jxt/tenants/_index/by-name/%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7",
        format!("jxt/tenants/_index/by-name/{}", url_path_escape("默认租户"))
    );

    // The values are the document's, byte for byte where it prints them.
    let meta = store.get(b"jxt/tenants/1/meta").await.unwrap().unwrap();
    assert_eq!(
        std::str::from_utf8(&meta.value).unwrap(),
        r#"{"id":1,"code":"default","name":"默认租户","status":"active","billingPlan":"enterprise"}"#
    );
    let primary = store
        .get(b"jxt/tenants/1/domain/primary")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(primary.value, b"example.com");
    let aliases = store
        .get(b"jxt/tenants/1/domain/aliases")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(aliases.value, br#"["api.example.com"]"#);
    let name_index = store
        .get(b"jxt/tenants/_index/by-name/%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        name_index.value,
        br#"{"id":1,"code":"default","primaryDomain":"example.com"}"#
    );

    // Read back whole, and found through every index.
    assert_eq!(load_tenant(&typed, 1).await.unwrap(), Some(tenant.clone()));
    let by_code = tenant_by_code(&typed, &TenantCode::new("default").unwrap()).await;
    assert_eq!(by_code.unwrap().unwrap().name, "默认租户");
    let by_name = tenant_by_name(&typed, &TenantName::new("默认租户").unwrap()).await;
    assert_eq!(by_name.unwrap().unwrap().primary_domain, "example.com");
    let by_host = tenant_by_host(&typed, &HostName::new("api.example.com").unwrap()).await;
    assert_eq!(by_host.unwrap().unwrap().host_type, "frontend");
    let by_ftp = tenant_by_ftp_user(&typed, &FtpUsername::new("sales_ftp").unwrap()).await;
    assert_eq!(by_ftp.unwrap().unwrap().tenant_id, 1);
    let query = ServiceCode::new("evidence-query").unwrap();
    let db = database_config(&typed, 1, &query).await.unwrap().unwrap();
    assert_eq!(db.service_code, "evidence-query");
    let security = ServiceCode::new("security-management").unwrap();
    assert_eq!(database_config(&typed, 1, &security).await.unwrap(), None);

    let done = delete_tenant(&typed, 1).await.expect("delete");
    assert!(done.found);
    assert_eq!(done.indexes_deleted, 5);
    assert_eq!(done.transactions, 2, "the mark, then the deletion");
    assert_eq!(
        keys_under(store.as_ref(), "jxt/").await,
        Vec::<String>::new()
    );
}

/// Go's `url.PathEscape`, written independently of keyplane-core: every byte outside the
/// unreserved set and `$&+:=@` is escaped, uppercase hex.
fn url_path_escape(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b));
            }
            b'$' | b'&' | b'+' | b':' | b'=' | b'@' => out.push(char::from(b)),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

keyplane_tests::on_every_backend!(the_example_tenant_has_exactly_the_keys_of_section_6_1);
