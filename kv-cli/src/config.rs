//! The config file, and where `kvctl` finds schema manifests: `--schema FILE` (repeatable),
//! then `KVCTL_SCHEMA` (files separated as in `PATH`), then the config file's `schemas`.
//!
//! The config file is TOML: `KVCTL_CONFIG` names it, else `$XDG_CONFIG_HOME/kvctl/config.toml`,
//! else `~/.config/kvctl/config.toml`; no file is no config. `schemas = ["acme.json"]`:
//! relative paths are taken from the config file's folder. `[stores.NAME]` tables name
//! stores (`--store NAME`), `default_store` picks one when `--store` is not given.

use crate::error::{CliError, CliResult};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The config file's contents.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    /// Manifest files, loaded on every run.
    #[serde(default)]
    schemas: Vec<PathBuf>,
    /// The store used when `--store` is not given: a name of `stores`, or a URL.
    pub(crate) default_store: Option<String>,
    /// Named stores, chosen with `--store NAME`.
    #[serde(default)]
    pub(crate) stores: BTreeMap<String, StoreEntry>,
}

/// A named store: its URL and the connection options the flags also give (a flag given on
/// the command line wins over the entry's value). No password: it comes from
/// `KVCTL_PASSWORD` or the terminal, never from a file.
#[derive(serde::Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoreEntry {
    /// The store URL.
    pub(crate) url: String,
    /// The CA certificate file that signed the server's (`--cacert`).
    pub(crate) cacert: Option<PathBuf>,
    /// The client certificate file (`--cert`).
    pub(crate) cert: Option<PathBuf>,
    /// The client certificate's private key file (`--key`).
    pub(crate) key: Option<PathBuf>,
    /// The user to authenticate as (`--user`).
    pub(crate) user: Option<String>,
    /// How long connecting may take, with its unit: `3s` (`--connect-timeout`).
    pub(crate) connect_timeout: Option<String>,
}

/// A config file that was read: its path and contents.
pub(crate) struct Loaded {
    /// Where it was read from, for messages and relative paths.
    pub(crate) path: PathBuf,
    /// What it says.
    pub(crate) config: Config,
}

impl Loaded {
    /// `path` taken from the config file's folder when it is relative.
    pub(crate) fn resolve(&self, path: &Path) -> PathBuf {
        if path.is_relative() {
            self.path.parent().unwrap_or(Path::new(".")).join(path)
        } else {
            path.to_owned()
        }
    }
}

/// The manifest files to load, each once, in order: the flags', the environment's, the
/// config file's.
///
/// # Errors
/// Exit code 2 when the config file cannot be read or is not a config.
pub(crate) fn schema_files(flags: &[String]) -> CliResult<Vec<String>> {
    let mut files: Vec<PathBuf> = flags.iter().map(PathBuf::from).collect();
    if let Some(env) = std::env::var_os("KVCTL_SCHEMA").filter(|v| !v.is_empty()) {
        files.extend(std::env::split_paths(&env).filter(|p| !p.as_os_str().is_empty()));
    }
    files.extend(config_schemas()?);
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for file in files {
        // One file named twice (a flag and the config file) is loaded once.
        let identity = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
        if !seen.contains(&identity) {
            seen.push(identity);
            out.push(file.display().to_string());
        }
    }
    Ok(out)
}

/// The config file's path: `KVCTL_CONFIG` (which must exist), else the default (which may
/// not).
fn config_path() -> Option<(PathBuf, bool)> {
    if let Some(path) = std::env::var_os("KVCTL_CONFIG").filter(|v| !v.is_empty()) {
        return Some((PathBuf::from(path), true));
    }
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".config"),
    };
    Some((base.join("kvctl").join("config.toml"), false))
}

fn config_schemas() -> CliResult<Vec<PathBuf>> {
    let Some(loaded) = load()? else {
        return Ok(Vec::new());
    };
    Ok(loaded
        .config
        .schemas
        .iter()
        .map(|p| loaded.resolve(p))
        .collect())
}

/// Reads the config file, if there is one.
///
/// # Errors
/// Exit code 2, naming the file, when it cannot be read or is not a config (an unknown key
/// among them).
pub(crate) fn load() -> CliResult<Option<Loaded>> {
    let Some((path, required)) = config_path() else {
        return Ok(None);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {
            return Ok(None);
        }
        Err(e) => {
            return Err(CliError::invalid(format!(
                "config file {}: cannot read it: {e}",
                path.display()
            )));
        }
    };
    let config: Config = toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .map(|span| format!(", line {}", text[..span.start].matches('\n').count() + 1))
            .unwrap_or_default();
        CliError::invalid(format!(
            "config file {}{line}: {} (it takes `schemas = [\"acme.json\"]`, \
             `default_store = \"NAME\"` and `[stores.NAME]` tables of `url`, `cacert`, `cert`, \
             `key`, `user` and `connect_timeout`)",
            path.display(),
            e.message()
        ))
    })?;
    Ok(Some(Loaded { path, config }))
}
