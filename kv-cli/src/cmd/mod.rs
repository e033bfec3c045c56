//! One file per command.

pub(crate) mod balancer;
pub(crate) mod dump;
pub(crate) mod elect;
pub(crate) mod get;
pub(crate) mod guard;
pub(crate) mod help;
pub(crate) mod lease;
pub(crate) mod lint;
pub(crate) mod lock;
pub(crate) mod ls;
pub(crate) mod migrate;
pub(crate) mod parse;
pub(crate) mod put;
pub(crate) mod reencrypt;
pub(crate) mod rm;
pub(crate) mod schema;
pub(crate) mod status;
pub(crate) mod txn;
pub(crate) mod txn_parse;
pub(crate) mod watch;

use crate::error::CliResult;
use crate::output::Format;
use keyplane::{RangeOptions, Store};
use std::sync::Arc;

/// What every command gets: the store URL (opened on demand) and the output format.
pub(crate) struct Ctx {
    pub(crate) url: String,
    pub(crate) format: Format,
    /// The keyring file (`--keyring`), read when an encrypted value is shown.
    pub(crate) keyring: Option<String>,
}

impl Ctx {
    /// Opens the command's store (refusing the default one while only an old sled store is
    /// at its place, see [`crate::store::refuse_default_over_old_sled`]).
    pub(crate) async fn store(&self) -> CliResult<Arc<dyn Store>> {
        crate::store::refuse_default_over_old_sled(&self.url)?;
        crate::store::open(&self.url).await
    }

    /// The keyring of `--keyring`, if one was given.
    pub(crate) fn keyring(&self) -> CliResult<Option<keyplane::keyspace::Keyring>> {
        self.keyring
            .as_deref()
            .map(crate::secrets::load)
            .transpose()
    }

    /// The store, ready to list `prefix` (see [`crate::store::open_for_listing`]).
    pub(crate) async fn store_for_listing(&self, prefix: &str) -> CliResult<Arc<dyn Store>> {
        crate::store::refuse_default_over_old_sled(&self.url)?;
        crate::store::open_for_listing(&self.url, prefix).await
    }
}

/// Checks a `--rev` argument.
///
/// # Errors
/// Exit code 2 for a revision below 1.
pub(crate) fn check_revision(revision: Option<i64>) -> crate::error::CliResult<()> {
    match revision {
        Some(n) if n < 1 => Err(crate::error::CliError::invalid(format!(
            "--rev {n}: revisions start at 1"
        ))),
        _ => Ok(()),
    }
}

/// Every entry under `prefix`, page by page, with a progress spinner on a terminal.
pub(crate) async fn scan(
    store: &dyn Store,
    prefix: &str,
    keys_only: bool,
) -> CliResult<Vec<keyplane::Entry>> {
    const PAGE: usize = 1000;
    let bar = crate::output::progress("keys");
    let mut entries = Vec::new();
    let mut opts = RangeOptions::prefix(prefix.as_bytes()).limit(PAGE);
    if keys_only {
        opts = opts.keys_only();
    }
    loop {
        let page = store.range(opts.clone()).await?;
        bar.inc(page.entries.len() as u64);
        entries.extend(page.entries);
        match page.next {
            Some(next) => opts = opts.after(next),
            None => break,
        }
    }
    bar.finish_and_clear();
    Ok(entries)
}
