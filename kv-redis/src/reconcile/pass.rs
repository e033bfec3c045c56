//! A reconcile pass over a prefix: `SCAN` for the keys other programs created there, then
//! the store's indexes for the keys it tracks there, each batch through the reconcile script
//! (see [`script`](super::script)). Prefix deletes run the first half before they act.

use crate::core::decode::{array, byte_list, corrupted};
use crate::core::{Core, prefix_lex_bounds};
use crate::error::map_error;
use crate::reconcile::script::{Mode, ReconcileReport, reconcile_keys};
use keyplane_contract::Result;
use redis::Value;

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
    let (min, max) = prefix_lex_bounds(prefix);
    let mut keys = Vec::new();
    let mut plain = IndexPages::new(core, min.clone(), max.clone());
    while plain.next_into(&mut keys).await? {
        if keys.len() >= PAGE {
            report.add(reconcile_keys(core, &std::mem::take(&mut keys), Mode::Full).await?);
        }
    }
    if !keys.is_empty() {
        report.add(reconcile_keys(core, &std::mem::take(&mut keys), Mode::Full).await?);
    }
    let mut con = core.con.clone();
    let index = core.internal("cidx");
    let mut min = min;
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
    Ok(report)
}

/// The keys of the plain index between two lex specs, read a bucket at a time (see
/// `core/scripts/index.lua`). Each step finds the bucket of the position reached, so that a
/// bucket cut or joined between two steps neither hides nor repeats a key.
struct IndexPages<'a> {
    core: &'a Core,
    con: crate::con::Con,
    /// Where the next step starts (a lex spec), and where the range ends.
    min: Vec<u8>,
    max: Vec<u8>,
    done: bool,
}

impl<'a> IndexPages<'a> {
    fn new(core: &'a Core, min: Vec<u8>, max: Vec<u8>) -> Self {
        IndexPages {
            con: core.con.clone(),
            core,
            min,
            max,
            done: false,
        }
    }

    async fn query<T: redis::FromRedisValue>(&mut self, cmd: &redis::Cmd) -> Result<T> {
        cmd.query_async(&mut self.con)
            .await
            .map_err(|e| map_error("reconcile", e))
    }

    /// Appends the next keys to `out`; false once the range is done.
    async fn next_into(&mut self, out: &mut Vec<Vec<u8>>) -> Result<bool> {
        const STEP: usize = 256;
        if self.done {
            return Ok(false);
        }
        let dir = self.core.internal("ixd");
        let position = [b"[".as_slice(), &self.min[1..]].concat();
        let found: Vec<Vec<u8>> = self
            .query(
                redis::cmd("ZREVRANGEBYLEX")
                    .arg(dir.as_slice())
                    .arg(position.as_slice())
                    .arg("-")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(1),
            )
            .await?;
        // No directory: an index of the layout before buckets, one sorted set, if any.
        let (bucket, bound) = match found.into_iter().next() {
            Some(bound) => (
                [self.core.internal("ix:"), bound.clone()].concat(),
                Some(bound),
            ),
            None => (self.core.internal("idx"), None),
        };
        let keys: Vec<Vec<u8>> = self
            .query(
                redis::cmd("ZRANGEBYLEX")
                    .arg(bucket.as_slice())
                    .arg(self.min.as_slice())
                    .arg(self.max.as_slice())
                    .arg("LIMIT")
                    .arg(0)
                    .arg(STEP),
            )
            .await?;
        let full = keys.len() == STEP;
        if let Some(last) = keys.last() {
            self.min = [b"(".as_slice(), last].concat();
        }
        out.extend(keys);
        if full {
            return Ok(true);
        }
        // The bucket is done: on to the next one that may hold keys of the range.
        let next: Vec<Vec<u8>> = match bound {
            Some(bound) => {
                let after = [b"(".as_slice(), &bound].concat();
                self.query(
                    redis::cmd("ZRANGEBYLEX")
                        .arg(dir.as_slice())
                        .arg(after.as_slice())
                        .arg(self.max.as_slice())
                        .arg("LIMIT")
                        .arg(0)
                        .arg(1),
                )
                .await?
            }
            None => Vec::new(),
        };
        match next.into_iter().next() {
            Some(next) => self.min = [b"[".as_slice(), &next].concat(),
            None => self.done = true,
        }
        Ok(true)
    }
}

/// One full pass over `prefix`: adopts what other programs created there, and checks what
/// the store tracks there for foreign changes and deletes.
pub(crate) async fn reconcile_prefix(core: &Core, prefix: &[u8]) -> Result<ReconcileReport> {
    let mut report = adopt_prefix(core, prefix).await?;
    report.add(check_indexed(core, prefix).await?);
    Ok(report)
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
