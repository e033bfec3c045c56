//! Where `kvctl` finds schema manifests: `--schema FILE` (repeatable), then `KVCTL_SCHEMA`
//! (files separated as in `PATH`), then the config file's `schemas`.
//!
//! The config file is TOML: `KVCTL_CONFIG` names it, else `$XDG_CONFIG_HOME/kvctl/config.toml`,
//! else `~/.config/kvctl/config.toml`; no file is no config. `schemas = ["acme.json"]`:
//! relative paths are taken from the config file's folder.

use crate::error::{CliError, CliResult};
use std::path::{Path, PathBuf};

/// The config file's contents.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Manifest files, loaded on every run.
    #[serde(default)]
    schemas: Vec<PathBuf>,
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
    let Some((path, required)) = config_path() else {
        return Ok(Vec::new());
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {
            return Ok(Vec::new());
        }
        Err(e) => {
            return Err(CliError::invalid(format!(
                "config file {}: cannot read it: {e}",
                path.display()
            )));
        }
    };
    let config: Config = toml::from_str(&text).map_err(|e| {
        CliError::invalid(format!(
            "config file {}: expected TOML such as `schemas = [\"acme.json\"]`: {}",
            path.display(),
            e.message()
        ))
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    Ok(config
        .schemas
        .into_iter()
        .map(|p| if p.is_relative() { dir.join(p) } else { p })
        .collect())
}
