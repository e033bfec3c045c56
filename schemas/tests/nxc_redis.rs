//! On Redis the nxc data is native: `TYPE` says set / string / hash / string for map,
//! default marker, instance and pool, and plain Redis commands read what the document shows.

use keyplane_core::keyspace::{EncryptionKey, Keyring, TypedStore};
use keyplane_schemas::nxc::*;
use std::sync::Arc;

async fn query<T: redis::FromRedisValue>(
    con: &mut redis::aio::MultiplexedConnection,
    cmd: &str,
    key: &str,
) -> T {
    redis::cmd(cmd).arg(key).query_async(con).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nxc_keys_are_native_redis_types() {
    let Some((store, mut con)) = keyplane_tests::backends::redis_with_connection().await else {
        return;
    };
    let ring = Arc::new(Keyring::new("pool-1", EncryptionKey::generate()).unwrap());
    let typed = TypedStore::new(store).with_codec_state(ring.clone());
    let realm = RealmId::new(format!("realm_{}", uuid::Uuid::new_v4().simple())).unwrap();
    let example = write_example(&typed, &realm).await.unwrap();

    let map = format!("nxc:map:{realm}:Alipay");
    let marker = format!("{map}:default");
    let inst = format!("nxc:inst:{realm}:Alipay:app_001");
    let pool = "nxc:pool:Alipay:app_001".to_string();
    for (key, expected) in [
        (&map, "set"),
        (&marker, "string"),
        (&inst, "hash"),
        (&pool, "string"),
    ] {
        let t: String = query(&mut con, "TYPE", key).await;
        assert_eq!(t, expected, "{key}");
    }

    // SMEMBERS nxc:map:{realm}:{provider} → [app_001, app_002]
    let mut members: Vec<String> = query(&mut con, "SMEMBERS", &map).await;
    members.sort();
    assert_eq!(members, ["app_001", "app_002"]);
    // SISMEMBER, the ownership check the document's resolver runs.
    let owned: bool = redis::cmd("SISMEMBER")
        .arg(&map)
        .arg("app_002")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(owned);
    // GET nxc:map:{realm}:{provider}:default → app_001
    let default: String = query(&mut con, "GET", &marker).await;
    assert_eq!(default, example.profiles[0].as_str());
    // HGETALL nxc:inst:… → sub_mchid, access_token, gateway_url
    let mut fields: Vec<(String, String)> = query(&mut con, "HGETALL", &inst).await;
    fields.sort();
    let names: Vec<&str> = fields.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(names, ["access_token", "gateway_url", "sub_mchid"]);
    assert!(fields.contains(&("sub_mchid".into(), "1900000101".into())));
    // GET nxc:pool:… → an encrypted envelope, never the plaintext.
    let envelope: Vec<u8> = query(&mut con, "GET", &pool).await;
    assert_eq!(Keyring::envelope_key_id(&envelope).unwrap(), "pool-1");
    assert!(!envelope.windows(11).any(|w| w == b"PRIVATE KEY"));

    // Deleting the default profile leaves native data consistent.
    delete_profile(&typed, &realm, &example.provider, &example.profiles[0])
        .await
        .unwrap();
    let members: Vec<String> = query(&mut con, "SMEMBERS", &map).await;
    assert_eq!(members, ["app_002"]);
    let exists: i64 = query(&mut con, "EXISTS", &marker).await;
    assert_eq!(exists, 0);
    let t: String = query(&mut con, "TYPE", &inst).await;
    assert_eq!(t, "none");
}
