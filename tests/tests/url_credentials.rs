//! Credentials in `redis+cluster://` and `redis+sentinel://` URLs are percent-decoded before
//! they reach the servers: a password holding `/`, `?`, `#`, `%`, `@`, `&`, `:` or `,`,
//! given percent-encoded in the URL, authenticates as itself, to a cluster's nodes, to a
//! Sentinel deployment's master and to its sentinels.

use keyplane_core::{PutOptions, Store};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{RedisSentinel, key_root, shared_redis_cluster};
use tokio::task::block_in_place;

/// A password holding every delimiter of a URL.
const PASSWORD: &str = "p/w?x#y%z@a&b:c,d+e f";
/// The sentinels' password, another one.
const SENTINEL_PASSWORD: &str = "s@n/t?i#n%e&l";

/// `text` with every byte but ASCII letters and digits percent-encoded.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Runs `args` on the server (a data server or a sentinel) on `port`.
fn admin(port: u16, args: &[&str]) {
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .and_then(|c| c.get_connection())
        .expect("a connection to the server");
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    let _: redis::Value = cmd.query(&mut con).expect("the command runs");
}

/// A put and a get through `store` under a key root of its own (with a hash tag, which a
/// cluster needs).
async fn works(store: &RedisStore, tag: &str) {
    let key = format!("{}{{g}}/k", key_root(tag));
    store
        .put(key.as_bytes(), b"v", PutOptions::default())
        .await
        .unwrap();
    let entry = store.get(key.as_bytes()).await.unwrap();
    assert_eq!(entry.map(|e| e.value), Some(b"v".to_vec()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_user_whose_password_holds_url_delimiters() {
    let Some(cluster) = shared_redis_cluster().await else {
        return;
    };
    for node in cluster.node_urls() {
        let port: u16 = node.rsplit(':').next().unwrap().parse().unwrap();
        let password = format!(">{PASSWORD}");
        block_in_place(|| {
            admin(
                port,
                &[
                    "ACL", "SETUSER", "del@m", "on", &password, "~*", "&*", "+@all",
                ],
            );
        });
    }
    let url = cluster.url().replace(
        "redis+cluster://",
        &format!("redis+cluster://{}:{}@", encode("del@m"), encode(PASSWORD)),
    );
    let store = RedisStore::open(RedisConfig::new(url)).await.unwrap();
    works(&store, "url-credentials-cluster").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_deployment_whose_passwords_hold_url_delimiters() {
    let Some(deployment) = block_in_place(RedisSentinel::start) else {
        return;
    };
    let url = deployment.url().replace(
        "redis+sentinel://",
        &format!("redis+sentinel://{}:{}@", encode("ap&p"), encode(PASSWORD)),
    );
    let url = format!(
        "{url}?sentinel_username={}&sentinel_password={}",
        encode("watch@er"),
        encode(SENTINEL_PASSWORD)
    );
    let config = RedisConfig::new(url);
    // ACL users are not replicated: every data server, which may become the master, has it.
    let password = format!(">{PASSWORD}");
    for port in deployment.server_ports() {
        block_in_place(|| {
            admin(
                port,
                &[
                    "ACL", "SETUSER", "ap&p", "on", &password, "~*", "&*", "+@all",
                ],
            );
        });
    }
    let sentinel_password = format!(">{SENTINEL_PASSWORD}");
    let rules = config.sentinel_acl_rules();
    for port in deployment.sentinel_ports() {
        let mut args = vec!["ACL", "SETUSER", "watch@er", "on", &sentinel_password];
        args.extend(rules.split(' '));
        block_in_place(|| admin(port, &args));
    }
    let store = RedisStore::open(config).await.unwrap();
    works(&store, "url-credentials-sentinel").await;
}
