//! The operations of a model-test sequence and their proptest strategies.
//!
//! Keys, values and prefixes are short byte strings over an adversarial alphabet (shared
//! prefixes `1`, `10`, `11`, the separator `/`, `0xFF`, rarely a reserved NUL) relative to a
//! per-sequence random root. Leases and revisions are referred to by position (the n-th lease
//! granted, the n-th write revision of the sequence), so the same sequence means the same thing
//! on the store and on the model, and still does after shrinking.

use super::bytes::{Bytes, value};
use super::collections::{Coll, coll};
use keyplane_core::CompareOp;
use proptest::prelude::*;
use std::fmt;

/// The n-th lease granted in the sequence (modulo the number granted so far; no lease when
/// none has been granted yet).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct LeaseRef(pub u8);

impl fmt::Debug for LeaseRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lease#{}", self.0)
    }
}

/// A revision given to a compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RevRef {
    /// Zero (the revision of an absent key).
    Zero,
    /// The revision of the n-th put-bearing write of the sequence, counted from the latest
    /// (modulo their number; zero when there is none).
    Put(u8),
    /// A revision after every other.
    Max,
}

/// What a compare looks at.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// `version op n`.
    Version(i64),
    /// `mod_revision op rev`.
    ModRevision(RevRef),
    /// `create_revision op rev`.
    CreateRevision(RevRef),
    /// `value op bytes`.
    Value(Bytes),
    /// `lease ==/!= lease` (`None`: no lease).
    Lease(Option<LeaseRef>),
    /// How many times a member, field or item is in the collection at the key (`s`, `m` or
    /// `l`: the key's kind), `op count`.
    Member(u8, Bytes, i64),
    /// The value of a map field, `op bytes` (false for an absent field).
    Field(Bytes, Bytes),
    /// The size of the collection at the key (`s`, `m` or `l`), `op n`.
    Size(u8, i64),
}

/// One compare of a model transaction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cmp {
    /// The key compared.
    pub key: Bytes,
    /// The comparison.
    pub op: CompareOp,
    /// The attribute.
    pub target: Target,
}

/// One op of a model transaction branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnStep {
    /// Read a key.
    Get(Bytes),
    /// Write a key, optionally with a lease.
    Put(Bytes, Bytes, Option<LeaseRef>),
    /// Delete a key.
    Delete(Bytes),
    /// Delete a prefix.
    DeletePrefix(Bytes),
    /// A collection op.
    Coll(Coll),
}

/// Which keys a model range reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Span {
    /// Keys under a prefix (relative to the root; the empty prefix is the whole root).
    Prefix(Bytes),
    /// Keys in `[start, end)`, possibly reversed (an error).
    Interval(Bytes, Bytes),
}

/// One operation of a sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `Store::put`.
    Put {
        /// The key.
        key: Bytes,
        /// The value.
        value: Bytes,
        /// The lease to attach.
        lease: Option<LeaseRef>,
        /// Ask for the previous entry.
        prev: bool,
    },
    /// `Store::get`.
    Get(Bytes),
    /// `Store::range`, read page by page when `limit` is set.
    Range {
        /// The keys read.
        span: Span,
        /// The page size.
        limit: Option<usize>,
        /// Leave values empty.
        keys_only: bool,
        /// Count only (never with a limit).
        count_only: bool,
    },
    /// `Store::delete`.
    Delete(Bytes),
    /// `Store::delete_prefix` (relative to the root, so never the empty prefix).
    DeletePrefix(Bytes),
    /// `Store::txn`.
    Txn {
        /// The compares.
        when: Vec<Cmp>,
        /// The success branch.
        then: Vec<TxnStep>,
        /// The failure branch.
        otherwise: Vec<TxnStep>,
    },
    /// `Store::lease_grant` of a long TTL (the sequence never waits for an expiry).
    Grant,
    /// `Store::lease_revoke`.
    Revoke(LeaseRef),
    /// `Store::lease_keep_alive`.
    KeepAlive(LeaseRef),
    /// `Store::lease_time_to_live` (its keys).
    TimeToLive(LeaseRef),
    /// `Store::collection`.
    Coll(Coll),
}

const TOKENS: [&[u8]; 7] = [b"1", b"10", b"11", b"/", b"\xff", b"a/", b"\xff\xff"];

fn token() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        40 => proptest::sample::select(&TOKENS[..]).prop_map(<[u8]>::to_vec),
        1 => Just(b"\0".to_vec()),
    ]
}

fn tokens(n: usize) -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(token(), n).prop_map(|parts| Bytes(parts.concat()))
}

/// A key suffix: one to three tokens, mostly short so that ops often meet on one key.
pub fn key() -> impl Strategy<Value = Bytes> {
    prop_oneof![5 => tokens(1), 4 => tokens(2), 1 => tokens(3)]
}

/// A prefix suffix: zero to two tokens.
pub fn prefix() -> impl Strategy<Value = Bytes> {
    prop_oneof![1 => tokens(0), 4 => tokens(1), 2 => tokens(2)]
}

fn lease_ref() -> impl Strategy<Value = LeaseRef> {
    (0u8..4).prop_map(LeaseRef)
}

fn rev_ref() -> impl Strategy<Value = RevRef> {
    prop_oneof![
        1 => Just(RevRef::Zero),
        4 => (0u8..6).prop_map(RevRef::Put),
        1 => Just(RevRef::Max),
    ]
}

fn compare_op() -> impl Strategy<Value = CompareOp> {
    proptest::sample::select(vec![
        CompareOp::Equal,
        CompareOp::NotEqual,
        CompareOp::Greater,
        CompareOp::Less,
    ])
}

fn cmp() -> impl Strategy<Value = Cmp> {
    let ordered = (
        key(),
        compare_op(),
        prop_oneof![
            (0i64..4).prop_map(Target::Version),
            rev_ref().prop_map(Target::ModRevision),
            rev_ref().prop_map(Target::CreateRevision),
            value().prop_map(Target::Value),
        ],
    )
        .prop_map(|(key, op, target)| Cmp { key, op, target });
    // Lease ids are compared for (in)equality only: their order differs between backends.
    let lease = (
        key(),
        proptest::sample::select(vec![CompareOp::Equal, CompareOp::NotEqual]),
        proptest::option::of(lease_ref()),
    )
        .prop_map(|(key, op, lease)| Cmp {
            key,
            op,
            target: Target::Lease(lease),
        });
    // `exists` and `absent` are version compares with 0.
    let presence = (key(), any::<bool>()).prop_map(|(key, exists)| Cmp {
        key,
        op: if exists {
            CompareOp::Greater
        } else {
            CompareOp::Equal
        },
        target: Target::Version(0),
    });
    // Collection compares name the model's collection keys (`cs<n>`, `cm<n>`, `cl<n>`).
    let kind = || proptest::sample::select(vec![b's', b'm', b'l']);
    let collection_key = |kind: u8, n: u8| Bytes(format!("c{}{n}", kind as char).into_bytes());
    let member = (kind(), 0u8..2, compare_op(), value(), 0i64..3).prop_map(
        move |(kind, n, op, member, count)| Cmp {
            key: collection_key(kind, n),
            op,
            target: Target::Member(kind, member, count),
        },
    );
    let field = (0u8..2, compare_op(), value(), value()).prop_map(move |(n, op, field, v)| Cmp {
        key: collection_key(b'm', n),
        op,
        target: Target::Field(field, v),
    });
    let size = (kind(), 0u8..2, compare_op(), 0i64..4).prop_map(move |(kind, n, op, size)| Cmp {
        key: collection_key(kind, n),
        op,
        target: Target::Size(kind, size),
    });
    prop_oneof![4 => ordered, 1 => lease, 2 => presence, 1 => member, 1 => field, 1 => size]
}

fn step() -> impl Strategy<Value = TxnStep> {
    prop_oneof![
        2 => key().prop_map(TxnStep::Get),
        4 => (key(), value(), proptest::option::weighted(0.2, lease_ref()))
            .prop_map(|(k, v, l)| TxnStep::Put(k, v, l)),
        2 => key().prop_map(TxnStep::Delete),
        1 => prefix().prop_map(TxnStep::DeletePrefix),
        2 => coll().prop_map(TxnStep::Coll),
    ]
}

fn span() -> impl Strategy<Value = Span> {
    prop_oneof![
        3 => prefix().prop_map(Span::Prefix),
        2 => (key(), key()).prop_map(|(a, b)| Span::Interval(a, b)),
    ]
}

fn range() -> impl Strategy<Value = Op> {
    (
        span(),
        proptest::option::of(1usize..4),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(span, limit, keys_only, count)| Op::Range {
            span,
            count_only: count && limit.is_none(),
            limit,
            keys_only,
        })
}

/// One operation.
pub fn op() -> impl Strategy<Value = Op> {
    let branch = || proptest::collection::vec(step(), 0..4);
    prop_oneof![
        8 => (key(), value(), proptest::option::weighted(0.2, lease_ref()), any::<bool>())
            .prop_map(|(key, value, lease, prev)| Op::Put { key, value, lease, prev }),
        3 => key().prop_map(Op::Get),
        4 => range(),
        3 => key().prop_map(Op::Delete),
        2 => prefix().prop_map(Op::DeletePrefix),
        6 => (proptest::collection::vec(cmp(), 0..3), branch(), branch())
            .prop_map(|(when, then, otherwise)| Op::Txn { when, then, otherwise }),
        1 => Just(Op::Grant),
        1 => lease_ref().prop_map(Op::Revoke),
        1 => lease_ref().prop_map(Op::KeepAlive),
        1 => lease_ref().prop_map(Op::TimeToLive),
        5 => coll().prop_map(Op::Coll),
    ]
}

/// A sequence of up to `max` operations.
pub fn sequence(max: usize) -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..=max)
}
