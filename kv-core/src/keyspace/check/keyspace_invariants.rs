//! The invariant harness for prefixes and whole keyspaces (feature `proptest`).

use super::checker::check_keyspace;
use super::invariants::{check_prefix_end, directory, ensure, run, split};
use crate::keyspace::info::TemplateInfo;
use crate::keyspace::key::{Key, ListPrefix};
use crate::keyspace::strategies::{KeyStrategy, KeyspaceStrategy, PrefixStrategy, mutations};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// Checks a prefix type against its listed key type: a prefix is never empty and always ends
/// with the separator (8); it parses back (1); the directory of every key at the prefix's
/// depth is a prefix of this type that contains the key; a key starts with a prefix exactly
/// when it lies in that directory (6); `prefix_end` bounds it (7).
///
/// # Errors
/// The first violated invariant, with the shrunk failing values.
pub fn verify_prefix<P>() -> Result<(), String>
where
    P: PrefixStrategy + ListPrefix,
    P::Key: KeyStrategy,
{
    let template = P::template();
    let key_template = <P::Key as Key>::template();
    let sep = template.separator().as_char();
    run("1, 8 (prefix)", P::strategy(), |p| {
        let enc = p.encode();
        ensure(!enc.is_empty() && enc.ends_with(sep), || {
            format!("prefix {p:?} encodes to {enc:?}, which does not end with `{sep}`")
        })?;
        ensure(
            template.is_read_only() || !enc.contains(&format!("{sep}{sep}")),
            || format!("{enc:?} has a doubled separator"),
        )?;
        ensure(P::parse(&enc).as_ref() == Ok(&p), || {
            format!(
                "{p:?} encodes to {enc:?}, which parses as {:?}",
                P::parse(&enc)
            )
        })
    })?;
    let depth = template.depth();
    run(
        "6 (directory of a key)",
        <P::Key as KeyStrategy>::strategy(),
        |k| {
            let enc = k.encode();
            let dir = directory(key_template, &split(key_template, &enc)?, depth);
            let p = P::parse(&dir).map_err(|e| {
                TestCaseError::fail(format!(
                    "the directory {dir:?} of {enc:?} is no prefix: {e}"
                ))
            })?;
            ensure(p.encode() == dir && p.contains(&enc), || {
                format!("prefix {p:?} ({:?}) does not contain {enc:?}", p.encode())
            })?;
            check_prefix_end(&enc, &dir)
        },
    )?;
    let pairs = (P::strategy(), <P::Key as KeyStrategy>::strategy());
    run("6 (isolation)", pairs, |(p, k)| {
        let (pe, ke) = (p.encode(), k.encode());
        let dir = directory(key_template, &split(key_template, &ke)?, depth);
        ensure(ke.starts_with(&pe) == (dir == pe), || {
            format!("{ke:?} (directory {dir:?}) and prefix {pe:?} disagree on membership")
        })?;
        ensure(p.contains(&ke) == (dir == pe), || {
            format!("{p:?}.contains({ke:?}) is wrong")
        })
    })
}

/// Checks a whole keyspace: the [schema checker](super::check) finds nothing; every key
/// parses back into the same variant and matches exactly one template (3); whatever raw key
/// parses re-encodes to itself (2); a key of one template is a directory of another's keys
/// only where declared (9).
///
/// # Errors
/// The checker's findings, or the first violated invariant.
pub fn verify_keyspace<S: KeyspaceStrategy>() -> Result<(), String> {
    let findings = check_keyspace::<S>();
    if !findings.is_empty() {
        let list: Vec<String> = findings.iter().map(ToString::to_string).collect();
        return Err(format!("schema checker: {}", list.join("; ")));
    }
    let templates = S::templates();
    run("3 (one template per key)", S::strategy(), |k| {
        let enc = k.encode();
        ensure(S::parse(&enc).as_ref() == Ok(&k), || {
            format!(
                "{k:?} encodes to {enc:?}, which parses as {:?}",
                S::parse(&enc)
            )
        })?;
        let matching: Vec<&str> = templates
            .iter()
            .filter(|t| can_match(t, &enc))
            .map(|t| t.template.source())
            .collect();
        ensure(matching.len() == 1, || {
            format!("{enc:?} matches templates {matching:?}")
        })
    })?;
    run(
        "2 (canonical)",
        S::strategy().prop_flat_map(|k| mutations(k.encode())),
        |raw| {
            if let Ok(k) = S::parse(&raw) {
                let enc = k.encode();
                ensure(enc == raw, || {
                    format!("{raw:?} parses but re-encodes as {enc:?}")
                })?;
            }
            Ok(())
        },
    )?;
    run(
        "9 (directory/file)",
        (S::strategy(), S::strategy()),
        |(a, b)| {
            let (ea, eb) = (a.encode(), b.encode());
            let dir = match templates
                .iter()
                .find(|t| t.template.source() == a.template_source())
            {
                Some(t) => format!("{ea}{}", t.template.separator()),
                None => {
                    return Err(TestCaseError::fail(format!(
                        "{a:?}'s template is not listed"
                    )));
                }
            };
            let declared = templates
                .iter()
                .find(|t| t.template.source() == a.template_source())
                .is_some_and(|t| t.directory_of.contains(&b.template_source()));
            ensure(!eb.starts_with(&dir) || declared, || {
                format!(
                    "{ea:?} ({}) is a directory of {eb:?} ({}), undeclared",
                    a.template_source(),
                    b.template_source()
                )
            })
        },
    )
}

/// Whether `raw` has the shape of template `t` and each variable's type can produce its text.
fn can_match(t: &TemplateInfo, raw: &str) -> bool {
    let sep = t.template.separator();
    t.template.captures_vec(raw).is_ok_and(|caps| {
        t.template
            .vars()
            .zip(caps)
            .all(|(name, text)| t.field(name).is_none_or(|f| f.can_produce(text, sep)))
    })
}

/// Panics unless [`verify_keyspace`] passes.
pub fn assert_keyspace_invariants<S: KeyspaceStrategy>() {
    if let Err(e) = verify_keyspace::<S>() {
        panic!("{}: {e}", std::any::type_name::<S>());
    }
}

/// Panics unless [`verify_prefix`] passes.
pub fn assert_prefix_invariants<P>()
where
    P: PrefixStrategy + ListPrefix,
    P::Key: KeyStrategy,
{
    if let Err(e) = verify_prefix::<P>() {
        panic!("{}: {e}", std::any::type_name::<P>());
    }
}
