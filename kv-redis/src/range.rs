//! Paged ranges over the ordered index (ZRANGEBYLEX, never SCAN).

use crate::decode::{array, byte_list, corrupted, entry, int, opt_bytes};
use crate::store::Inner;
use kv_core::{Continuation, RangeOptions, RangeResult, Result};
use redis::Value;

pub(crate) async fn range(inner: &Inner, opts: RangeOptions) -> Result<RangeResult> {
    opts.validate()?;
    inner.check_range(&opts.range)?;
    let (start, end) = opts.effective_bounds();
    let min = [b"[".as_slice(), &start].concat();
    let max = match &end {
        Some(end) => [b"(".as_slice(), end].concat(),
        None => b"+".to_vec(),
    };
    if end.as_ref().is_some_and(|end| *end <= start) {
        return Ok(RangeResult {
            entries: Vec::new(),
            count: 0,
            next: None,
            revision: inner.revision().await?,
        });
    }
    let mode: &[u8] = if opts.count_only {
        b"c"
    } else if opts.keys_only {
        b"k"
    } else {
        b"v"
    };
    // One key more than the page, to learn whether another page follows.
    let fetch = opts
        .limit
        .map_or(-1, |l| l.saturating_add(1) as i64)
        .to_string();
    let reply: Value = inner
        .run(
            &inner.scripts.range,
            &[&min, &max, fetch.as_bytes(), mode],
            "range",
        )
        .await?;
    let mut parts = array(reply)?.into_iter();
    let revision = int(parts.next().ok_or_else(|| corrupted("empty range reply"))?)?;
    if opts.count_only {
        let count = int(parts
            .next()
            .ok_or_else(|| corrupted("a count reply has a count"))?)?;
        return Ok(RangeResult {
            entries: Vec::new(),
            count: count as u64,
            next: None,
            revision,
        });
    }
    let (Some(keys), Some(metas), Some(values)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(corrupted("a range reply has keys, metadata and values"));
    };
    let keys = byte_list(keys)?;
    let metas = array(metas)?;
    let mut values = array(values)?.into_iter();
    let mut entries = Vec::with_capacity(keys.len());
    for (key, meta) in keys.into_iter().zip(metas) {
        let value = if opts.keys_only {
            Vec::new()
        } else {
            opt_bytes(values.next().unwrap_or(Value::Nil))?.unwrap_or_default()
        };
        let meta = opt_bytes(meta)?.ok_or_else(|| corrupted("an indexed key has no metadata"))?;
        entries.push(entry(key, value, &meta)?);
    }
    let mut next = None;
    if let Some(limit) = opts.limit
        && entries.len() > limit
    {
        entries.truncate(limit);
        next = entries.last().map(|e| Continuation::after_key(&e.key));
    }
    Ok(RangeResult {
        count: entries.len() as u64,
        entries,
        next,
        revision,
    })
}
