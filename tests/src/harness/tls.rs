//! Servers that only speak TLS and require a client certificate: an etcd member with
//! `--client-cert-auth` and a `redis-server` with `tls-port` and `tls-auth-clients yes`,
//! with certificates made for the test (rcgen): a CA, a server certificate for
//! `localhost`/`127.0.0.1`, a client certificate, and a second, unrelated CA.

use super::process::{ServerProcess, exchange, free_port, require_binary, wait_ready};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// PEM files of one test PKI, in a temporary directory.
pub struct TestCerts {
    dir: tempfile::TempDir,
}

impl TestCerts {
    /// Makes a CA, a server and a client certificate signed by it, and a second CA that
    /// signed nothing.
    ///
    /// # Panics
    /// When a certificate cannot be made or written.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("kv-tls-")
            .tempdir()
            .expect("temp dir");
        let write = |name: &str, pem: String| {
            std::fs::write(dir.path().join(name), pem).expect("write a PEM file");
        };
        let (ca, ca_key) = authority("keyplane test CA");
        let (other_ca, _) = authority("another CA");
        write("ca.pem", ca.pem());
        write("other-ca.pem", other_ca.pem());
        for (name, purpose) in [
            ("server", ExtendedKeyUsagePurpose::ServerAuth),
            ("client", ExtendedKeyUsagePurpose::ClientAuth),
        ] {
            let key = KeyPair::generate().expect("a key pair");
            let mut params =
                CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                    .expect("certificate parameters");
            params
                .distinguished_name
                .push(DnType::CommonName, format!("keyplane {name}"));
            params.extended_key_usages = vec![purpose];
            params.key_usages = vec![
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::KeyEncipherment,
            ];
            let cert = params
                .signed_by(&key, &ca, &ca_key)
                .expect("sign a certificate");
            write(&format!("{name}.pem"), cert.pem());
            write(&format!("{name}-key.pem"), key.serialize_pem());
        }
        TestCerts { dir }
    }

    /// The path of one of the files: `ca.pem`, `other-ca.pem`, `server.pem`,
    /// `server-key.pem`, `client.pem`, `client-key.pem`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

impl Default for TestCerts {
    fn default() -> Self {
        Self::new()
    }
}

fn authority(name: &str) -> (rcgen::Certificate, KeyPair) {
    let key = KeyPair::generate().expect("a key pair");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key).expect("self-sign the CA");
    (cert, key)
}

/// A single etcd member serving clients over TLS only, requiring a certificate signed by
/// the test CA. Its health is read over a plain metrics listener.
pub struct TlsEtcd {
    _dir: tempfile::TempDir,
    port: u16,
    _process: ServerProcess,
}

impl TlsEtcd {
    /// Starts the member. `None` (after a SKIP line) when `etcd` is missing and servers are
    /// not required.
    ///
    /// # Panics
    /// When it does not become healthy.
    pub fn start(certs: &TestCerts) -> Option<Self> {
        let binary = require_binary("etcd", "etcd-server")?;
        let dir = tempfile::Builder::new()
            .prefix("kv-etcd-tls-")
            .tempdir()
            .expect("temp dir");
        let (port, peer, metrics) = (free_port(), free_port(), free_port());
        let client_url = format!("https://127.0.0.1:{port}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let mut cmd = Command::new(binary);
        cmd.args(["--name", "tls"])
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--listen-client-urls", &client_url])
            .args(["--advertise-client-urls", &client_url])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("tls={peer_url}")])
            .args([
                "--listen-metrics-urls",
                &format!("http://127.0.0.1:{metrics}"),
            ])
            .arg("--cert-file")
            .arg(certs.path("server.pem"))
            .arg("--key-file")
            .arg(certs.path("server-key.pem"))
            .arg("--trusted-ca-file")
            .arg(certs.path("ca.pem"))
            .arg("--client-cert-auth")
            .args(["--logger", "zap", "--log-outputs", "stderr"])
            .args(["--log-level", "warn"]);
        let process = launch(cmd, dir.path(), "etcd", || {
            exchange(metrics, b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                .contains("\"health\":\"true\"")
        });
        Some(TlsEtcd {
            _dir: dir,
            port,
            _process: process,
        })
    }

    /// The client endpoint, `127.0.0.1:PORT` (reached over HTTPS).
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

/// A `redis-server` whose clients must use TLS with a certificate signed by the test CA.
/// Its plain port answers the readiness probe only.
pub struct TlsRedis {
    _dir: tempfile::TempDir,
    port: u16,
    _process: ServerProcess,
}

impl TlsRedis {
    /// Starts the server. `None` (after a SKIP line) when `redis-server` is missing and
    /// servers are not required.
    ///
    /// # Panics
    /// When it does not start (also when the server was built without TLS).
    pub fn start(certs: &TestCerts) -> Option<Self> {
        let binary = require_binary("redis-server", "redis-server")?;
        let dir = tempfile::Builder::new()
            .prefix("kv-redis-tls-")
            .tempdir()
            .expect("temp dir");
        let (port, plain) = (free_port(), free_port());
        let mut cmd = Command::new(binary);
        cmd.args(["--port", &plain.to_string()])
            .args(["--tls-port", &port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .arg("--tls-cert-file")
            .arg(certs.path("server.pem"))
            .arg("--tls-key-file")
            .arg(certs.path("server-key.pem"))
            .arg("--tls-ca-cert-file")
            .arg(certs.path("ca.pem"))
            .args(["--tls-auth-clients", "yes"]);
        let process = launch(cmd, dir.path(), "redis", || {
            exchange(plain, b"PING\r\n").starts_with("+PONG\r\n")
        });
        Some(TlsRedis {
            _dir: dir,
            port,
            _process: process,
        })
    }

    /// The server's TLS URL, `rediss://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.port)
    }
}

fn launch(cmd: Command, dir: &Path, name: &str, ready: impl FnMut() -> bool) -> ServerProcess {
    let log = dir.join(format!("{name}.log"));
    let mut process = ServerProcess::spawn(cmd, &log, dir).expect("spawn the server");
    if let Err(e) = wait_ready(&mut process, Duration::from_secs(30), ready) {
        panic!("{name} with TLS did not start: {e}");
    }
    process
}
