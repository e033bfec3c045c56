//! TLS options (feature `tls`) from PEM files.

use crate::config::EtcdTlsConfig;
use etcd_client::{Certificate, Identity, TlsOptions};
use kv_core::{Error, ErrorKind, Result};
use std::path::Path;

fn read(path: &Path, what: &'static str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        Error::new(ErrorKind::Config, format!("cannot read the TLS {what}"))
            .with_context("path", path.display())
            .with_source(e)
    })
}

/// The client TLS options for `cfg`.
///
/// # Errors
/// `Config` when a file cannot be read, or a certificate is given without its key.
pub(crate) fn options(cfg: &EtcdTlsConfig) -> Result<TlsOptions> {
    let mut tls = TlsOptions::new();
    if let Some(ca) = &cfg.ca_file {
        tls = tls.ca_certificate(Certificate::from_pem(read(ca, "CA certificate")?));
    }
    match (&cfg.cert_file, &cfg.key_file) {
        (Some(cert), Some(key)) => {
            tls = tls.identity(Identity::from_pem(
                read(cert, "client certificate")?,
                read(key, "client key")?,
            ));
        }
        (None, None) => {}
        _ => {
            return Err(Error::new(
                ErrorKind::Config,
                "a TLS client certificate needs both cert_file and key_file",
            ));
        }
    }
    if let Some(domain) = &cfg.domain {
        tls = tls.domain_name(domain.clone());
    }
    Ok(tls)
}
