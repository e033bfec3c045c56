//! The invariant harness (feature `proptest`): DESIGN §4's invariants for segments and keys.
//!
//! Each `verify_*` function runs proptest over the type's strategy and returns the first
//! violated invariant as `Err`; each `assert_*` function panics with it. The invariants, as
//! numbered in the design:
//!
//! 1. round trip;
//! 2. canonical parsing;
//! 3. injective within a template, disjoint across templates;
//! 4. variable segments free of separators, never empty, `.` or `..`;
//! 5. fixed depth, no doubled or trailing separator;
//! 6. prefix isolation;
//! 7. prefix-end correctness (also after `0xFF`);
//! 8. no empty key or prefix;
//! 9. directory/file disjointness unless declared;
//! 10. order preservation where claimed;
//! 11. hash-tag safety.

use crate::keyspace::key::Key;
use crate::keyspace::segment::Separator;
use crate::keyspace::strategies::{KeyStrategy, SegmentStrategy, mutations};
use crate::keyspace::template::Template;
use crate::raw::redis_hash_tag;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Number of cases each property runs (`PROPTEST_CASES` overrides it).
pub const DEFAULT_CASES: u32 = 256;

pub(crate) fn run<S: Strategy>(
    invariant: &str,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) -> Result<(), String> {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&strategy, test)
        .map_err(|e| format!("invariant {invariant}: {e}"))
}

pub(crate) fn ensure(ok: bool, message: impl FnOnce() -> String) -> Result<(), TestCaseError> {
    if ok {
        Ok(())
    } else {
        Err(TestCaseError::fail(message()))
    }
}

/// Checks a segment type: round trip, canonical decoding of mutated encodings, encodings that
/// are never empty, `.`, `..`, and never hold a raw separator, brace or NUL; for each
/// separator.
///
/// # Errors
/// The first violated invariant, with the shrunk failing value.
pub fn verify_segment<T: SegmentStrategy>() -> Result<(), String> {
    for sep in [Separator::Slash, Separator::Colon] {
        run("1 (segment round trip) and 4", T::strategy(), |v| {
            let enc = v.to_segment_string(sep);
            check_segment_text(&enc, sep)?;
            ensure(T::decode(&enc, sep).as_ref() == Ok(&v), || {
                format!(
                    "{v:?} encodes to {enc:?}, which decodes to {:?}",
                    T::decode(&enc, sep)
                )
            })?;
            ensure(T::can_produce(&enc, sep), || {
                format!("can_produce({enc:?}) is false")
            })
        })?;
        let mutated = T::strategy().prop_flat_map(move |v| mutations(v.to_segment_string(sep)));
        run("2 (segment canonical)", mutated, |raw| {
            if let Ok(v) = T::decode(&raw, sep) {
                let enc = v.to_segment_string(sep);
                ensure(enc == raw, || {
                    format!("{raw:?} decodes but re-encodes as {enc:?}")
                })?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Checks that a segment type claiming [`Segment::ORDERED`](crate::keyspace::Segment::ORDERED) sorts its encodings like its
/// values (invariant 10).
///
/// # Errors
/// The first pair whose order differs.
pub fn verify_segment_order<T: SegmentStrategy + Ord>() -> Result<(), String> {
    if !T::ORDERED {
        return Ok(());
    }
    run("10 (order)", (T::strategy(), T::strategy()), |(a, b)| {
        let (ea, eb) = (
            a.to_segment_string(Separator::Slash),
            b.to_segment_string(Separator::Slash),
        );
        ensure(a.cmp(&b) == ea.cmp(&eb), || {
            format!("{a:?} vs {b:?} orders differently from {ea:?} vs {eb:?}")
        })
    })
}

fn check_segment_text(enc: &str, sep: Separator) -> Result<(), TestCaseError> {
    ensure(!matches!(enc, "" | "." | ".."), || {
        format!("segment encoding {enc:?} is empty, `.` or `..`")
    })?;
    ensure(
        !enc.contains(sep.as_char()) && !enc.contains(['{', '}', '\0']),
        || format!("segment encoding {enc:?} holds the separator `{sep}`, a brace or NUL"),
    )
}

/// Checks a key type against invariants 1–8 and 11 (3 within the template; 9 and 3 across
/// templates are checked by [`verify_keyspace`](super::verify_keyspace)).
///
/// # Errors
/// The first violated invariant, with the shrunk failing key(s).
pub fn verify_key<K: KeyStrategy>() -> Result<(), String> {
    let template = K::template();
    run("1, 4, 5, 7, 8, 11 (single key)", K::strategy(), |k| {
        check_single_key(template, &k)
    })?;
    run("3, 6 (pairs)", pair::<K>(), |(a, b)| {
        check_pair(template, &a, &b)
    })?;
    let mutated = K::strategy().prop_flat_map(|k| mutations(k.encode()));
    run("2 (canonical)", mutated, |raw| {
        if let Ok(k) = K::parse(&raw) {
            let enc = k.encode();
            ensure(enc == raw, || {
                format!("{raw:?} parses but re-encodes as {enc:?}")
            })?;
        }
        Ok(())
    })
}

/// Checks that keys sort like their values (invariant 10), for key types whose segments all
/// claim order.
///
/// # Errors
/// The first pair whose order differs.
pub fn verify_key_order<K: KeyStrategy + Ord>() -> Result<(), String> {
    run(
        "10 (key order)",
        (K::strategy(), K::strategy()),
        |(a, b)| {
            let (ea, eb) = (a.encode(), b.encode());
            ensure(a.cmp(&b) == ea.cmp(&eb), || {
                format!("{a:?} vs {b:?} orders differently from {ea:?} vs {eb:?}")
            })
        },
    )
}

/// Panics unless [`verify_key`] passes.
pub fn assert_key_invariants<K: KeyStrategy>() {
    if let Err(e) = verify_key::<K>() {
        panic!("{}: {e}", std::any::type_name::<K>());
    }
}

/// Panics unless [`verify_segment`] passes.
pub fn assert_segment_invariants<T: SegmentStrategy>() {
    if let Err(e) = verify_segment::<T>() {
        panic!("{}: {e}", std::any::type_name::<T>());
    }
}

/// Two keys that often share leading segments: the same key twice, or independent keys.
fn pair<K: KeyStrategy>() -> BoxedStrategy<(K, K)> {
    prop_oneof![
        K::strategy().prop_map(|k| (k.clone(), k)),
        (K::strategy(), K::strategy()),
    ]
    .boxed()
}

/// Invariants of one key's encoding (1, 4, 5, 7, 8, 11).
pub(crate) fn check_single_key<K: Key>(template: &Template, k: &K) -> Result<(), TestCaseError> {
    let enc = k.encode();
    let sep = template.separator();
    ensure(!enc.is_empty(), || format!("{k:?} encodes to an empty key"))?;
    ensure(crate::raw::validate_key(enc.as_bytes()).is_ok(), || {
        format!("{k:?} encodes to {enc:?}, which no store accepts (NUL or too long)")
    })?;
    let mut buffer = String::from("x");
    k.write(&mut buffer);
    ensure(buffer[1..] == enc, || {
        format!("write does not append {enc:?}")
    })?;
    ensure(K::parse(&enc).as_ref() == Ok(k), || {
        format!(
            "{k:?} encodes to {enc:?}, which parses as {:?}",
            K::parse(&enc)
        )
    })?;
    let segments = split(template, &enc)?;
    ensure(segments.len() == template.depth(), || {
        format!(
            "{enc:?} has {} segments, the template {template} has {}",
            segments.len(),
            template.depth()
        )
    })?;
    // Only an old layout's empty literal (a read-only template's doubled separator) is empty.
    ensure(
        segments
            .iter()
            .zip(template.segments())
            .all(|(s, t)| !s.is_empty() || t.literal() == Some("")),
        || format!("{enc:?} has an empty segment (doubled or trailing separator)"),
    )?;
    let captures = template
        .captures_vec(&enc)
        .map_err(|e| TestCaseError::fail(format!("{enc:?} does not match its template: {e}")))?;
    for raw in &captures {
        check_segment_text(raw, sep)?;
    }
    let fields = k.fields();
    let vars: Vec<&str> = template.vars().collect();
    ensure(
        fields.iter().map(|(n, _)| *n).eq(vars.iter().copied())
            && fields
                .iter()
                .map(|(_, v)| v.as_str())
                .eq(captures.iter().copied()),
        || {
            format!(
                "fields() {fields:?} differ from the template's variables {vars:?} = {captures:?}"
            )
        },
    )?;
    check_hash_tag(template, &enc, &segments)?;
    for depth in 1..template.depth() {
        check_prefix_end(&enc, &directory(template, &segments, depth))?;
    }
    Ok(())
}

/// Invariants of two keys of one template (3, 6).
fn check_pair<K: Key>(template: &Template, a: &K, b: &K) -> Result<(), TestCaseError> {
    let (ea, eb) = (a.encode(), b.encode());
    ensure((a == b) == (ea == eb), || {
        format!("{a:?} and {b:?} encode to {ea:?} and {eb:?}: not injective")
    })?;
    let (fa, fb) = (a.fields(), b.fields());
    let sa = split(template, &ea)?;
    split(template, &eb)?;
    for depth in 1..template.depth() {
        let prefix = directory(template, &sa, depth);
        let vars_before = template.segments()[..depth]
            .iter()
            .map(|s| {
                s.parts()
                    .iter()
                    .filter(|p| matches!(p, crate::keyspace::Part::Var(_)))
                    .count()
            })
            .sum::<usize>();
        let same_fields = fa[..vars_before] == fb[..vars_before];
        ensure(eb.starts_with(&prefix) == same_fields, || {
            format!(
                "prefix isolation: {eb:?} {} with {prefix:?}, but its first {depth} segments' fields {:?} {} {:?}",
                if eb.starts_with(&prefix) {
                    "starts"
                } else {
                    "does not start"
                },
                &fb[..vars_before],
                if same_fields { "equal" } else { "differ from" },
                &fa[..vars_before],
            )
        })?;
    }
    Ok(())
}

/// The key's segments, without the leading separator.
pub(crate) fn split<'a>(template: &Template, enc: &'a str) -> Result<Vec<&'a str>, TestCaseError> {
    let sep = template.separator().as_char();
    let body = if template.leading_separator() {
        enc.strip_prefix(sep)
            .ok_or_else(|| TestCaseError::fail(format!("{enc:?} lacks the leading separator")))?
    } else {
        ensure(!enc.starts_with(sep), || {
            format!("{enc:?} starts with a separator")
        })?;
        enc
    };
    Ok(body.split(sep).collect())
}

/// The directory of the first `depth` segments, with the leading and a trailing separator.
pub(crate) fn directory(template: &Template, segments: &[&str], depth: usize) -> String {
    let sep = template.separator().as_str();
    let mut out = String::new();
    if template.leading_separator() {
        out.push_str(sep);
    }
    for s in &segments[..depth] {
        out.push_str(s);
        out.push_str(sep);
    }
    out
}

/// Invariant 7: the key lies in `[prefix, prefix_end(prefix))`, also after a `0xFF` byte.
pub(crate) fn check_prefix_end(enc: &str, prefix: &str) -> Result<(), TestCaseError> {
    ensure(!prefix.is_empty() && enc.starts_with(prefix), || {
        format!("{prefix:?} is empty or not a prefix of {enc:?}")
    })?;
    let end = crate::raw::prefix_end(prefix.as_bytes());
    ensure(end.as_deref().is_some_and(|e| enc.as_bytes() < e), || {
        format!("{enc:?} is not below prefix_end({prefix:?}) = {end:?}")
    })?;
    let mut high = prefix.as_bytes().to_vec();
    high.push(0xff);
    let end = crate::raw::prefix_end(&high);
    let mut inside = high.clone();
    inside.extend_from_slice(enc.as_bytes());
    ensure(
        inside >= high
            && end
                .as_deref()
                .is_some_and(|e| inside.as_slice() < e && e > high.as_slice()),
        || format!("prefix_end of {prefix:?} + 0xFF ({end:?}) does not bound its keys"),
    )
}

/// Invariant 11: no brace unless a hash tag is declared; then Redis hashes exactly the tagged
/// segment.
fn check_hash_tag(template: &Template, enc: &str, segments: &[&str]) -> Result<(), TestCaseError> {
    match template.hash_tag() {
        None => ensure(!enc.contains(['{', '}']), || {
            format!("{enc:?} holds a brace but its template declares no hash tag")
        }),
        Some(index) => {
            let tagged = segments[index];
            let inner = tagged.strip_prefix('{').and_then(|t| t.strip_suffix('}'));
            ensure(
                inner.is_some_and(|i| redis_hash_tag(enc.as_bytes()) == Some(i.as_bytes())),
                || format!("Redis would not hash {enc:?} on its tagged segment {tagged:?}"),
            )
        }
    }
}
