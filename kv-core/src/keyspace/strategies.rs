//! Proptest strategies for segments, keys and keyspaces (feature `proptest`).
//!
//! Generators are adversarial: values that share numeric prefixes (`1`, `10`, `11`), extreme
//! integers, IPv6 literals, maximum lengths, and text mixing separators, `%`, braces, `.`,
//! `..`, NUL, `ÿ` (U+00FF), multibyte UTF-8 and emoji wherever a type's rule lets them through.

use super::key::{Key, Prefix};
use super::keyspace::Keyspace;
use super::segment::{Host, HostPort, Padded, PaddedInt, Segment, TextPolicy, TextSegment};
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

/// A segment type that can generate its own values, like proptest's `Arbitrary`.
///
/// Implemented for every built-in and for every [`text_segment!`](crate::text_segment) type;
/// implement it for your own [`Segment`]s.
#[diagnostic::on_unimplemented(
    message = "the segment `{Self}` has no proptest strategy",
    label = "a derived strategy needs one for each field",
    note = "implement `SegmentStrategy` for `{Self}`, or declare it with `text_segment!` (which implements it)",
    note = "a key whose segment has no strategy keeps compiling: it just has no `KeyStrategy`; write one by hand and mark the derive `#[kv(no_strategy)]` to fuzz it"
)]
pub trait SegmentStrategy: Segment {
    /// Values of the type, adversarial ones included.
    fn strategy() -> BoxedStrategy<Self>;
}

/// A key type that can generate its own values; the invariant harness needs it.
///
/// A typical impl combines the fields' [`segment`] strategies:
/// `(segment::<u64>(), segment::<Name>()).prop_map(|(id, name)| MyKey { id, name }).boxed()`.
pub trait KeyStrategy: Key {
    /// Keys of the template.
    fn strategy() -> BoxedStrategy<Self>;
}

/// A prefix type that can generate its own values.
pub trait PrefixStrategy: Prefix {
    /// Prefixes of the template.
    fn strategy() -> BoxedStrategy<Self>;
}

/// A keyspace that can generate keys of all its templates.
pub trait KeyspaceStrategy: Keyspace {
    /// Keys of every template (each template must be reachable).
    fn strategy() -> BoxedStrategy<Self>;
}

/// The strategy of segment type `T`.
pub fn segment<T: SegmentStrategy>() -> BoxedStrategy<T> {
    T::strategy()
}

/// Characters and pieces that break naive keys: both separators, `%` and escapes, braces,
/// dots, NUL and controls, U+00FF, multibyte UTF-8, emoji, spaces and digits.
pub const ADVERSARIAL_PIECES: &[&str] = &[
    "/",
    ":",
    "%",
    "%2F",
    "%3A",
    "%25",
    "{",
    "}",
    "{}",
    ".",
    "..",
    "\0",
    "\u{1}",
    "\n",
    "\u{7f}",
    "ÿ",
    "\u{ff}",
    "é",
    "默认租户",
    "😀",
    " ",
    "+",
    "?",
    "#",
    "&",
    "=",
    "@",
    "~",
    "1",
    "10",
    "11",
    "0",
    "a",
    "Z",
    "_",
    "-",
];

macro_rules! int_strategy {
    ($($t:ty),*) => {$(
        impl SegmentStrategy for $t {
            fn strategy() -> BoxedStrategy<Self> {
                prop_oneof![
                    prop::sample::select(vec![0 as $t, 1, 10, 11, 100, 101, <$t>::MAX, <$t>::MIN]),
                    (0 as $t)..12,
                    any::<$t>(),
                ]
                .boxed()
            }
        }
    )*};
}

int_strategy!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize
);

impl<const N: usize, T: PaddedInt> SegmentStrategy for Padded<N, T> {
    fn strategy() -> BoxedStrategy<Self> {
        let limit = 10u128.checked_pow(N.min(38) as u32).unwrap_or(u128::MAX);
        prop_oneof![
            prop::sample::select(vec![0u128, 1, 10, 11, limit - 1]),
            0..limit,
        ]
        .prop_filter_map("fits the type and the width", |v| {
            Padded::new(T::parse_digits(&v.to_string())?).ok()
        })
        .boxed()
    }
}

impl SegmentStrategy for uuid::Uuid {
    fn strategy() -> BoxedStrategy<Self> {
        prop_oneof![
            Just(uuid::Uuid::nil()),
            Just(uuid::Uuid::max()),
            any::<[u8; 16]>().prop_map(uuid::Uuid::from_bytes),
        ]
        .boxed()
    }
}

impl SegmentStrategy for Ipv4Addr {
    fn strategy() -> BoxedStrategy<Self> {
        any::<[u8; 4]>().prop_map(Ipv4Addr::from).boxed()
    }
}

impl SegmentStrategy for HostPort {
    fn strategy() -> BoxedStrategy<Self> {
        let v6 = prop_oneof![
            Just(Ipv6Addr::LOCALHOST),
            Just(Ipv6Addr::UNSPECIFIED),
            any::<[u16; 8]>().prop_map(Ipv6Addr::from),
            any::<[u8; 4]>().prop_map(|b| Ipv4Addr::from(b).to_ipv6_mapped()),
        ];
        let host = prop_oneof![
            any::<[u8; 4]>().prop_map(|b| Host::Ipv4(Ipv4Addr::from(b))),
            v6.prop_map(Host::Ipv6),
            "[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?(\\.[a-z]([a-z0-9-]{0,5}[a-z0-9])?){0,3}"
                .prop_map(Host::Dns),
            Just(Host::Dns(format!("{}.{}", "a".repeat(63), "b".repeat(63)))),
        ];
        let port = prop_oneof![Just(1u16), Just(65535u16), 1u16..=65535];
        (host, port)
            .prop_filter_map("valid host:port", |(h, p)| HostPort::new(h, p).ok())
            .boxed()
    }
}

impl<T: TextSegment + Segment> SegmentStrategy for T {
    fn strategy() -> BoxedStrategy<Self> {
        let rule = T::rule();
        let max = rule.max_len();
        let mut pieces: Vec<String> = ADVERSARIAL_PIECES.iter().map(|p| p.to_string()).collect();
        if let Some(charset) = rule.charset() {
            pieces.extend(charset.sample().into_iter().map(String::from));
        }
        // Pieces the rule allows on their own, to build the maximum-length value from.
        let allowed: Vec<String> = pieces
            .iter()
            .filter(|p| p.chars().count() == 1 && rule.validate(p).is_ok())
            .cloned()
            .collect();
        let longest = allowed
            .first()
            .map(|p| p.repeat(max / p.len().max(1)))
            .unwrap_or_default();
        let mixed = prop::collection::vec(prop::sample::select(pieces), 1..8)
            .prop_map(|parts| parts.concat());
        let strict = if allowed.is_empty() {
            mixed.clone().boxed()
        } else {
            prop::collection::vec(prop::sample::select(allowed), 1..=max.clamp(1, 24))
                .prop_map(|parts| parts.concat())
                .boxed()
        };
        let weight_mixed = if rule.policy() == TextPolicy::Escape {
            3
        } else {
            1
        };
        prop_oneof![
            weight_mixed => mixed,
            3 => strict,
            1 => Just(longest),
        ]
        .prop_filter_map("valid for the rule", |v| {
            T::rule().validate(&v).ok().map(|()| T::from_validated(v))
        })
        .boxed()
    }
}

/// Raw strings that look like keys: the encoding of `base` mutated by inserting, replacing
/// or dropping adversarial pieces, the classic non-canonical spellings of a number (a
/// leading `0` or `+`), or entirely random text. Used to check that parsing is canonical
/// (whatever parses re-encodes to the same bytes).
pub fn mutations(base: String) -> BoxedStrategy<String> {
    let piece = prop::sample::select(ADVERSARIAL_PIECES);
    let len = base.len();
    prop_oneof![
        (0..=len, piece.clone()).prop_map({
            let base = base.clone();
            move |(at, p)| splice(&base, at, at, p)
        }),
        (0..=len, 0..=len, piece).prop_map({
            let base = base.clone();
            move |(a, b, p)| splice(&base, a.min(b), a.max(b), p)
        }),
        (0..=len).prop_map({
            let base = base.clone();
            move |at| base.get(..at).unwrap_or(&base).to_owned()
        }),
        Just(base.to_uppercase()),
        Just(format!("0{base}")),
        Just(format!("+{base}")),
        Just(format!("{base}/")),
        Just(format!("/{base}")),
        prop::collection::vec(prop::sample::select(ADVERSARIAL_PIECES), 0..12)
            .prop_map(|p| p.concat()),
    ]
    .boxed()
}

fn splice(base: &str, start: usize, end: usize, piece: &str) -> String {
    let start = floor_boundary(base, start);
    let end = floor_boundary(base, end);
    format!("{}{piece}{}", &base[..start], &base[end..])
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
