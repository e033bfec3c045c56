// A prefix without a key type names a directory of several templates: it can be deleted,
// but a typed listing needs the one key type to parse, so listing it does not compile.
use keyplane_core::keyspace::{ListOptions, Prefix, TypedStore};

#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/")]
struct TenantDir {
    id: u64,
}

async fn use_it(typed: TypedStore) {
    let dir = TenantDir { id: 1 };
    let _ = typed.delete_prefix(&dir).await;
    let _ = typed.list(&dir, ListOptions::limit(10)).await;
}

fn main() {
    drop(use_it);
}
