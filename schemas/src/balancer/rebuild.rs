//! Rebuilding the cache from its source of truth (the document's `LoadAllKeysToStore`, run
//! on a warm cache), removing a group, and repairing the active lists against the reverse
//! indexes.

use super::cache::Balancer;
use super::guard::{Races, Subject};
use super::keys::{ActiveKeysKey, BalancerKeyspace, KeyGroupsKey, KeyObjectKey};
use super::values::{API_KEY_FIELD, ApiKeyRecord, LoadedKey, STATUS_FIELD};
use keyplane_core::keyspace::{Keyspace, TypedTxn};
use keyplane_core::{CollectionKind, CompareOp, RangeOptions, Result};
use std::collections::{BTreeMap, BTreeSet};

/// The most ops a rebuild transaction carries on backends without a tighter limit.
const MAX_BATCH_OPS: usize = 512;

/// What [`Balancer::rebuild`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RebuildReport {
    /// Key objects written (new or changed).
    pub objects: usize,
    /// Reverse indexes written (new or changed).
    pub reverse_indexes: usize,
    /// Active lists written (new or changed), each to exactly the source's order.
    pub lists: usize,
    /// Keys the source no longer has, removed with their reverse indexes.
    pub keys_removed: usize,
    /// Groups the source no longer has, whose active lists were deleted.
    pub groups_removed: usize,
    /// Transactions sent (0 when the cache already matched the source).
    pub txns: usize,
}

impl RebuildReport {
    /// Whether the rebuild wrote nothing: the cache already matched the source.
    pub fn unchanged(&self) -> bool {
        self.txns == 0
    }
}

/// What [`Balancer::repair`] fixed, per group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Active lists checked.
    pub groups: usize,
    /// `(group, key)`: extra occurrences of a key removed from the group's list.
    pub duplicates: Vec<(u64, u64)>,
    /// `(group, key)`: keys removed from the group's list (not active, not linked to the
    /// group, or without an object).
    pub strays: Vec<(u64, u64)>,
    /// `(group, key)`: active keys linked to the group that were missing from its list,
    /// appended at its end.
    pub missing: Vec<(u64, u64)>,
}

impl RepairReport {
    /// Whether nothing needed fixing.
    pub fn clean(&self) -> bool {
        self.duplicates.is_empty() && self.strays.is_empty() && self.missing.is_empty()
    }
}

/// What the cache holds, read key by key: objects, reverse indexes and active lists.
#[derive(Debug, Default)]
struct Cached {
    objects: BTreeMap<u64, Option<ApiKeyRecord>>,
    reverse: BTreeMap<u64, BTreeSet<u64>>,
    lists: BTreeMap<u64, Vec<u64>>,
}

/// One unit of a rebuild: a collection written whole, or deleted.
enum Unit {
    Object(u64, Option<ApiKeyRecord>),
    Reverse(u64, Option<BTreeSet<u64>>),
    List(u64, Option<Vec<u64>>),
}

impl Unit {
    /// Its ops, plus two per collection (optimistic backends guard and rewrite a stamp per
    /// collection).
    fn cost(&self) -> usize {
        let ops = match self {
            Unit::Object(_, r) => 1 + 2 * usize::from(r.is_some()),
            Unit::Reverse(_, g) => 1 + g.as_ref().map_or(0, BTreeSet::len),
            Unit::List(_, items) => 1 + items.as_ref().map_or(0, Vec::len),
        };
        ops + 2
    }
}

impl Balancer {
    /// Lists every key object, reverse index and active list of the cache (under its
    /// root), with their contents.
    async fn read_cache(&self) -> Result<Cached> {
        let mut cached = Cached::default();
        for prefix in ["key:", "group:"] {
            let mut opts = RangeOptions::prefix(prefix).with_collections().limit(512);
            loop {
                let page = self.typed.store().range(opts.clone()).await?;
                for c in &page.collections {
                    let Ok(key) = std::str::from_utf8(&c.key) else {
                        continue;
                    };
                    match (BalancerKeyspace::parse(key), c.kind) {
                        (Ok(BalancerKeyspace::Object(k)), CollectionKind::Map) => {
                            cached.objects.insert(k.id, self.key(k.id).await?);
                        }
                        (Ok(BalancerKeyspace::Groups(k)), CollectionKind::Set) => {
                            let groups = self.groups_of(k.id).await?;
                            cached.reverse.insert(k.id, groups.into_iter().collect());
                        }
                        (Ok(BalancerKeyspace::Active(k)), CollectionKind::List) => {
                            cached.lists.insert(k.id, self.active_keys(k.id).await?);
                        }
                        // Not the balancer's, or of the wrong kind: not touched.
                        _ => {}
                    }
                }
                match page.next {
                    Some(next) => opts = opts.after(next),
                    None => break,
                }
            }
        }
        Ok(cached)
    }

    /// Rebuilds the cache from `keys`, its source of truth (the document's
    /// `LoadAllKeysToStore`, safe on a warm cache): afterwards every key object, reverse
    /// index and active list is exactly what one [`load_keys`](Self::load_keys) of `keys`
    /// writes on an empty cache (each group's list holds its active keys once, in input
    /// order), and what the source no longer has is gone: keys' objects and reverse
    /// indexes, and the lists of groups no key links to. Only what differs is written, so a
    /// second rebuild from the same source writes nothing.
    ///
    /// Each object, reverse index and list is rewritten whole in one transaction (deleted
    /// and written again), so concurrent rebuilds from one source end in that source's
    /// cache, with no entry duplicated or lost; several are packed per transaction within
    /// the backend's `max_txn_ops`. A rebuild replaces what concurrent
    /// [`link`](Self::link)s or [`set_status`](Self::set_status) wrote meanwhile: run it
    /// from the source those operations also write, as the document's service does. On
    /// Redis, keys another program wrote reach the listing once reconciled
    /// (`RedisStore::reconcile` of `key:` and `group:`).
    ///
    /// # Errors
    /// `InvalidArgument` for an empty `api_key` or a key id given twice (nothing written);
    /// `TxnTooLarge` for one list or reverse index larger than a transaction takes;
    /// backend errors, after which the transactions already committed stay written (run it
    /// again).
    pub async fn rebuild(&self, keys: &[LoadedKey]) -> Result<RebuildReport> {
        super::load::validate_keys(keys)?;
        let mut objects = BTreeMap::new();
        let mut reverse: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
        let mut lists: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for key in keys {
            objects.insert(key.id, key.record.clone());
            let groups: BTreeSet<u64> = key.groups.iter().copied().collect();
            if key.record.status.is_active() {
                for group in &groups {
                    lists.entry(*group).or_default().push(key.id);
                }
            }
            if !groups.is_empty() {
                reverse.insert(key.id, groups);
            }
        }
        let cached = self.read_cache().await?;
        let mut report = RebuildReport::default();
        let mut units = Vec::new();
        for (id, record) in &objects {
            if cached.objects.get(id) != Some(&Some(record.clone())) {
                units.push(Unit::Object(*id, Some(record.clone())));
                report.objects += 1;
            }
        }
        for id in cached.objects.keys().filter(|id| !objects.contains_key(id)) {
            units.push(Unit::Object(*id, None));
            report.keys_removed += 1;
        }
        let reverse_ids: BTreeSet<u64> = reverse
            .keys()
            .chain(cached.reverse.keys())
            .copied()
            .collect();
        for id in reverse_ids {
            let desired = reverse.get(&id);
            if cached.reverse.get(&id) != desired {
                units.push(Unit::Reverse(id, desired.cloned()));
                if desired.is_some() {
                    report.reverse_indexes += 1;
                }
            }
        }
        let list_ids: BTreeSet<u64> = lists.keys().chain(cached.lists.keys()).copied().collect();
        for id in list_ids {
            let desired = lists.get(&id);
            if cached.lists.get(&id) != desired {
                units.push(Unit::List(id, desired.cloned()));
                match desired {
                    Some(_) => report.lists += 1,
                    None => report.groups_removed += 1,
                }
            }
        }
        let budget = self
            .typed
            .store()
            .capabilities()
            .max_txn_ops
            .clamp(8, MAX_BATCH_OPS);
        let mut txn = self.typed.txn();
        let mut cost = 0;
        for unit in &units {
            let unit_cost = unit.cost();
            if cost > 0 && cost + unit_cost > budget {
                txn.commit().await?;
                report.txns += 1;
                txn = self.typed.txn();
                cost = 0;
            }
            self.write_unit(&mut txn, unit);
            cost += unit_cost;
        }
        if cost > 0 {
            txn.commit().await?;
            report.txns += 1;
        }
        Ok(report)
    }

    fn write_unit(&self, txn: &mut TypedTxn, unit: &Unit) {
        match unit {
            Unit::Object(id, record) => {
                txn.delete(&KeyObjectKey { id: *id });
                if let Some(record) = record {
                    let object = self.object(*id);
                    txn.map_put(&object, &API_KEY_FIELD.into(), &record.api_key)
                        .map_put(
                            &object,
                            &STATUS_FIELD.into(),
                            &record.status.as_str().into(),
                        );
                }
            }
            Unit::Reverse(id, groups) => {
                txn.delete(&KeyGroupsKey { id: *id });
                let reverse = self.groups(*id);
                for group in groups.iter().flatten() {
                    txn.set_add(&reverse, group);
                }
            }
            Unit::List(id, items) => {
                txn.delete(&ActiveKeysKey { id: *id });
                let list = self.active(*id);
                for item in items.iter().flatten() {
                    txn.list_push(&list, item);
                }
            }
        }
    }

    /// Removes group `group` from the cache, as [`remove_key`](Self::remove_key) removes a
    /// key: its active list, and the group in the reverse index of every key in `members`
    /// and in the list, in one transaction guarded by the list read (a key linked to the
    /// group meanwhile makes it read again). A group's inactive keys are recorded only in
    /// their own reverse indexes, so `members` is the group's key list from the source of
    /// truth (the database's mappings), as the document's service has it. Returns whether
    /// the group had a list or a member.
    ///
    /// # Errors
    /// A retryable `ConditionFailed` when concurrent writers kept changing the list; backend
    /// errors.
    pub async fn remove_group(&self, group: u64, members: &[u64]) -> Result<bool> {
        let list = self.active(group);
        let mut attempts = Races::on("remove_group", Subject::Group(group));
        loop {
            let listed = self.active_keys(group).await?;
            let mut keys: BTreeSet<u64> = members.iter().copied().collect();
            keys.extend(&listed);
            let mut txn = self.typed.txn();
            let size = i64::try_from(listed.len()).unwrap_or(i64::MAX);
            txn.when_list_len(&list, CompareOp::Equal, size);
            let mut linked = Vec::new();
            for key in &keys {
                linked.push(txn.set_contains(&self.groups(*key), &group));
                txn.set_remove(&self.groups(*key), &group);
            }
            txn.delete(&self.active_key(group));
            match txn.commit().await {
                Ok(outcome) if outcome.succeeded => {
                    let mut found = !listed.is_empty();
                    for read in &linked {
                        found |= outcome.collection(read)?;
                    }
                    return Ok(found);
                }
                Ok(_) => attempts.lost(self).await?,
                Err(e)
                    if e.kind() == keyplane_core::ErrorKind::ConditionFailed
                        && e.is_retryable() =>
                {
                    attempts.lost(self).await?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Checks every active list against the reverse indexes and statuses, and fixes it: a
    /// list holds each active key linked to its group exactly once. Extra occurrences and
    /// keys that do not belong (inactive, unlinked, without an object) are removed, keeping
    /// the rotation order of the rest; missing keys are appended. Each list is rewritten in
    /// one transaction guarded by its length and the count of each key read, so a
    /// concurrent push or removal makes it read again, while concurrent picks (which only
    /// rotate) do not. Lists that need nothing are not written.
    ///
    /// # Errors
    /// A retryable `ConditionFailed` when concurrent writers kept changing a list; backend
    /// errors.
    pub async fn repair(&self) -> Result<RepairReport> {
        let cached = self.read_cache().await?;
        let mut expected: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
        for (id, groups) in &cached.reverse {
            let active = cached
                .objects
                .get(id)
                .is_some_and(|o| o.as_ref().is_some_and(|r| r.status.is_active()));
            if active {
                for group in groups {
                    expected.entry(*group).or_default().insert(*id);
                }
            }
        }
        let groups: BTreeSet<u64> = expected
            .keys()
            .chain(cached.lists.keys())
            .copied()
            .collect();
        let mut report = RepairReport::default();
        for group in groups {
            report.groups += 1;
            let want = expected.get(&group).cloned().unwrap_or_default();
            self.repair_list(group, &want, &mut report).await?;
        }
        Ok(report)
    }

    async fn repair_list(
        &self,
        group: u64,
        want: &BTreeSet<u64>,
        report: &mut RepairReport,
    ) -> Result<()> {
        let list = self.active(group);
        let mut attempts = Races::on("repair", Subject::Group(group));
        loop {
            let listed = self.active_keys(group).await?;
            let mut kept = Vec::new();
            let mut seen = BTreeSet::new();
            let (mut duplicates, mut strays, mut missing) = (Vec::new(), Vec::new(), Vec::new());
            for id in &listed {
                if !want.contains(id) {
                    strays.push((group, *id));
                } else if !seen.insert(*id) {
                    duplicates.push((group, *id));
                } else {
                    kept.push(*id);
                }
            }
            for id in want.iter().filter(|id| !seen.contains(id)) {
                missing.push((group, *id));
                kept.push(*id);
            }
            strays.dedup();
            if duplicates.is_empty() && strays.is_empty() && missing.is_empty() {
                return Ok(());
            }
            let mut counts: BTreeMap<u64, i64> = BTreeMap::new();
            for id in &listed {
                *counts.entry(*id).or_default() += 1;
            }
            let mut txn = self.typed.txn();
            let size = i64::try_from(listed.len()).unwrap_or(i64::MAX);
            txn.when_list_len(&list, CompareOp::Equal, size);
            for (id, count) in &counts {
                txn.when(keyplane_core::Compare::member(
                    keyplane_core::keyspace::Key::encode(&self.active_key(group)),
                    CollectionKind::List,
                    id.to_string(),
                    CompareOp::Equal,
                    *count,
                ));
            }
            txn.delete(&self.active_key(group));
            for id in &kept {
                txn.list_push(&list, id);
            }
            if self.commit_guarded(txn).await? {
                report.duplicates.extend(duplicates);
                report.strays.extend(strays);
                report.missing.extend(missing);
                return Ok(());
            }
            attempts.lost(self).await?;
        }
    }
}
