//! One file per command.

pub(crate) mod balancer;
pub(crate) mod get;
pub(crate) mod lint;
pub(crate) mod ls;
pub(crate) mod migrate;
pub(crate) mod parse;
pub(crate) mod put;
pub(crate) mod rm;
pub(crate) mod schema;
pub(crate) mod watch;

use crate::error::CliResult;
use crate::output::Format;
use keyplane_core::{RangeOptions, Store};
use std::sync::Arc;

/// What every command gets: the store URL (opened on demand) and the output format.
pub(crate) struct Ctx {
    pub(crate) url: String,
    pub(crate) format: Format,
}

impl Ctx {
    /// Opens the store.
    pub(crate) async fn store(&self) -> CliResult<Arc<dyn Store>> {
        crate::store::open(&self.url).await
    }

    /// The store, ready to list `prefix` (see [`crate::store::open_for_listing`]).
    pub(crate) async fn store_for_listing(&self, prefix: &str) -> CliResult<Arc<dyn Store>> {
        crate::store::open_for_listing(&self.url, prefix).await
    }
}

/// Every entry under `prefix`, page by page, with a progress spinner on a terminal.
pub(crate) async fn scan(
    store: &dyn Store,
    prefix: &str,
    keys_only: bool,
) -> CliResult<Vec<keyplane_core::Entry>> {
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
