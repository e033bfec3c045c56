//! Reconciling: bringing keys that other programs wrote, changed or deleted into the store's
//! metadata, index and event log (`scripts/reconcile.lua` does the work on a batch of keys;
//! this file finds the keys), for [`RedisStore::reconcile`](crate::RedisStore::reconcile),
//! prefix deletes, `get` and the background reconciler.

use super::{Core, prefix_lex_bounds};
use crate::core::decode::{array, byte_list, corrupted, int};
use crate::error::map_error;
use keyplane_contract::Result;
use redis::Value;

/// What one reconcile found and did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// Keys looked at: those `SCAN` returned and those the store's indexes held.
    pub scanned: u64,
    /// Strings another program wrote that the store now tracks (one put event each).
    pub adopted: u64,
    /// Tracked strings another program overwrote (one put event each).
    pub changed: u64,
    /// Tracked strings another program deleted or replaced by another type (one delete
    /// event each).
    pub deleted: u64,
}

impl ReconcileReport {
    fn add(&mut self, other: ReconcileReport) {
        self.scanned += other.scanned;
        self.adopted += other.adopted;
        self.changed += other.changed;
        self.deleted += other.deleted;
    }

    /// Whether anything changed.
    pub fn is_empty(&self) -> bool {
        self.adopted + self.changed + self.deleted == 0
    }
}

/// How a batch of keys is checked.
#[derive(Clone, Copy)]
pub(crate) enum Mode {
    /// Only keys without metadata (what `SCAN` finds that the store may not know).
    Adopt,
    /// Every key against its metadata too (what the indexes hold, what notifications name).
    Full,
}

/// Keys per script run: one run is one revision and blocks Redis while it runs.
const BATCH: usize = 500;

/// Reconciles `keys` in batches of [`BATCH`], each one script run and at most one revision.
pub(crate) async fn reconcile_keys(
    core: &Core,
    keys: &[Vec<u8>],
    mode: Mode,
) -> Result<ReconcileReport> {
    let mut report = ReconcileReport::default();
    let mode: &[u8] = match mode {
        Mode::Adopt => b"a",
        Mode::Full => b"f",
    };
    for chunk in keys.chunks(BATCH) {
        let mut args: Vec<&[u8]> = Vec::with_capacity(chunk.len() + 1);
        args.push(mode);
        args.extend(chunk.iter().map(Vec::as_slice));
        let reply: Value = core
            .run_write(&core.scripts.reconcile, &args, "reconcile")
            .await?;
        let mut parts = array(reply)?.into_iter();
        let mut next = || -> Result<u64> {
            let n = int(parts
                .next()
                .ok_or_else(|| corrupted("a reconcile reply has four numbers"))?)?;
            u64::try_from(n).map_err(|_| corrupted("a negative reconcile count"))
        };
        report.add(ReconcileReport {
            scanned: chunk.len() as u64,
            adopted: next()?,
            changed: next()?,
            deleted: next()?,
        });
    }
    Ok(report)
}

/// Adopts what `SCAN` finds under `prefix` without metadata, and tracks foreign
/// collections there: after it, every string and collection that existed under the prefix
/// for the whole scan is in the store's indexes. Costs one `SCAN` step per
/// `reconcile_scan_count` keys of the whole database (`SCAN ... MATCH` filters after
/// iterating), plus one script run per step that found keys under the prefix.
pub(crate) async fn adopt_prefix(core: &Core, prefix: &[u8]) -> Result<ReconcileReport> {
    let pattern = glob_prefix(prefix);
    let mut report = ReconcileReport::default();
    let mut cursor = b"0".to_vec();
    let mut con = core.con.clone();
    loop {
        let reply: Value = redis::cmd("SCAN")
            .arg(cursor.as_slice())
            .arg("MATCH")
            .arg(pattern.as_slice())
            .arg("COUNT")
            .arg(core.config.reconcile_scan_count)
            .query_async(&mut con)
            .await
            .map_err(|e| map_error("reconcile", e))?;
        let mut parts = array(reply)?.into_iter();
        let (Some(next), Some(keys)) = (parts.next(), parts.next()) else {
            return Err(corrupted("a SCAN reply has a cursor and keys"));
        };
        let keys: Vec<Vec<u8>> = byte_list(keys)?
            .into_iter()
            .filter(|key| !key.starts_with(&core.prefix))
            .collect();
        if !keys.is_empty() {
            report.add(reconcile_keys(core, &keys, Mode::Adopt).await?);
        }
        cursor = crate::core::decode::bytes(next)?;
        if cursor == b"0" {
            return Ok(report);
        }
    }
}

/// Checks every key the store's indexes hold under `prefix` against Redis, page by page.
async fn check_indexed(core: &Core, prefix: &[u8]) -> Result<ReconcileReport> {
    const PAGE: usize = 1000;
    let mut report = ReconcileReport::default();
    let mut con = core.con.clone();
    let (first, max) = prefix_lex_bounds(prefix);
    for index in [core.internal("idx"), core.internal("cidx")] {
        let mut min = first.clone();
        loop {
            let keys: Vec<Vec<u8>> = redis::cmd("ZRANGEBYLEX")
                .arg(index.as_slice())
                .arg(min.as_slice())
                .arg(max.as_slice())
                .arg("LIMIT")
                .arg(0)
                .arg(PAGE)
                .query_async(&mut con)
                .await
                .map_err(|e| map_error("reconcile", e))?;
            let Some(last) = keys.last() else { break };
            min = [b"(".as_slice(), last].concat();
            report.add(reconcile_keys(core, &keys, Mode::Full).await?);
            if keys.len() < PAGE {
                break;
            }
        }
    }
    Ok(report)
}

/// One full pass over `prefix`: adopts what other programs created there, and checks what
/// the store tracks there for foreign changes and deletes.
pub(crate) async fn reconcile_prefix(core: &Core, prefix: &[u8]) -> Result<ReconcileReport> {
    let mut report = adopt_prefix(core, prefix).await?;
    report.add(check_indexed(core, prefix).await?);
    Ok(report)
}

/// What [`RedisStore::reconcile`](crate::RedisStore::reconcile) does: rejects a prefix under
/// the internal prefix, then one full pass over it.
pub(crate) async fn reconcile(core: &Core, prefix: &[u8]) -> Result<ReconcileReport> {
    core.check_key(prefix)?;
    reconcile_prefix(core, prefix).await
}

/// A `SCAN MATCH` pattern for every key starting with `prefix`: the prefix with glob
/// characters escaped, then `*`.
pub(crate) fn glob_prefix(prefix: &[u8]) -> Vec<u8> {
    let mut pattern = Vec::with_capacity(prefix.len() + 1);
    for &b in prefix {
        if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\' | b'^' | b'-') {
            pattern.push(b'\\');
        }
        pattern.push(b);
    }
    pattern.push(b'*');
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_escapes_every_pattern_character() {
        assert_eq!(glob_prefix(b"nxc:map:"), b"nxc:map:*");
        assert_eq!(glob_prefix(b"a*b?[c]\\d"), b"a\\*b\\?\\[c\\]\\\\d*");
        assert_eq!(glob_prefix(b""), b"*");
        assert_eq!(glob_prefix(b"\xff\x00"), b"\xff\x00*");
    }
}
