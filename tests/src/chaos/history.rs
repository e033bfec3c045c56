//! What the clients did and saw: operations with invoke and completion times and an outcome,
//! watch segments with their batches, and faults, recorded in memory or printed one line per
//! record (the sled child process prints, its parent parses).

use std::sync::Mutex;
use std::time::Instant;

/// Nanoseconds since the recorder's epoch.
pub type Nanos = u64;

/// The completion time of an operation whose outcome is unknown: it may take effect at any
/// time after its invocation.
pub const NEVER: Nanos = u64::MAX;

/// One operation a client invoked. Keys, values and members are ASCII without spaces, commas
/// or `|` (the line format relies on it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `get(key)`.
    Get {
        /// The key.
        key: String,
    },
    /// `put(key, value)`.
    Put {
        /// The key.
        key: String,
        /// The value, unique in the run.
        value: String,
    },
    /// One transaction putting the same value to two keys.
    PutPair {
        /// The two keys.
        keys: [String; 2],
        /// The value, unique in the run.
        value: String,
    },
    /// `delete(key)`.
    Delete {
        /// The key.
        key: String,
    },
    /// A transaction: if the key's value is `expect` (`None`: the key is absent), put `value`.
    /// With `revision`, the compare is on the mod revision the client read with `expect`
    /// (0 for an absent key) instead of on the value.
    Cas {
        /// The key.
        key: String,
        /// The value expected, `None` for absent.
        expect: Option<String>,
        /// The mod revision compared instead of the value, when set.
        revision: Option<i64>,
        /// The value written, unique in the run.
        value: String,
    },
    /// A set add, as a one-op transaction.
    SetAdd {
        /// The set's key.
        key: String,
        /// The member.
        member: String,
    },
    /// A set remove, as a one-op transaction.
    SetRemove {
        /// The set's key.
        key: String,
        /// The member.
        member: String,
    },
    /// A set membership read.
    SetContains {
        /// The set's key.
        key: String,
        /// The member.
        member: String,
    },
    /// A read of all members.
    SetMembers {
        /// The set's key.
        key: String,
    },
    /// Grant a lease of `ttl_ms`, then put `value` at `key` attached to it.
    LeasePut {
        /// The key, written once in the run.
        key: String,
        /// The value.
        value: String,
        /// The TTL asked for.
        ttl_ms: u64,
    },
}

/// What a successful operation answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ret {
    /// A get: the value and mod revision, or nothing.
    Got(Option<(String, i64)>),
    /// A put (or pair): the write's revision.
    Written(i64),
    /// A delete: whether the key existed, and the write's revision (the current revision
    /// when it did not exist).
    Deleted(bool, i64),
    /// A compare-and-set: whether it succeeded, and the response's revision.
    Cas(bool, i64),
    /// A set write: whether it changed the set, and the response's revision.
    Changed(bool, i64),
    /// A set membership read.
    Contains(bool),
    /// A set's members, ascending.
    Members(Vec<String>),
    /// A leased put: the lease and the write's revision.
    Leased(i64, i64),
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It returned this answer.
    Ok(Ret),
    /// It certainly did not take effect (refused before it was sent, or a definite error).
    Fail(String),
    /// It may or may not have taken effect (a timeout, a lost connection).
    Unknown(String),
}

/// One operation with its times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    /// Unique in the run.
    pub id: u64,
    /// The client that ran it.
    pub client: u32,
    /// What was asked.
    pub call: Call,
    /// No later than the request left the client.
    pub invoke: Nanos,
    /// No earlier than the answer arrived; [`NEVER`] while unknown.
    pub complete: Nanos,
    /// How it ended.
    pub outcome: Outcome,
}

/// One record of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// An operation was invoked.
    Invoke {
        /// The operation's id.
        id: u64,
        /// The client.
        client: u32,
        /// When.
        at: Nanos,
        /// What.
        call: Call,
    },
    /// An operation completed (an invocation without completion is unknown).
    Complete {
        /// The operation's id.
        id: u64,
        /// When.
        at: Nanos,
        /// How.
        outcome: Outcome,
    },
    /// A watch was opened.
    Open {
        /// The segment's id, unique in the run.
        segment: u32,
        /// Whether this is the main watch (resumed after every failure) or a watch opened
        /// from a revision the main watch delivered (a bookmark).
        main: bool,
        /// The start revision.
        start: i64,
        /// When.
        at: Nanos,
    },
    /// A watch delivered a batch.
    Batch {
        /// The segment.
        segment: u32,
        /// When it was received.
        at: Nanos,
        /// Its revision.
        revision: i64,
        /// Its events, in the form of [`event_text`](super::watch::event_text).
        events: Vec<String>,
    },
    /// A watch ended with an error (or ended without one).
    End {
        /// The segment.
        segment: u32,
        /// When.
        at: Nanos,
        /// Why.
        reason: String,
    },
    /// A fault was injected.
    Fault {
        /// When.
        at: Nanos,
        /// What.
        what: String,
    },
}

impl Record {
    /// Whether the record's time is a completion (an upper bound of when it happened) rather
    /// than an invocation (a lower bound).
    pub fn is_completion(&self) -> bool {
        matches!(
            self,
            Record::Complete { .. } | Record::Batch { .. } | Record::End { .. }
        )
    }

    /// The record's time.
    pub fn at_mut(&mut self) -> &mut Nanos {
        match self {
            Record::Invoke { at, .. }
            | Record::Complete { at, .. }
            | Record::Open { at, .. }
            | Record::Batch { at, .. }
            | Record::End { at, .. }
            | Record::Fault { at, .. } => at,
        }
    }
}

/// Collects records: kept in memory, or printed to stdout one line each (a process that may
/// be killed at any moment: a line cut by the kill is not a record).
pub struct Recorder {
    epoch: Instant,
    print: bool,
    records: Mutex<Vec<Record>>,
}

impl Recorder {
    /// A recorder keeping records in memory, with its epoch now.
    pub fn new() -> Self {
        Recorder {
            epoch: Instant::now(),
            print: false,
            records: Mutex::new(Vec::new()),
        }
    }

    /// A recorder printing each record to stdout, with its epoch at `epoch`.
    pub fn printing(epoch: Instant) -> Self {
        Recorder {
            epoch,
            print: true,
            records: Mutex::new(Vec::new()),
        }
    }

    /// Nanoseconds since the epoch.
    pub fn now(&self) -> Nanos {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(NEVER - 1)
    }

    /// Records `record`.
    pub fn record(&self, record: Record) {
        if self.print {
            // One `println!` is one write of a whole line under stdout's lock.
            println!("{record}");
        } else {
            self.records
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(record);
        }
    }

    /// Records an invocation now.
    pub fn invoke(&self, id: u64, client: u32, call: &Call) {
        let at = self.now();
        self.record(Record::Invoke {
            id,
            client,
            at,
            call: call.clone(),
        });
    }

    /// Records a completion now.
    pub fn complete(&self, id: u64, outcome: Outcome) {
        let at = self.now();
        self.record(Record::Complete { id, at, outcome });
    }

    /// Records a fault now.
    pub fn fault(&self, what: impl Into<String>) {
        let at = self.now();
        self.record(Record::Fault {
            at,
            what: what.into(),
        });
    }

    /// Adds records made elsewhere (a child process's, already on this epoch).
    pub fn extend(&self, records: impl IntoIterator<Item = Record>) {
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(records);
    }

    /// Every record kept so far.
    pub fn records(&self) -> Vec<Record> {
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

/// Builds the operations from the records: an invocation without completion is unknown.
pub fn operations(records: &[Record]) -> Vec<Op> {
    let mut ops: Vec<Op> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for record in records {
        if let Record::Invoke {
            id,
            client,
            at,
            call,
        } = record
        {
            index.insert(*id, ops.len());
            ops.push(Op {
                id: *id,
                client: *client,
                call: call.clone(),
                invoke: *at,
                complete: NEVER,
                outcome: Outcome::Unknown("no answer (the client was killed)".into()),
            });
        }
    }
    for record in records {
        if let Record::Complete { id, at, outcome } = record
            && let Some(&i) = index.get(id)
        {
            ops[i].outcome = outcome.clone();
            ops[i].complete = if matches!(outcome, Outcome::Unknown(_)) {
                NEVER
            } else {
                *at
            };
        }
    }
    ops
}

impl Ret {
    /// Whether the operation wrote (created a revision).
    pub fn wrote(&self) -> bool {
        match self {
            Ret::Written(_) | Ret::Leased(..) => true,
            Ret::Deleted(changed, _) | Ret::Cas(changed, _) | Ret::Changed(changed, _) => *changed,
            Ret::Got(_) | Ret::Contains(_) | Ret::Members(_) => false,
        }
    }
}

impl Call {
    /// The keys the call touches.
    pub fn keys(&self) -> Vec<&str> {
        match self {
            Call::PutPair { keys, .. } => vec![&keys[0], &keys[1]],
            Call::Get { key }
            | Call::Put { key, .. }
            | Call::Delete { key }
            | Call::Cas { key, .. }
            | Call::SetAdd { key, .. }
            | Call::SetRemove { key, .. }
            | Call::SetContains { key, .. }
            | Call::SetMembers { key }
            | Call::LeasePut { key, .. } => vec![key],
        }
    }

    /// Whether the call may write.
    pub fn is_write(&self) -> bool {
        !matches!(
            self,
            Call::Get { .. } | Call::SetContains { .. } | Call::SetMembers { .. }
        )
    }
}
