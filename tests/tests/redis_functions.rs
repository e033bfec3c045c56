//! How RedisStore runs its Lua: as the functions of one library (`FCALL`), loaded when the
//! server lacks it, and by `EVALSHA` when the user may not call or load the library, when the
//! configuration says so, or for one call the server refuses because it is out of memory.
//! Each test starts its own server: they flush functions and change the server's settings.

use keyplane_core::{ErrorKind, PutOptions, Store, Txn, TxnOp};
use keyplane_redis::{RedisConfig, RedisStore, function_library};
use keyplane_tests::harness::{
    RedisServer, key_root, redis_command_calls, redis_connection as raw,
};
use redis::aio::MultiplexedConnection;

/// The names of the function libraries the server holds.
async fn libraries(con: &mut MultiplexedConnection) -> Vec<String> {
    let list: redis::Value = redis::cmd("FUNCTION")
        .arg("LIST")
        .query_async(con)
        .await
        .unwrap();
    let mut names = Vec::new();
    let redis::Value::Array(libraries) = list else {
        panic!("{list:?}")
    };
    for library in libraries {
        let fields: Vec<redis::Value> = match library {
            redis::Value::Array(fields) => fields,
            redis::Value::Map(pairs) => pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
            other => panic!("{other:?}"),
        };
        for pair in fields.chunks(2) {
            if let [redis::Value::BulkString(k), redis::Value::BulkString(v)] = pair
                && k == b"library_name"
            {
                names.push(String::from_utf8(v.clone()).unwrap());
            }
        }
    }
    names
}

/// A put, a get and a two-op transaction, each checked.
async fn use_store(store: &RedisStore, root: &str) {
    let key = format!("{root}k");
    store
        .put(key.as_bytes(), b"v1", PutOptions::default())
        .await
        .unwrap();
    let txn = Txn::new().and_then([
        TxnOp::put(key.as_bytes(), b"v2"),
        TxnOp::put(format!("{root}other").as_bytes(), b"o"),
    ]);
    assert!(store.txn(txn).await.unwrap().succeeded);
    let entry = store.get(key.as_bytes()).await.unwrap().unwrap();
    assert_eq!((entry.value.as_slice(), entry.version), (&b"v2"[..], 2));
}

/// The name the library gives itself in its first line.
fn library_name() -> String {
    function_library()
        .lines()
        .next()
        .unwrap()
        .strip_prefix("#!lua name=")
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn scripts_run_as_one_library_loaded_again_after_a_flush() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut con = raw(&server.url()).await;
    let store = RedisStore::from_url(&server.url()).await.unwrap();
    assert_eq!(libraries(&mut con).await, vec![library_name()]);
    let root = key_root("fn");
    let fcalls = redis_command_calls(&mut con, "fcall").await;
    use_store(&store, &root).await;
    assert!(redis_command_calls(&mut con, "fcall").await >= fcalls + 2);
    assert_eq!(
        redis_command_calls(&mut con, "evalsha").await,
        0,
        "no script by SHA"
    );

    // Another program flushes every function: the next call loads the library again.
    let () = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query_async(&mut con)
        .await
        .unwrap();
    store
        .put(format!("{root}k").as_bytes(), b"v3", PutOptions::default())
        .await
        .unwrap();
    assert_eq!(libraries(&mut con).await, vec![library_name()]);
    assert_eq!(
        store
            .get(format!("{root}k").as_bytes())
            .await
            .unwrap()
            .unwrap()
            .version,
        3
    );
    assert_eq!(redis_command_calls(&mut con, "evalsha").await, 0);

    // A second store finds the library loaded.
    let second = RedisStore::from_url(&server.url()).await.unwrap();
    use_store(&second, &key_root("fn2")).await;
    assert_eq!(libraries(&mut con).await, vec![library_name()]);
}

#[tokio::test]
async fn with_functions_off_scripts_run_by_sha() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut con = raw(&server.url()).await;
    let store = RedisStore::open(RedisConfig::new(server.url()).functions(false))
        .await
        .unwrap();
    use_store(&store, &key_root("nofn")).await;
    assert!(redis_command_calls(&mut con, "evalsha").await >= 2);
    assert_eq!(redis_command_calls(&mut con, "fcall").await, 0);
    assert!(libraries(&mut con).await.is_empty());
}

/// Creates an ACL user with the store's least-privilege rules for `root`.
async fn least_privilege_user(con: &mut MultiplexedConnection, root: &str) -> String {
    let user = format!("app-{}", uuid::Uuid::new_v4().simple());
    let rules = RedisConfig::default().acl_rules(&[&format!("{root}*")]);
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&user)
        .arg("on")
        .arg(">pw")
        .arg(rules.split(' ').collect::<Vec<_>>())
        .query_async(con)
        .await
        .unwrap();
    user
}

async fn store_as(server: &RedisServer, user: &str) -> RedisStore {
    RedisStore::open(
        RedisConfig::new(server.url())
            .username(user.to_owned())
            .password("pw".to_owned()),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_user_who_may_call_but_not_load_the_library_uses_it_once_an_administrator_loads_it() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut con = raw(&server.url()).await;
    let root = key_root("aclfn");
    let user = least_privilege_user(&mut con, &root).await;

    // No library, and the user may not load one: scripts run by SHA.
    let store = store_as(&server, &user).await;
    assert!(libraries(&mut con).await.is_empty());
    let evalsha = redis_command_calls(&mut con, "evalsha").await;
    use_store(&store, &format!("{root}a/")).await;
    assert!(redis_command_calls(&mut con, "evalsha").await >= evalsha + 2);

    // An administrator loads it (as `redis-cli -x FUNCTION LOAD` would): a store of the same
    // user calls it.
    let loaded: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(function_library())
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(loaded, library_name());
    let store = store_as(&server, &user).await;
    let (evalsha, fcalls) = (
        redis_command_calls(&mut con, "evalsha").await,
        redis_command_calls(&mut con, "fcall").await,
    );
    use_store(&store, &format!("{root}b/")).await;
    assert_eq!(redis_command_calls(&mut con, "evalsha").await, evalsha);
    assert!(redis_command_calls(&mut con, "fcall").await >= fcalls + 2);

    // The user loses the right to call functions: the store goes on by SHA.
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&user)
        .arg("-fcall")
        .query_async(&mut con)
        .await
        .unwrap();
    use_store(&store, &format!("{root}c/")).await;
    assert!(redis_command_calls(&mut con, "evalsha").await >= evalsha + 2);
}

/// Redis refuses a function that may write before it starts when memory is over
/// `maxmemory`; the store runs it once more by SHA, which Redis checks at its first write, so
/// that a delete (which frees memory) still runs and a put still fails, writing nothing.
#[tokio::test]
async fn out_of_memory_refuses_puts_and_runs_deletes() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut con = raw(&server.url()).await;
    let store = RedisStore::from_url(&server.url()).await.unwrap();
    let root = key_root("oom");
    for i in 0..3 {
        store
            .put(
                format!("{root}k{i}").as_bytes(),
                b"value",
                PutOptions::default(),
            )
            .await
            .unwrap();
    }
    let before = store.revision().await.unwrap();
    for (name, value) in [("maxmemory-policy", "noeviction"), ("maxmemory", "1")] {
        let () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(value)
            .query_async(&mut con)
            .await
            .unwrap();
    }

    let err = store
        .put(format!("{root}new").as_bytes(), b"x", PutOptions::default())
        .await
        .unwrap_err();
    assert_ne!(err.kind(), ErrorKind::Unavailable, "{err:?}");
    assert!(format!("{err:?}").contains("OOM"), "{err:?}");
    let deleted = store.delete(format!("{root}k0").as_bytes()).await.unwrap();
    assert!(deleted.prev.is_some(), "{deleted:?}");
    let txn = Txn::new().and_then([TxnOp::delete(format!("{root}k1").as_bytes())]);
    assert!(store.txn(txn).await.unwrap().succeeded);

    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("0")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(store.revision().await.unwrap(), before + 2);
    assert_eq!(
        store.get(format!("{root}new").as_bytes()).await.unwrap(),
        None
    );
    assert_eq!(
        store.get(format!("{root}k0").as_bytes()).await.unwrap(),
        None
    );
    assert!(
        store
            .get(format!("{root}k2").as_bytes())
            .await
            .unwrap()
            .is_some()
    );
}
