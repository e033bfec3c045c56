//! A running `kvctl ui` for the UI tests, a temporary embedded store for it, and a team's own
//! schema manifest to load into it.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A fresh redb store (the default embedded store) in a temporary directory: the directory
/// and the store URL.
pub fn local_store() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let url = format!("redb://{}", dir.path().join("store.redb").display());
    (dir, url)
}

/// A fresh sled store in a temporary directory: the directory and the store URL.
pub fn sled_store() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let url = format!("sled://{}", dir.path().join("db").display());
    (dir, url)
}

/// A team's own schema as a manifest file in `dir`: what `kvctl schema tenant -o json`
/// prints, named `acme` and with every `jxt/` moved to `acme/`, so that its templates
/// (`acme.meta` is `acme/tenants/{id}/meta`) are known to no bundled schema.
pub fn acme_manifest(dir: &Path) -> PathBuf {
    let printed = super::ok("mem://", &["schema", "tenant", "-o", "json"]);
    let mut doc: Value = serde_json::from_str(&printed.replace("jxt/", "acme/")).expect("JSON");
    assert_eq!(doc["format"], "keyplane-schema/1", "{doc}");
    doc["name"] = Value::from("acme");
    let path = dir.join("acme.json");
    std::fs::write(&path, doc.to_string()).expect("the manifest is written");
    path
}

/// A running `kvctl ui`, killed when dropped.
pub struct Server {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    pub token: String,
}

impl Server {
    pub fn start(url: &str, write: bool) -> Server {
        Server::start_with(url, if write { &["--write"] } else { &[] })
    }

    /// `kvctl --store URL ui ARGS...` (global options such as `--keyring` or `--schema` go
    /// after `ui` too). As with [`kvctl`](super::kvctl), no store, schema manifest or config
    /// file comes from the environment: the server knows what the test gives it, nothing
    /// more.
    pub fn start_with(url: &str, extra: &[&str]) -> Server {
        let mut args = vec!["--store", url, "ui"];
        args.extend_from_slice(extra);
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("kvctl"))
            .args(&args)
            .env_remove("KVCTL_STORE")
            .env_remove("KVCTL_SCHEMA")
            .env_remove("KVCTL_CONFIG")
            .env("XDG_DATA_HOME", "/nonexistent/kvctl-tests")
            .env("XDG_CONFIG_HOME", "/nonexistent/kvctl-tests")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("kvctl ui starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the URL line");
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"));
        let rest = url.strip_prefix("http://").unwrap();
        let (addr, query) = rest.split_once("/?token=").unwrap();
        assert!(addr.starts_with("127.0.0.1:"), "{addr}");
        assert_eq!(query.len(), 64, "a 256-bit token: {query}");
        Server {
            child,
            addr: addr.to_owned(),
            token: query.to_owned(),
        }
    }

    /// Sends a request (with the token unless `token` is false); returns status and body.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        token: bool,
    ) -> (u16, String) {
        let port = self.addr.rsplit(':').next().unwrap().parse().unwrap();
        let headers: &[(&str, &str)] = if token {
            &[("X-Kvctl-Token", self.token.as_str())]
        } else {
            &[]
        };
        let (status, body) =
            keyplane_tests::harness::http_request(port, method, path, headers, body).unwrap();
        (status, String::from_utf8(body).unwrap())
    }

    pub fn get(&self, path: &str) -> Value {
        let (status, body) = self.call("GET", path, None, true);
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// The error text of a failed call, with its status.
    pub fn fails(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
        let (status, text) = self.call(method, path, body, true);
        assert!(status >= 400, "{method} {path}: {status} {text}");
        let error: Value = serde_json::from_str(&text).unwrap();
        (status, error["error"].as_str().unwrap().to_owned())
    }
}

impl Server {
    /// The page's URL, with the token.
    pub fn page_url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.token)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
