//! `kvctl` for daily use: several processes on one embedded store (the default one included),
//! guarded writes, reads at a revision, export/import/copy across the backends, encrypted
//! values, completions and the manual, and errors that suggest the fix.

mod common;

use common::background::{Background, etcd_url, redb_url, redis_url, sled_url};
use common::*;
use serde_json::Value;
use std::time::Duration;

/// `kvctl` on the default store: no --store, the data directory under `data`.
fn default_store(data: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("kvctl"));
    cmd.env_remove("KVCTL_STORE").env("XDG_DATA_HOME", data);
    cmd
}

fn run_default(data: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = default_store(data).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Three terminals on the default store: a watch in one, puts in another, gets in a third,
/// all at once; the watch sees the other processes' writes.
#[test]
fn watch_put_and_get_share_the_default_store() {
    let data = tempfile::tempdir().unwrap();
    let (code, out, err) = run_default(
        data.path(),
        &["-o", "json", "put", "tenant.meta", "id=5", &tenant_meta(5)],
    );
    assert_eq!(code, 0, "{err}");
    let first: Value = serde_json::from_str(&out).unwrap();
    let from = first["revision"].as_i64().unwrap();
    let mut cmd = default_store(data.path());
    cmd.args(["-o", "json", "watch", "jxt/", "--rev", &from.to_string()]);
    let watch = Background::spawn(cmd);
    assert_eq!(watch.next_json()["key"], "jxt/tenants/5/meta");
    // Writers and readers in their own processes while the watch runs.
    let writers: Vec<_> = (6..9)
        .map(|id| {
            let data = data.path().to_owned();
            std::thread::spawn(move || {
                let meta = tenant_meta(id);
                let id = format!("id={id}");
                let (code, _, err) = run_default(&data, &["put", "tenant.meta", &id, &meta]);
                assert_eq!(code, 0, "{err}");
                let (code, out, err) = run_default(&data, &["get", "tenant.meta", &id]);
                assert_eq!(code, 0, "{err}");
                assert!(out.contains("active"), "{out}");
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let mut seen: Vec<String> = (0..3)
        .map(|_| watch.next_json()["key"].as_str().unwrap().to_owned())
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            "jxt/tenants/6/meta",
            "jxt/tenants/7/meta",
            "jxt/tenants/8/meta"
        ]
    );
    // A watch started without --rev follows from now on.
    let mut cmd = default_store(data.path());
    cmd.args(["-o", "json", "watch", "jxt/tenants/"]);
    let live = Background::spawn(cmd);
    // The watch holds no lock between polls: a delete from here goes through, and both
    // watches report it (the live one may have started after it: then it sees the put).
    let mut seen_live = None;
    for attempt in 0..50 {
        let (code, _, err) = run_default(
            data.path(),
            &["put", "tenant.meta", "id=9", &tenant_meta(9)],
        );
        assert_eq!(code, 0, "{err}");
        if let Some(line) = live.next_within(Duration::from_millis(500)) {
            seen_live = Some((attempt, line));
            break;
        }
    }
    let (_, line) = seen_live.expect("the live watch saw a put");
    assert!(line.contains("jxt/tenants/9/meta"), "{line}");
}

/// A command that cannot get an embedded store another program holds says why and what to
/// do, after waiting for it: a redb file.
#[tokio::test]
async fn a_redb_store_held_by_a_program_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let held = keyplane::redb::RedbStore::open(keyplane::redb::RedbConfig::new(&path))
        .await
        .unwrap();
    held_store_is_explained(&format!("redb://{}", path.display()), "RedbStore");
    drop(held);
    fails(&format!("redb://{}", path.display()), &["get", "x"], 1);
}

/// As [`a_redb_store_held_by_a_program_is_explained`], on a sled directory.
#[tokio::test]
async fn a_sled_store_held_by_a_program_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let held = keyplane::sled::SledStore::open(keyplane::sled::SledConfig::new(&path))
        .await
        .unwrap();
    held_store_is_explained(&format!("sled://{}", path.display()), "SledStore");
    drop(held);
    fails(&format!("sled://{}", path.display()), &["get", "x"], 1);
}

fn held_store_is_explained(url: &str, holder: &str) {
    let started = std::time::Instant::now();
    let err = fails(url, &["get", "x"], 3);
    assert!(err.contains("in use"), "{err}");
    assert!(err.contains(holder), "{err}");
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "it waited for the store"
    );
}

fn guarded_writes(url: &str) {
    let key = "tenant.meta";
    let created = json(url, &["put", "--create", key, "id=41", &tenant_meta(41)]);
    let rev = created["revision"].as_i64().unwrap();
    let before = json(url, &["get", key, "id=41"]);
    let err = fails(url, &["put", "--create", key, "id=41", &tenant_meta(41)], 4);
    assert!(err.contains("already exists"), "{err}");
    let err = fails(
        url,
        &[
            "put",
            "--if-mod-revision",
            &(rev + 1000).to_string(),
            key,
            "id=41",
            &tenant_meta(41),
        ],
        4,
    );
    assert!(err.contains(&format!("mod revision {rev}")), "{err}");
    assert_eq!(json(url, &["get", key, "id=41"]), before, "nothing written");
    let again = json(
        url,
        &[
            "put",
            "--if-mod-revision",
            &rev.to_string(),
            key,
            "id=41",
            &tenant_meta(41),
        ],
    );
    let rev2 = again["revision"].as_i64().unwrap();
    assert!(rev2 > rev);
    // 0: only when the key does not exist.
    fails(
        url,
        &[
            "put",
            "--if-mod-revision",
            "0",
            key,
            "id=41",
            &tenant_meta(41),
        ],
        4,
    );
    json(
        url,
        &[
            "put",
            "--if-mod-revision",
            "0",
            key,
            "id=42",
            &tenant_meta(42),
        ],
    );
    let negative = run(url, &["put", "--if-mod-revision", "-1", key, "id=41", "x"]);
    assert_eq!(negative.code, 2, "{}", negative.stderr);
    assert!(
        negative.stderr.contains("a revision is 0"),
        "{}",
        negative.stderr
    );
    let both = run(
        url,
        &[
            "put",
            "--create",
            "--if-mod-revision",
            "1",
            key,
            "id=41",
            "x",
        ],
    );
    assert_eq!(
        both.code, 2,
        "clap refuses the two guards together: {}",
        both.stderr
    );
    fails(
        url,
        &["rm", "--if-mod-revision", &rev.to_string(), key, "id=41"],
        4,
    );
    assert_eq!(json(url, &["get", key, "id=41"])["mod_revision"], rev2);
    json(
        url,
        &["rm", "--if-mod-revision", &rev2.to_string(), key, "id=41"],
    );
    fails(url, &["get", key, "id=41"], 1);
    // A leased write: the lease is printed, and the key carries it.
    let leased = json(
        url,
        &["put", "--lease-ttl", "30s", key, "id=43", &tenant_meta(43)],
    );
    let lease = leased["lease"]["id"].as_str().unwrap().to_owned();
    assert!(
        leased["lease"]["ttl_seconds"].as_u64().unwrap() >= 30,
        "{leased}"
    );
    let got = json(url, &["get", key, "id=43"]);
    assert_eq!(
        format!("{:x}", got["lease"].as_i64().unwrap()),
        lease,
        "{got}"
    );
    let text = ok(
        url,
        &["put", "--lease-ttl", "1m", key, "id=44", &tenant_meta(44)],
    );
    assert!(text.contains("lease") && text.contains("TTL 60s"), "{text}");
    let zero = run(
        url,
        &["put", "--lease-ttl", "0s", key, "id=45", &tenant_meta(45)],
    );
    assert_eq!(zero.code, 2, "clap refuses the TTL: {}", zero.stderr);
    assert!(zero.stderr.contains("more than zero"), "{}", zero.stderr);
    fails(url, &["get", key, "id=45"], 1);
    // A collection has no mod revision: the guard is refused, nothing deleted.
    fails(
        url,
        &[
            "rm",
            "--if-mod-revision",
            "1",
            "nxc.profile-map",
            "realm=r",
            "provider=p",
        ],
        2,
    );
}

fn reads_at_a_revision(url: &str) {
    let key = "jxt/platform/configs/rev-test";
    let first = json(url, &["put", key, r#"{"v":1}"#])["revision"]
        .as_i64()
        .unwrap();
    json(url, &["put", key, r#"{"v":2}"#]);
    json(
        url,
        &["put", "jxt/platform/configs/rev-later", r#"{"v":3}"#],
    );
    let then = json(url, &["get", "--rev", &first.to_string(), key]);
    assert_eq!(then["value"]["v"], 1, "{then}");
    assert_eq!(json(url, &["get", key])["value"]["v"], 2);
    let keys = listed_keys(url, &["--rev", &first.to_string(), "jxt/platform/configs/"]);
    assert_eq!(keys, [key], "the later key did not exist then");
    fails(url, &["get", "--rev", "0", key], 2);
    // The history replays from the revision.
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("kvctl"));
    cmd.env_remove("KVCTL_STORE").args([
        "--store",
        url,
        "-o",
        "json",
        "watch",
        "--rev",
        &first.to_string(),
        "jxt/platform/configs/",
    ]);
    let watch = Background::spawn(cmd);
    let replayed: Vec<(String, Value)> = (0..3)
        .map(|_| {
            let e = watch.next_json();
            (
                e["key"].as_str().unwrap().to_owned(),
                e["value"]["v"].clone(),
            )
        })
        .collect();
    assert_eq!(
        replayed,
        [
            (key.to_owned(), Value::from(1)),
            (key.to_owned(), Value::from(2)),
            ("jxt/platform/configs/rev-later".to_owned(), Value::from(3)),
        ]
    );
}

#[test]
fn redb_guarded_writes_and_reads_at_a_revision() {
    let dir = tempfile::tempdir().unwrap();
    let url = redb_url(&dir);
    guarded_writes(&url);
    reads_at_a_revision(&url);
}

#[test]
fn sled_guarded_writes_and_reads_at_a_revision() {
    let dir = tempfile::tempdir().unwrap();
    let url = sled_url(&dir);
    guarded_writes(&url);
    reads_at_a_revision(&url);
}

#[tokio::test]
async fn etcd_guarded_writes_and_reads_at_a_revision() {
    let Some(url) = etcd_url("daily").await else {
        return;
    };
    guarded_writes(&url);
    reads_at_a_revision(&url);
}

#[tokio::test]
async fn redis_guarded_writes_and_reads_at_a_revision() {
    let Some(url) = redis_url(8).await else {
        return;
    };
    guarded_writes(&url);
    reads_at_a_revision(&url);
}

/// `ls -l -o json` without what a copy cannot keep: revisions, versions and lease ids.
fn contents(url: &str) -> Value {
    let mut listed = snapshot(url);
    for entry in listed.as_array_mut().unwrap() {
        let object = entry.as_object_mut().unwrap();
        for field in ["create_revision", "mod_revision", "version", "lease"] {
            object.remove(field);
        }
    }
    listed
}

fn export(url: &str) -> String {
    ok(url, &["export"])
}

fn import(url: &str, dump: &str, args: &[&str]) -> Run {
    let mut all = vec!["import", "-"];
    all.extend_from_slice(args);
    let out = kvctl(url)
        .args(&all)
        .write_stdin(dump.to_owned())
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// sled → etcd → Redis → redb by export and import, and back by copy: the same keys,
/// values and collections everywhere; a refused import writes nothing.
#[tokio::test]
async fn export_import_round_trip_across_the_backends() {
    let (Some(etcd), Some(redis)) = (etcd_url("daily").await, redis_url(9).await) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let source = sled_url(&dir);
    ok(&source, &["demo"]);
    // Bytes that are not UTF-8, in a key and a value, travel as base64.
    ok(&source, &["put", "--raw", "bin/a", "x"]);
    let expected = contents(&source);
    let dump = export(&source);
    assert!(
        dump.lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok())
    );
    assert!(dump.contains(r#""type":"tenant.meta""#), "typed addresses");
    assert!(dump.contains(r#""kind":"set""#) && dump.contains(r#""kind":"list""#));

    let done = import(&etcd, &dump, &[]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(contents(&etcd), expected);
    let done = import(&redis, &export(&etcd), &[]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(contents(&redis), expected);
    let back = tempfile::tempdir().unwrap();
    let target = redb_url(&back);
    let done = import(&target, &export(&redis), &[]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(contents(&target), expected);
    assert_eq!(export(&target), dump, "the same dump, line for line");

    // Refused: every key exists; nothing is written, not even the keys that do not.
    let before = snapshot(&target);
    let extra = format!("{dump}{{\"key\":\"new/key\",\"kind\":\"value\",\"value\":\"1\"}}\n");
    let refused = import(&target, &extra, &[]);
    assert_eq!(refused.code, 4, "{}", refused.stderr);
    assert!(refused.stderr.contains("--overwrite"), "{}", refused.stderr);
    assert_eq!(snapshot(&target), before);
    // A line that does not parse: nothing written, the line named.
    let broken = "{\"key\":\"new/a\",\"value\":\"1\"}\nnot json\n";
    let refused = import(&target, broken, &[]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("line 2"), "{}", refused.stderr);
    assert_eq!(snapshot(&target), before);
    // --overwrite replaces, collections whole.
    ok(&target, &["put", "--raw", "bin/a", "changed"]);
    let done = import(&target, &extra, &["--overwrite"]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(json(&target, &["get", "bin/a"])["value"], "x");
    assert_eq!(json(&target, &["get", "new/key"])["value"], 1);

    // copy: any two stores, one command.
    let copied = tempfile::tempdir().unwrap();
    let copy = redb_url(&copied);
    let out = json(&copy, &["copy", "--from", &redis, "--to", &copy]);
    assert_eq!(out["keys"].as_u64().unwrap() as usize, dump.lines().count());
    assert_eq!(contents(&copy), expected);
    let again = run(&copy, &["copy", "--from", &redis, "--to", &copy]);
    assert_eq!(again.code, 4, "{}", again.stderr);
}

/// An encrypted value: without a keyring, `get` says which key id sealed it; with one, it
/// prints the plaintext; the key itself never appears.
#[test]
fn encrypted_values_decrypt_with_a_keyring() {
    use base64::Engine;
    use keyplane::keyspace::{EncryptionKey, Keyring};
    let dir = tempfile::tempdir().unwrap();
    let url = sled_url(&dir);
    let secret = [7u8; 32];
    let ring = Keyring::new("ops-2026", EncryptionKey::from_bytes(secret)).unwrap();
    let sealed = ring
        .encrypt_for(b"nxc:pool:alipay:p1", b"-----BEGIN PRIVATE KEY-----")
        .unwrap();
    // Written as the application would, through a keyring of its own.
    let store = keyplane_sled_store(&dir);
    store.put(b"nxc:pool:alipay:p1", &sealed).unwrap();
    let encoded = base64::engine::general_purpose::STANDARD.encode(secret);
    let file = dir.path().join("keyring.json");
    std::fs::write(&file, format!(r#"{{"keys": {{"ops-2026": "{encoded}"}}}}"#)).unwrap();

    let shown = ok(&url, &["get", "nxc.pool", "provider=alipay", "profile=p1"]);
    assert!(shown.contains("encrypted with key id ops-2026"), "{shown}");
    assert!(!shown.contains("PRIVATE"), "{shown}");
    let sealed_json = json(&url, &["get", "nxc:pool:alipay:p1"]);
    assert_eq!(
        sealed_json["encrypted"]["key_id"], "ops-2026",
        "{sealed_json}"
    );
    assert_eq!(sealed_json["value"], Value::Null);

    let path = file.to_str().unwrap();
    let opened = ok(&url, &["--keyring", path, "get", "nxc:pool:alipay:p1"]);
    assert!(opened.contains("-----BEGIN PRIVATE KEY-----"), "{opened}");
    assert!(!opened.contains(&encoded), "the key never appears");
    let from_env = kvctl(&url)
        .env("KVCTL_KEYRING", path)
        .args(["-o", "json", "get", "nxc:pool:alipay:p1"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&from_env.stdout).unwrap();
    assert_eq!(doc["value"], "-----BEGIN PRIVATE KEY-----");
    assert_eq!(doc["decrypted"], true);
    // A keyring without the key id: a clear error, no key material.
    let other = dir.path().join("other.json");
    let wrong = base64::engine::general_purpose::STANDARD.encode([9u8; 32]);
    std::fs::write(&other, format!(r#"{{"keys": {{"old": "{wrong}"}}}}"#)).unwrap();
    let err = fails(
        &url,
        &[
            "--keyring",
            other.to_str().unwrap(),
            "get",
            "nxc:pool:alipay:p1",
        ],
        2,
    );
    assert!(err.contains("ops-2026") && err.contains("old"), "{err}");
    assert!(!err.contains(&wrong) && !err.contains(&encoded), "{err}");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"keys": {"k": "c2hvcnQ="}}"#).unwrap();
    let err = fails(
        &url,
        &[
            "--keyring",
            bad.to_str().unwrap(),
            "get",
            "nxc:pool:alipay:p1",
        ],
        2,
    );
    assert!(err.contains("not 32 bytes"), "{err}");
}

/// Writes raw bytes into the sled store at `dir`, as another program would, and closes it.
fn keyplane_sled_store(dir: &tempfile::TempDir) -> RawSled {
    RawSled(dir.path().join("db"))
}

struct RawSled(std::path::PathBuf);

impl RawSled {
    fn put(&self, key: &[u8], value: &[u8]) -> keyplane::Result<()> {
        use keyplane::{PutOptions, Store};
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let config = keyplane::sled::SledConfig::new(&self.0);
            let store = keyplane::sled::SledStore::open(config).await?;
            store.put(key, value, PutOptions::default()).await?;
            Ok(())
        })
    }
}

#[test]
fn completions_know_the_typed_addresses_and_man_renders() {
    for shell in ["bash", "zsh", "fish"] {
        let script = ok("mem://", &["completions", shell]);
        assert!(script.contains("kvctl"), "{shell}");
        assert!(script.contains("tenant.meta"), "{shell}: typed addresses");
        assert!(script.contains("id="), "{shell}: field names");
        assert!(script.contains("tenant-legacy"), "{shell}: schema names");
    }
    for shell in ["elvish", "powershell"] {
        assert!(
            ok("mem://", &["completions", shell]).contains("kvctl"),
            "{shell}"
        );
    }
    assert_eq!(run("mem://", &["completions", "tcsh"]).code, 2);
    let man = ok("mem://", &["man"]);
    assert!(man.contains(".TH kvctl"), "{man}");
    assert!(man.contains("export"), "{man}");
}

#[test]
fn typos_in_typed_addresses_suggest_the_fix() {
    let err = fails("mem://", &["get", "tenant.mata", "id=1"], 2);
    assert!(err.contains("did you mean tenant.meta?"), "{err}");
    let err = fails("mem://", &["get", "tenant.meta", "idd=1"], 2);
    assert!(err.contains("did you mean id=1?"), "{err}");
    let err = fails("mem://", &["get", "tenat.meta", "id=1"], 2);
    assert!(err.contains(r#"did you mean "tenant"?"#), "{err}");
    let err = fails("mem://", &["put", "tenant.meta", "id=1", "{}"], 2);
    assert!(err.contains("jxt/tenants/1/meta"), "names the key: {err}");
}

#[test]
fn trace_shows_each_store_operation_and_the_timeout_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let url = sled_url(&dir);
    let put = run(&url, &["--trace", "put", "--raw", "cfg/a", "secret-value"]);
    assert_eq!(put.code, 0, "{}", put.stderr);
    for field in [
        "keyplane{",
        "backend=\"sled\"",
        "op=\"put\"",
        "key=cfg/a",
        "revision=1",
        "outcome=\"ok\"",
        "time.busy=",
    ] {
        assert!(put.stderr.contains(field), "{field}: {}", put.stderr);
    }
    assert!(!put.stderr.contains("secret-value"), "{}", put.stderr);
    assert!(!put.stderr.contains('\u{1b}'), "no colours off a terminal");
    let get = run(&url, &["--trace", "get", "cfg/a"]);
    assert_eq!(get.code, 0, "{}", get.stderr);
    assert!(get.stdout.contains("secret-value"));
    assert!(get.stderr.contains("op=\"get\""), "{}", get.stderr);
    assert!(!get.stderr.contains("secret-value"), "{}", get.stderr);
    // Without --trace, nothing about operations.
    let quiet = run(&url, &["get", "cfg/a"]);
    assert_eq!((quiet.code, quiet.stderr.as_str()), (0, ""));
    // The deadline must be a positive number of seconds.
    for bad in ["0", "-1", "soon", "inf"] {
        let arg = format!("--timeout={bad}");
        let run = run(&url, &[&arg, "get", "cfg/a"]);
        assert_eq!(run.code, 2, "{bad}: {}", run.stderr);
        assert!(
            run.stderr.contains("positive number of seconds"),
            "{}",
            run.stderr
        );
    }
    ok(&url, &["--timeout", "0.5", "get", "cfg/a"]);
}

/// After a rotation, `reencrypt` seals every value under the prefix with the new current
/// key; the old key can then go. A ciphertext copied to another key does not open there.
#[test]
fn reencrypt_after_a_rotation_and_copied_ciphertexts_refused() {
    use base64::Engine;
    use keyplane::keyspace::{EncryptionKey, Keyring};
    let b64 = |k: [u8; 32]| base64::engine::general_purpose::STANDARD.encode(k);
    let dir = tempfile::tempdir().unwrap();
    let url = sled_url(&dir);
    let (old_key, new_key) = ([1u8; 32], [2u8; 32]);
    let old = Keyring::new("2025", EncryptionKey::from_bytes(old_key)).unwrap();
    let raw = keyplane_sled_store(&dir);
    for profile in ["p1", "p2"] {
        let key = format!("nxc:pool:alipay:{profile}");
        let sealed = old.encrypt_for(key.as_bytes(), profile.as_bytes()).unwrap();
        raw.put(key.as_bytes(), &sealed).unwrap();
    }
    let write = |name: &str, body: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let both = write(
        "both.json",
        format!(
            r#"{{"current": "2026", "keys": {{"2025": "{}", "2026": "{}"}}}}"#,
            b64(old_key),
            b64(new_key)
        ),
    );
    let only_new = write(
        "new.json",
        format!(r#"{{"keys": {{"2026": "{}"}}}}"#, b64(new_key)),
    );
    // Without a keyring: refused.
    let err = fails(&url, &["reencrypt", "nxc:pool:"], 2);
    assert!(err.contains("--keyring"), "{err}");
    // The new key alone cannot open the old values yet.
    fails(
        &url,
        &["--keyring", &only_new, "get", "nxc:pool:alipay:p1"],
        2,
    );
    let out = ok(&url, &["--keyring", &both, "reencrypt", "nxc:pool:"]);
    assert!(
        out.contains("re-encrypted 2 values with key id 2026"),
        "{out}"
    );
    let again = json(&url, &["--keyring", &both, "reencrypt", "nxc:pool:"]);
    assert_eq!(
        (again["reencrypted"].as_u64(), again["current"].as_u64()),
        (Some(0), Some(2))
    );
    let opened = ok(&url, &["--keyring", &only_new, "get", "nxc:pool:alipay:p2"]);
    assert!(opened.contains("p2"), "{opened}");
    // A ciphertext copied to another key, as a raw copy would: refused, naming the reason.
    let doc = json(&url, &["get", "nxc:pool:alipay:p1"]);
    assert_eq!(doc["encrypted"]["key_id"], "2026", "{doc}");
    let copied = {
        let out = kvctl(&url)
            .args(["export", "nxc:pool:alipay:p1"])
            .output()
            .unwrap();
        let line: Value = serde_json::from_slice(&out.stdout).unwrap();
        base64::engine::general_purpose::STANDARD
            .decode(line["value_base64"].as_str().expect("binary value"))
            .unwrap()
    };
    raw.put(b"nxc:pool:alipay:p3", &copied).unwrap();
    let err = fails(
        &url,
        &["--keyring", &only_new, "get", "nxc:pool:alipay:p3"],
        2,
    );
    assert!(err.contains("another storage key"), "{err}");
}
