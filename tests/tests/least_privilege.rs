//! Least privilege: an etcd user whose role covers one prefix (`EtcdConfig::role_permissions`)
//! and a Redis ACL user limited to key patterns (`RedisConfig::acl_rules`) use the whole
//! store inside their scope, and get a typed `PermissionDenied` outside it with nothing
//! written.

use futures::StreamExt;
use keyplane_core::{
    CollectionOp, Compare, CompareOp, ErrorKind, PutOptions, RangeOptions, Store, Txn, TxnOp,
    WatchOptions,
};
use keyplane_etcd::{Access, EtcdConfig, EtcdStore};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{EtcdServer, key_root, redis_connection, shared_redis};
use std::time::Duration;
use tokio::task::block_in_place;

/// Everything a store is used for, on keys under `root`.
async fn works_inside(store: &dyn Store, root: &str) {
    let key = |name: &str| format!("{root}{name}").into_bytes();
    let mut watch = store.watch(WatchOptions::prefix(root)).await.unwrap();
    let put = store
        .put(&key("a"), b"1", PutOptions::default())
        .await
        .unwrap();
    assert_eq!(store.get(&key("a")).await.unwrap().unwrap().value, b"1");
    let resp = store
        .txn(
            Txn::new()
                .when([Compare::mod_revision(
                    key("a"),
                    CompareOp::Equal,
                    put.revision,
                )])
                .and_then([TxnOp::put(key("b"), b"2")]),
        )
        .await
        .unwrap();
    assert!(resp.succeeded);
    store
        .collection(CollectionOp::SetAdd {
            key: key("set"),
            member: b"m".to_vec(),
        })
        .await
        .unwrap();
    store
        .collection(CollectionOp::ListPush {
            key: key("list"),
            value: b"i".to_vec(),
        })
        .await
        .unwrap();
    let lease = store.lease_grant(Duration::from_secs(30)).await.unwrap();
    store
        .put(&key("leased"), b"l", PutOptions::default().lease(lease.id))
        .await
        .unwrap();
    store.lease_revoke(lease.id).await.unwrap();
    let page = store
        .range(RangeOptions::prefix(root).with_collections())
        .await
        .unwrap();
    assert_eq!(page.entries.len(), 2);
    assert_eq!(page.collections.len(), 2);
    assert!(store.delete(&key("b")).await.unwrap().existed());
    let batch = watch.next().await.unwrap().unwrap();
    assert_eq!(batch.events[0].key(), key("a").as_slice());
    let done = store.delete_prefix(root.as_bytes()).await.unwrap();
    assert_eq!(done.deleted, 3);
}

/// Every kind of operation on `outside` (which holds a value another user wrote) fails with
/// `PermissionDenied`, and a transaction that also writes `inside` writes nothing.
async fn refused_outside(store: &dyn Store, outside: &str, inside: &str) {
    let denied = |err: keyplane_core::Error| {
        assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err:?}");
        assert!(!err.is_retryable(), "{err}");
    };
    let out = outside.as_bytes();
    denied(store.get(out).await.unwrap_err());
    denied(
        store
            .put(out, b"x", PutOptions::default())
            .await
            .unwrap_err(),
    );
    denied(store.delete(out).await.unwrap_err());
    denied(
        store
            .range(RangeOptions::prefix(outside))
            .await
            .unwrap_err(),
    );
    denied(
        store
            .collection(CollectionOp::SetAdd {
                key: [out, b"-set"].concat(),
                member: b"m".to_vec(),
            })
            .await
            .unwrap_err(),
    );
    let before = store.revision().await.unwrap();
    let mixed = Txn::new().and_then([TxnOp::put(inside.as_bytes(), b"in"), TxnOp::put(out, b"x")]);
    denied(store.txn(mixed).await.unwrap_err());
    let mixed = Txn::new().and_then([
        TxnOp::put(inside.as_bytes(), b"in"),
        TxnOp::delete_prefix(out),
    ]);
    denied(store.txn(mixed).await.unwrap_err());
    assert!(store.get(inside.as_bytes()).await.unwrap().is_none());
    assert_eq!(store.revision().await.unwrap(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_etcd_role_on_one_prefix() {
    let Some(server) = block_in_place(EtcdServer::start) else {
        return;
    };
    let config = EtcdConfig::new([server.endpoint()]);
    let mut admin = etcd_client::Client::connect([server.endpoint()], None)
        .await
        .unwrap();
    admin.put("other/secret", "s", None).await.unwrap();
    admin.role_add("root").await.unwrap();
    admin.user_add("root", "rootpw", None).await.unwrap();
    admin.user_grant_role("root", "root").await.unwrap();
    admin.role_add("app").await.unwrap();
    for perm in config.role_permissions(b"app/") {
        let kind = match perm.access {
            Access::Read => etcd_client::PermissionType::Read,
            Access::ReadWrite => etcd_client::PermissionType::Readwrite,
        };
        let mut grant = etcd_client::Permission::new(kind, perm.key);
        if !perm.range_end.is_empty() {
            grant = grant.with_range_end(perm.range_end);
        }
        admin.role_grant_permission("app", grant).await.unwrap();
    }
    admin.user_add("app", "apppw", None).await.unwrap();
    admin.user_grant_role("app", "app").await.unwrap();
    admin.auth_enable().await.unwrap();

    let store = EtcdStore::open(config.auth("app", "apppw")).await.unwrap();
    works_inside(&store, "app/in/").await;
    refused_outside(&store, "other/secret", "app/in/txn").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_acl_user_on_key_patterns() {
    let Some(server) = shared_redis().await else {
        return;
    };
    let root = key_root("acl");
    let user = format!("app-{}", uuid::Uuid::new_v4().simple());
    let config = RedisConfig::new(server.url());
    let rules = config.acl_rules(&[&format!("{root}in/*")]);
    let mut admin = redis_connection(&server.url()).await;
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&user)
        .arg("on")
        .arg(">apppw")
        .arg(rules.split(' ').collect::<Vec<_>>())
        // Keys the user may read and not write.
        .arg(format!("%R~{root}ro/*"))
        .query_async(&mut admin)
        .await
        .unwrap();
    // Another user's key, written through a store of its own.
    let outside = format!("{root}out/secret");
    let read_only = format!("{root}ro/shared");
    let other = RedisStore::open(config.clone()).await.unwrap();
    for key in [&outside, &read_only] {
        other
            .put(key.as_bytes(), b"s", PutOptions::default())
            .await
            .unwrap();
    }

    let store = RedisStore::open(config.username(user.clone()).password("apppw".to_owned()))
        .await
        .unwrap();
    let inside = format!("{root}in/");
    works_inside(&store, &inside).await;
    refused_outside(&store, &outside, &format!("{inside}txn")).await;
    // A key the user may read and not write: a transaction writing it and a key in scope is
    // refused before its first write (Redis would have run the first SET, then refused the
    // second, had the script not checked every write first).
    assert_eq!(
        store
            .get(read_only.as_bytes())
            .await
            .unwrap()
            .unwrap()
            .value,
        b"s"
    );
    let before = store.revision().await.unwrap();
    for second in [
        TxnOp::put(read_only.as_bytes(), b"x"),
        TxnOp::delete(read_only.as_bytes()),
        TxnOp::Collection(CollectionOp::SetAdd {
            key: format!("{root}ro/set").into_bytes(),
            member: b"m".to_vec(),
        }),
    ] {
        let txn = Txn::new().and_then([
            TxnOp::put(format!("{inside}first").as_bytes(), b"1"),
            second,
        ]);
        let err = store.txn(txn).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err:?}");
    }
    let err = store
        .put(read_only.as_bytes(), b"x", PutOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err:?}");
    assert!(
        store
            .get(format!("{inside}first").as_bytes())
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(store.revision().await.unwrap(), before);

    // Puts issued at once share the server's calls (the group commit): each refused one fails
    // alone and writes nothing, each put in scope succeeds at a revision of its own.
    let puts = (0..48).map(|i| {
        let key = match i % 3 {
            0 => format!("{inside}many/{i}"),
            1 => read_only.clone(),
            _ => outside.clone(),
        };
        let store = &store;
        async move {
            let put = store.put(key.as_bytes(), b"m", PutOptions::default()).await;
            (i, put)
        }
    });
    let mut revisions = Vec::new();
    for (i, put) in futures::future::join_all(puts).await {
        match put {
            Ok(put) if i % 3 == 0 => revisions.push(put.revision),
            Err(err) if i % 3 != 0 => {
                assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err:?}");
            }
            other => panic!("put {i}: {other:?}"),
        }
    }
    revisions.sort_unstable();
    revisions.dedup();
    assert_eq!(
        revisions.len(),
        16,
        "each put in scope has its own revision"
    );
    assert_eq!(store.revision().await.unwrap(), before + 16);
    for key in [&read_only, &outside] {
        let kept = other.get(key.as_bytes()).await.unwrap().unwrap();
        assert_eq!((kept.value.as_slice(), kept.version), (&b"s"[..], 1));
    }

    // A prefix delete reaching a key of the user's scope and one outside it deletes neither.
    store
        .put(
            format!("{inside}kept").as_bytes(),
            b"k",
            PutOptions::default(),
        )
        .await
        .unwrap();
    let err = store.delete_prefix(root.as_bytes()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
    assert!(
        store
            .get(format!("{inside}kept").as_bytes())
            .await
            .unwrap()
            .is_some()
    );
    let value: Option<String> = redis::cmd("GET")
        .arg(&outside)
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(value.as_deref(), Some("s"));
}

/// Runs `args` on the server on `port` (a data server or a sentinel) as the default user.
fn admin(port: u16, args: &[&str]) -> redis::RedisResult<redis::Value> {
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}"))?.get_connection()?;
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(&mut con)
}

/// Under Sentinel the store needs, of the sentinels, one command
/// (`RedisConfig::sentinel_acl_rules`: `SENTINEL GET-MASTER-ADDR-BY-NAME`) as a user of its
/// own, and of the data servers the user of `acl_rules` (which adds `ROLE`). With just that
/// it uses the whole store, follows a failover, and is refused outside its keys; the
/// sentinel user can do nothing else, and a wrong sentinel password is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_user_that_may_only_name_the_master() {
    use keyplane_tests::harness::{RedisSentinel, SENTINEL_MASTER};
    let Some(deployment) = block_in_place(RedisSentinel::start) else {
        return;
    };
    let root = key_root("acl-sentinel");
    let url = deployment
        .url()
        .replace("redis+sentinel://", "redis+sentinel://app:apppw@");
    // The configuration's sentinel credentials override the URL's.
    let config = RedisConfig::new(format!("{url}?sentinel_username=ignored"))
        .sentinel_username("watcher")
        .sentinel_password("watcherpw");
    // ACL users are not replicated: every data server, which may become the master, has it.
    let data_rules = config.acl_rules(&[&format!("{root}in/*")]);
    let data_rules: Vec<&str> = data_rules.split(' ').collect();
    for port in deployment.server_ports() {
        let mut args = vec!["ACL", "SETUSER", "app", "on", ">apppw"];
        args.extend(&data_rules);
        block_in_place(|| admin(port, &args)).unwrap();
    }
    let sentinel_rules = config.sentinel_acl_rules();
    for port in deployment.sentinel_ports() {
        let mut args = vec!["ACL", "SETUSER", "watcher", "on", ">watcherpw"];
        args.extend(sentinel_rules.split(' '));
        block_in_place(|| admin(port, &args)).unwrap();
    }
    // The sentinel user may name the master and do nothing else.
    let as_watcher = |args: &[&str]| {
        let port = deployment.sentinel_ports()[0];
        let url = format!("redis://watcher:watcherpw@127.0.0.1:{port}");
        let mut con = redis::Client::open(url)?.get_connection()?;
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        cmd.query::<redis::Value>(&mut con)
    };
    block_in_place(|| as_watcher(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", SENTINEL_MASTER]))
        .unwrap();
    for forbidden in [
        &["SENTINEL", "FAILOVER", SENTINEL_MASTER][..],
        &["SENTINEL", "MASTERS"],
        &["SENTINEL", "SET", SENTINEL_MASTER, "quorum", "1"],
        &["SENTINEL", "SENTINELS", SENTINEL_MASTER],
        &["ACL", "LIST"],
    ] {
        let err = block_in_place(|| as_watcher(forbidden)).expect_err("a forbidden command ran");
        assert!(
            err.to_string().contains("no permissions"),
            "{forbidden:?}: {err}"
        );
    }

    let store = RedisStore::open(config.clone()).await.unwrap();
    let inside = format!("{root}in/");
    works_inside(&store, &inside).await;
    let other = RedisStore::open(RedisConfig::new(deployment.url()))
        .await
        .unwrap();
    let outside = format!("{root}out/secret");
    other
        .put(outside.as_bytes(), b"s", PutOptions::default())
        .await
        .unwrap();
    refused_outside(&store, &outside, &format!("{inside}txn")).await;

    // It follows a failover with the same rights.
    let old = deployment.master_port();
    let new = block_in_place(|| deployment.fail_over());
    assert_ne!(old, new);
    let key = format!("{inside}after");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match store.put(key.as_bytes(), b"v", PutOptions::default()).await {
            Ok(_) => break,
            Err(e) => {
                assert!(e.is_retryable(), "{e}");
                assert!(std::time::Instant::now() < deadline, "{e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    assert!(store.get(key.as_bytes()).await.unwrap().is_some());

    // A wrong sentinel password: refused, with the kind that says so.
    let wrong = config.sentinel_password("wrong");
    let err = RedisStore::open(wrong)
        .await
        .err()
        .expect("a wrong password was taken");
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Unauthorized | ErrorKind::PermissionDenied
        ),
        "{err}"
    );
}
