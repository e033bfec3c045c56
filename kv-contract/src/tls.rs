//! [`TlsConfig`]: the one TLS configuration of the network backends (etcd and Redis), and
//! [`TlsPem`], the PEM contents a backend reads from it when it connects.

use crate::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// Client TLS settings of a network backend: PEM files for the CA to trust and an optional
/// client identity, and the name expected in the server's certificate.
///
/// Every field is optional (`#[serde(default)]`), so a config file names only what it sets;
/// unknown fields are refused. It holds paths, never key material, so its `Debug` shows
/// nothing secret; the key is read only when the store connects ([`TlsConfig::read`]).
///
/// ```
/// use keyplane_contract::tls::TlsConfig;
///
/// let tls: TlsConfig =
///     serde_json::from_str(r#"{ "ca_file": "/etc/ssl/kv-ca.pem", "domain": "kv.internal" }"#)
///         .unwrap();
/// assert_eq!(tls.domain.as_deref(), Some("kv.internal"));
/// assert!(tls.cert_file.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM file of the CA that signed the servers' certificates. Default: none (the backend
    /// client's default roots).
    pub ca_file: Option<PathBuf>,
    /// PEM file of the client certificate, for servers that authenticate clients by
    /// certificate. Needs [`key_file`](Self::key_file). Default: none.
    pub cert_file: Option<PathBuf>,
    /// PEM file of the client certificate's private key. Needs
    /// [`cert_file`](Self::cert_file). Default: none.
    pub key_file: Option<PathBuf>,
    /// The name expected in the servers' certificates, when it differs from the host
    /// connected to. Default: none (the host). etcd honours it; the Redis client checks the
    /// URL's host only, so a Redis store refuses a config that sets it rather than ignore it.
    pub domain: Option<String>,
}

impl TlsConfig {
    /// Reads the PEM files the config names.
    ///
    /// ```
    /// use keyplane_contract::tls::TlsConfig;
    ///
    /// let ca = std::env::temp_dir().join(format!("keyplane-doc-ca-{}.pem", std::process::id()));
    /// std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\n").unwrap();
    /// let pem = TlsConfig { ca_file: Some(ca.clone()), ..TlsConfig::default() }.read().unwrap();
    /// assert!(pem.ca_certificate.is_some() && pem.client_identity.is_none());
    /// std::fs::remove_file(ca).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::Config`] when a file cannot be read (naming it), or when a client
    /// certificate is given without its key or a key without its certificate.
    pub fn read(&self) -> Result<TlsPem> {
        let client_identity = match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => Some((
                read_pem(cert, "client certificate")?,
                read_pem(key, "client key")?,
            )),
            (None, None) => None,
            _ => {
                return Err(Error::new(
                    ErrorKind::Config,
                    "a TLS client certificate needs both cert_file and key_file",
                ));
            }
        };
        let ca_certificate = match &self.ca_file {
            Some(ca) => Some(read_pem(ca, "CA certificate")?),
            None => None,
        };
        Ok(TlsPem {
            ca_certificate,
            client_identity,
        })
    }
}

/// The PEM contents of a [`TlsConfig`]'s files, as a backend hands them to its client.
/// Its `Debug` shows which parts are present, never their bytes.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsPem {
    /// The CA certificate(s) to trust.
    pub ca_certificate: Option<Vec<u8>>,
    /// The client certificate and its private key.
    pub client_identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl fmt::Debug for TlsPem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsPem")
            .field(
                "ca_certificate",
                &self.ca_certificate.as_ref().map(Vec::len),
            )
            .field(
                "client_identity",
                &crate::raw::redact_secret(self.client_identity.as_ref()),
            )
            .finish()
    }
}

fn read_pem(path: &Path, what: &'static str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        Error::new(ErrorKind::Config, format!("cannot read the TLS {what}"))
            .with_context("path", path.display())
            .with_source(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_needs_its_key() {
        let half = TlsConfig {
            cert_file: Some("client.pem".into()),
            ..TlsConfig::default()
        };
        assert_eq!(half.read().unwrap_err().kind(), ErrorKind::Config);
    }

    #[test]
    fn a_missing_file_is_a_config_error_naming_it() {
        let missing = TlsConfig {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..TlsConfig::default()
        };
        let err = missing.read().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
    }

    #[test]
    fn debug_never_shows_the_key() {
        let pem = TlsPem {
            ca_certificate: None,
            client_identity: Some((b"CERT".to_vec(), b"SECRET KEY".to_vec())),
        };
        let shown = format!("{pem:?}");
        assert!(
            !shown.contains("SECRET") && !shown.contains("83"),
            "{shown}"
        );
    }
}
