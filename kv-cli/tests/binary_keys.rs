//! Binary keys round-trip through kvctl on etcd and Redis: a key holding bytes 0xff, 0x01,
//! `\n` and `\` written with the library is listed escaped (and as hex with `--hex`), and the
//! printed key, passed back, names the key for `get`, `rm`, `put` and `txn`.

mod common;

use common::background::{etcd_url, redis_url};
use common::*;
use keyplane::PutOptions;
use keyplane_tests::harness::key_root;

async fn binary_keys(url: &str) {
    let root = key_root("binary");
    let store = keyplane::open(url).await.expect("the store opens");
    let mut key = root.clone().into_bytes();
    key.extend_from_slice(b"bin\xff\n\\\x01end");
    store
        .put(&key, b"v\xfe", PutOptions::default())
        .await
        .expect("the library writes the key");

    // Listed escaped: plain text as it is, `\\`, `\n`, `\xNN`.
    let printed = ok(url, &["ls", &root, "--keys-only"]);
    let expected = format!(r"{root}bin\xff\n\\\x01end");
    assert_eq!(printed, format!("{expected}\n"));
    assert_eq!(listed_keys(url, &[&root]), std::slice::from_ref(&expected));
    let table = ok(url, &["ls", &root]);
    assert!(table.starts_with(&expected), "{table}");

    // The printed key names it.
    let got = json(url, &["get", &expected]);
    assert_eq!(got["key"], expected.as_str(), "{got}");
    assert_eq!(got["value"], serde_json::json!({ "hex": "76fe" }), "{got}");
    // With --hex, every byte `\xNN`, as etcdctl prints it; and that is taken back too.
    let hex = ok(url, &["--hex", "ls", &root, "--keys-only"]);
    let hex = hex.trim_end();
    let all: String = key.iter().map(|b| format!("\\x{b:02x}")).collect();
    assert_eq!(hex, all);
    let value = ok(url, &["--hex", "get", hex]);
    assert!(value.contains(r"\x76\xfe"), "{value}");

    // A bad escape is refused, nothing read or written.
    let err = fails(url, &["get", &format!(r"{root}bin\q")], 2);
    assert!(err.contains("backslash"), "{err}");
    fails(url, &["put", "--raw", &format!(r"{root}\x4"), "v"], 2);

    // rm with the printed key deletes the key the library wrote.
    assert_eq!(
        ok(url, &["rm", &expected]).trim(),
        format!("deleted {expected}")
    );
    assert_eq!(store.get(&key).await.expect("a read"), None);

    // put takes the escaped form, and the library reads the bytes.
    ok(url, &["put", "--raw", &expected, "again"]);
    let entry = store.get(&key).await.expect("a read").expect("written");
    assert_eq!(entry.value, b"again");

    // txn: keys unescaped in its lines too, printed escaped.
    let input = format!("value(\"{expected}\") = \"again\"\n\nget {expected}\ndel {expected}\n\n");
    let done = outcome(kvctl(url).arg("txn").write_stdin(input));
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(done.stdout, format!("SUCCESS\n\n{expected}\nagain\n\n1\n"));
    assert_eq!(store.get(&key).await.expect("a read"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_binary_keys() {
    let Some(url) = etcd_url("binary").await else {
        return;
    };
    binary_keys(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_binary_keys() {
    let Some(url) = redis_url(1).await else {
        return;
    };
    binary_keys(&url).await;
}
