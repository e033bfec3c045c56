//! The clients and the watchers of a run: random operations on a small key space, each
//! recorded with its times and outcome, and watches over the run's root.

use super::check::Layout;
use super::history::{Call, Outcome, Record, Recorder, Ret};
use super::watch::{ENDED_SILENTLY, batch_record};
use futures::StreamExt;
use keyplane_core::{
    CollectionOp, CollectionResult, Compare, CompareOp, Error, ErrorKind, OpResult, PutOptions,
    Store, Txn, TxnOp, WatchOptions,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the clients of a run do.
#[derive(Clone)]
pub struct Workload {
    /// The keys.
    pub layout: Layout,
    /// The TTL of the leases clients grant.
    pub lease_ttl: Duration,
    /// Each client waits up to this long (uniformly drawn) between operations.
    pub pace: Duration,
    /// A client gives up waiting for an answer after this long (the outcome is then
    /// unknown for a write).
    pub op_timeout: Duration,
}

/// How a failed call ended: certainly not applied, or unknown for a write that may have
/// reached the store.
pub fn failure(error: &Error, write: bool) -> Outcome {
    let definite = matches!(
        error.kind(),
        ErrorKind::InvalidKey
            | ErrorKind::InvalidValue
            | ErrorKind::InvalidArgument
            | ErrorKind::TxnTooLarge
            | ErrorKind::TxnConflict
            | ErrorKind::LeaseNotFound
            | ErrorKind::WrongType
            | ErrorKind::Unsupported
            | ErrorKind::ReadOnly
            | ErrorKind::Unauthorized
            | ErrorKind::Config
    );
    if !write || error.is_unapplied() || definite {
        Outcome::Fail(error.to_string())
    } else {
        Outcome::Unknown(error.to_string())
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn unexpected(what: impl std::fmt::Debug) -> Error {
    Error::internal(format!("unexpected answer {what:?}"))
}

/// Runs `call` on `store`.
pub async fn execute(store: &dyn Store, call: &Call) -> Result<Ret, Error> {
    match call {
        Call::Get { key } => {
            let entry = store.get(key.as_bytes()).await?;
            Ok(Ret::Got(entry.map(|e| (text(&e.value), e.mod_revision))))
        }
        Call::Put { key, value } => {
            let r = store
                .put(key.as_bytes(), value.as_bytes(), PutOptions::default())
                .await?;
            Ok(Ret::Written(r.revision))
        }
        Call::PutPair { keys, value } => {
            let txn =
                Txn::new().and_then([TxnOp::put(&keys[0], value), TxnOp::put(&keys[1], value)]);
            Ok(Ret::Written(store.txn(txn).await?.revision))
        }
        Call::Delete { key } => {
            let r = store.delete(key.as_bytes()).await?;
            Ok(Ret::Deleted(r.existed(), r.revision))
        }
        Call::Cas {
            key,
            expect,
            revision,
            value,
        } => {
            let compare = match (revision, expect) {
                (Some(r), _) => Compare::mod_revision(key, CompareOp::Equal, *r),
                (None, Some(v)) => Compare::value(key, CompareOp::Equal, v),
                (None, None) => Compare::absent(key),
            };
            let txn = Txn::new()
                .when([compare])
                .and_then([TxnOp::put(key, value)]);
            let resp = store.txn(txn).await?;
            Ok(Ret::Cas(resp.succeeded, resp.revision))
        }
        Call::SetAdd { key, member } | Call::SetRemove { key, member } => {
            let (key, member) = (key.as_bytes().to_vec(), member.as_bytes().to_vec());
            let op = if matches!(call, Call::SetAdd { .. }) {
                CollectionOp::SetAdd { key, member }
            } else {
                CollectionOp::SetRemove { key, member }
            };
            let resp = store
                .txn(Txn::new().and_then([TxnOp::Collection(op)]))
                .await?;
            match resp.results.first() {
                Some(OpResult::Collection(CollectionResult::Changed(c))) => {
                    Ok(Ret::Changed(*c, resp.revision))
                }
                other => Err(unexpected(other)),
            }
        }
        Call::SetContains { key, member } => {
            let op = CollectionOp::SetContains {
                key: key.as_bytes().to_vec(),
                member: member.as_bytes().to_vec(),
            };
            match store.collection(op).await? {
                CollectionResult::Contains(c) => Ok(Ret::Contains(c)),
                other => Err(unexpected(other)),
            }
        }
        Call::SetMembers { key } => {
            let op = CollectionOp::SetMembers {
                key: key.as_bytes().to_vec(),
            };
            match store.collection(op).await? {
                CollectionResult::Members(m) => {
                    Ok(Ret::Members(m.iter().map(|m| text(m)).collect()))
                }
                other => Err(unexpected(other)),
            }
        }
        Call::LeasePut { key, value, ttl_ms } => {
            let lease = store.lease_grant(Duration::from_millis(*ttl_ms)).await?;
            let r = store
                .put(
                    key.as_bytes(),
                    value.as_bytes(),
                    PutOptions::default().lease(lease.id),
                )
                .await?;
            Ok(Ret::Leased(lease.id.0, r.revision))
        }
    }
}

/// What one client remembers to make its next operations meaningful.
struct ClientState {
    id: u32,
    seq: u32,
    rng: StdRng,
    /// The last (value, mod revision) this client read of each register.
    seen: HashMap<usize, Option<(String, i64)>>,
    /// Its latest leased keys.
    leased: VecDeque<String>,
}

impl ClientState {
    fn value(&mut self) -> String {
        self.seq += 1;
        format!("{}.{}", self.id, self.seq)
    }

    fn next_call(&mut self, w: &Workload) -> Call {
        let l = &w.layout;
        let r = self.rng.random_range(0..l.registers.len());
        let key = l.registers[r].clone();
        let set = l.sets[self.rng.random_range(0..l.sets.len())].clone();
        let member = l.members[self.rng.random_range(0..l.members.len())].clone();
        match self.rng.random_range(0..100) {
            0..25 => Call::Get { key },
            25..43 => Call::Put {
                key,
                value: self.value(),
            },
            43..48 => Call::Delete { key },
            48..63 => {
                let seen = self.seen.get(&r).cloned().flatten();
                let by_revision = self.rng.random_bool(0.5);
                Call::Cas {
                    key,
                    revision: by_revision.then(|| seen.as_ref().map_or(0, |(_, m)| *m)),
                    expect: seen.map(|(v, _)| v),
                    value: self.value(),
                }
            }
            63..68 => {
                let mut other = self.rng.random_range(0..l.registers.len() - 1);
                if other >= r {
                    other += 1;
                }
                Call::PutPair {
                    keys: [key, l.registers[other].clone()],
                    value: self.value(),
                }
            }
            68..76 => Call::SetAdd { key: set, member },
            76..83 => Call::SetRemove { key: set, member },
            83..88 => Call::SetContains { key: set, member },
            88..92 => Call::SetMembers { key: set },
            92..96 if !self.leased.is_empty() => {
                let i = self.rng.random_range(0..self.leased.len());
                Call::Get {
                    key: self.leased[i].clone(),
                }
            }
            _ => {
                let value = self.value();
                let key = format!("{}{value}", l.leases);
                self.leased.push_back(key.clone());
                if self.leased.len() > 4 {
                    self.leased.pop_front();
                }
                Call::LeasePut {
                    key,
                    value,
                    ttl_ms: u64::try_from(w.lease_ttl.as_millis()).unwrap_or(u64::MAX),
                }
            }
        }
    }

    fn learn(&mut self, w: &Workload, call: &Call, outcome: &Outcome) {
        if let (Call::Get { key }, Outcome::Ok(Ret::Got(seen))) = (call, outcome)
            && let Some(r) = w.layout.registers.iter().position(|k| k == key)
        {
            self.seen.insert(r, seen.clone());
        }
    }
}

/// One client: random operations until `until`, each recorded. Returns how many it ran.
pub async fn client(
    store: Arc<dyn Store>,
    recorder: Arc<Recorder>,
    workload: Arc<Workload>,
    id: u32,
    seed: u64,
    until: Instant,
) -> u64 {
    let mut state = ClientState {
        id,
        seq: 0,
        rng: StdRng::seed_from_u64(seed),
        seen: HashMap::new(),
        leased: VecDeque::new(),
    };
    let mut n = 0;
    while Instant::now() < until {
        let call = state.next_call(&workload);
        let op_id = (u64::from(id) << 32) | n;
        n += 1;
        recorder.invoke(op_id, id, &call);
        let run = execute(&*store, &call);
        let outcome = match tokio::time::timeout(workload.op_timeout, run).await {
            Ok(Ok(ret)) => Outcome::Ok(ret),
            Ok(Err(e)) => failure(&e, call.is_write()),
            Err(_) if call.is_write() => Outcome::Unknown("the client stopped waiting".into()),
            Err(_) => Outcome::Fail("the client stopped waiting".into()),
        };
        state.learn(&workload, &call, &outcome);
        recorder.complete(op_id, outcome);
        if !workload.pace.is_zero() {
            let pause = state.rng.random_range(Duration::ZERO..workload.pace);
            tokio::time::sleep(pause).await;
        }
    }
    n
}

/// What the watchers of a run share.
pub struct Watchers {
    /// The revision the main watch resumes from.
    pub next: AtomicI64,
    /// Once set (non-zero), the main watch stops after delivering this revision.
    pub target: AtomicI64,
    /// Stops the bookmark watcher.
    pub stop: AtomicBool,
    /// Recent revisions the main watch delivered, to open bookmarks from.
    recent: Mutex<VecDeque<i64>>,
    segments: AtomicU32,
}

impl Watchers {
    /// Watchers whose main watch starts at `start`; segment ids from `first_segment`.
    pub fn new(start: i64, first_segment: u32) -> Arc<Self> {
        Arc::new(Watchers {
            next: AtomicI64::new(start),
            target: AtomicI64::new(0),
            stop: AtomicBool::new(false),
            recent: Mutex::new(VecDeque::new()),
            segments: AtomicU32::new(first_segment),
        })
    }

    fn segment(&self) -> u32 {
        self.segments.fetch_add(1, Ordering::SeqCst)
    }

    fn done(&self) -> bool {
        let target = self.target.load(Ordering::SeqCst);
        target > 0 && self.next.load(Ordering::SeqCst) > target
    }
}

fn options(prefix: &str, start: i64) -> WatchOptions {
    WatchOptions::prefix(prefix)
        .from_revision(start)
        .with_collections()
}

/// The main watch over `prefix`: resumed from the revision after the last one delivered
/// whenever it fails, until it has delivered the target revision or `give_up` passes.
/// Returns whether it reached the target.
pub async fn main_watch(
    store: Arc<dyn Store>,
    recorder: Arc<Recorder>,
    prefix: String,
    shared: Arc<Watchers>,
    give_up: Instant,
) -> bool {
    loop {
        if shared.done() {
            return true;
        }
        if Instant::now() > give_up {
            return false;
        }
        let segment = shared.segment();
        let start = shared.next.load(Ordering::SeqCst);
        recorder.record(Record::Open {
            segment,
            main: true,
            start,
            at: recorder.now(),
        });
        let end = |reason: String| Record::End {
            segment,
            at: recorder.now(),
            reason,
        };
        let opened = tokio::time::timeout(
            Duration::from_secs(10),
            store.watch(options(&prefix, start)),
        )
        .await;
        let mut stream = match opened {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                recorder.record(end(format!("open failed: {e}")));
                if e.compact_revision().is_some() {
                    return false;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Err(_) => {
                recorder.record(end("open timed out".into()));
                continue;
            }
        };
        loop {
            if shared.done() {
                recorder.record(end("done".into()));
                return true;
            }
            if Instant::now() > give_up {
                recorder.record(end("gave up".into()));
                return false;
            }
            match tokio::time::timeout(Duration::from_millis(250), stream.next()).await {
                Err(_) => continue,
                Ok(Some(Ok(batch))) => {
                    recorder.record(batch_record(segment, recorder.now(), &batch));
                    shared.next.store(batch.revision + 1, Ordering::SeqCst);
                    let mut recent = shared.recent.lock().unwrap_or_else(|e| e.into_inner());
                    recent.push_back(batch.revision);
                    if recent.len() > 64 {
                        recent.pop_front();
                    }
                }
                Ok(Some(Err(e))) => {
                    recorder.record(end(format!("failed: {e}")));
                    if e.compact_revision().is_some() {
                        return false;
                    }
                    break;
                }
                Ok(None) => {
                    recorder.record(end(ENDED_SILENTLY.into()));
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Opens watches from revisions the main watch delivered, every second or few, and reads
/// each until it reaches where the main watch was when it opened (or a few seconds pass).
pub async fn bookmark_watch(
    store: Arc<dyn Store>,
    recorder: Arc<Recorder>,
    prefix: String,
    shared: Arc<Watchers>,
    seed: u64,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    while !shared.stop.load(Ordering::SeqCst) {
        tokio::time::sleep(rng.random_range(Duration::from_millis(500)..Duration::from_secs(2)))
            .await;
        let start = {
            let recent = shared.recent.lock().unwrap_or_else(|e| e.into_inner());
            if recent.is_empty() {
                continue;
            }
            recent[rng.random_range(0..recent.len())]
        };
        let until_revision = shared.next.load(Ordering::SeqCst) - 1;
        let segment = shared.segment();
        recorder.record(Record::Open {
            segment,
            main: false,
            start,
            at: recorder.now(),
        });
        let end = |reason: &str| Record::End {
            segment,
            at: recorder.now(),
            reason: reason.to_string(),
        };
        let Ok(Ok(mut stream)) =
            tokio::time::timeout(Duration::from_secs(5), store.watch(options(&prefix, start)))
                .await
        else {
            recorder.record(end("open failed"));
            continue;
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        loop {
            match tokio::time::timeout_at(deadline, stream.next()).await {
                Ok(Some(Ok(batch))) => {
                    recorder.record(batch_record(segment, recorder.now(), &batch));
                    if batch.revision >= until_revision {
                        recorder.record(end("closed"));
                        break;
                    }
                }
                Ok(Some(Err(e))) => {
                    recorder.record(end(&format!("failed: {e}")));
                    break;
                }
                Ok(None) => {
                    recorder.record(end(ENDED_SILENTLY));
                    break;
                }
                Err(_) => {
                    recorder.record(end("closed"));
                    break;
                }
            }
        }
    }
}
