//! Tenant 1 of the tenant document's §6.1, published in one transaction.

use super::step::Step;
use keyplane::keyspace::TypedStore;
use keyplane_schemas::tenant::{TenantMetaKey, example_tenant, publish_tenant};

pub(crate) async fn write(store: &TypedStore) -> keyplane::Result<Step> {
    let tenant = example_tenant();
    let meta = TenantMetaKey { id: tenant.meta.id };
    if store.exists(&meta).await? {
        return Ok(Step::present("tenant", "tenant 1 (default)"));
    }
    publish_tenant(store, &tenant).await?;
    Ok(Step::written(
        "tenant",
        "tenant 1 (default): meta, domains, 3 databases, 2 FTP users, storage, indexes",
    ))
}
