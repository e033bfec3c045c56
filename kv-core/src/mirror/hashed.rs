//! [`HashIndex`]: the mirror's items by raw key, for lookups.
//!
//! A persistent hash array mapped trie: a copy costs O(1) (the root is shared), a change
//! copies the path to one slot, and a lookup follows two or three pointers where an ordered
//! tree compares the key with a dozen stored keys, each behind a pointer. A node holds only
//! the slots in use (a bitmap says which), so a small node costs a few words, not a table.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

/// What the index holds: a cheap handle that knows the raw key it is found by.
pub(super) trait Keyed: Clone {
    /// The raw key.
    fn raw(&self) -> &[u8];
}

/// Hash bits each level of the trie consumes: a node has up to 64 slots, so that a
/// lookup in a hundred thousand keys passes through two nodes.
const BITS: u32 = 6;
const MASK: u64 = (1 << BITS) - 1;

/// Which slots of a node are in use.
type Bitmap = u64;

/// One slot of a node.
#[derive(Clone, Default)]
enum Slot<T> {
    /// One item, with the hash of its raw key.
    Leaf(u64, T),
    /// A node one level down: the bitmap of its slots, and the slots.
    Branch(Bitmap, Arc<[Slot<T>]>),
    /// Two items or more whose raw keys share the whole 64-bit hash (kept behind one
    /// pointer, so that this rare case does not widen every slot).
    Collision(Arc<Collided<T>>),
    /// Nothing: what a slot moved out of a node that is being rebuilt holds. A node in
    /// the index never has one.
    #[default]
    Vacant,
}

/// Items whose raw keys share one hash.
#[derive(Clone)]
struct Collided<T> {
    hash: u64,
    items: Vec<T>,
}

/// The bit of `hash` at `level` in a node's bitmap.
fn bit(hash: u64, level: u32) -> Bitmap {
    // Level 10 takes the hash's last 4 bits; two hashes equal through it are equal, and
    // the trie never goes deeper.
    1 << (hash.checked_shr(level * BITS).unwrap_or(0) & MASK)
}

/// The position of the slot for `bit` in a node with `bitmap`.
#[inline]
fn position(bitmap: Bitmap, bit: Bitmap) -> usize {
    // A full node (the root, and the upper levels of a large index) needs no count: without
    // a processor-specific build, counting bits is a dozen instructions on every level.
    if bitmap == Bitmap::MAX {
        bit.trailing_zeros() as usize
    } else {
        (bitmap & (bit - 1)).count_ones() as usize
    }
}

/// A persistent map from raw key to item, by hash.
pub(super) struct HashIndex<T, S = foldhash::fast::RandomState> {
    bitmap: Bitmap,
    root: Arc<[Slot<T>]>,
    len: usize,
    hasher: S,
}

impl<T, S: Clone> Clone for HashIndex<T, S> {
    fn clone(&self) -> Self {
        HashIndex {
            bitmap: self.bitmap,
            root: Arc::clone(&self.root),
            len: self.len,
            hasher: self.hasher.clone(),
        }
    }
}

impl<T: Keyed> HashIndex<T> {
    /// An empty index, hashing with a seed of this process's choosing: keys chosen to
    /// collide cannot be prepared in advance.
    pub(super) fn new() -> Self {
        Self::with_hasher(foldhash::fast::RandomState::default())
    }
}

impl<T: Keyed, S: BuildHasher> HashIndex<T, S> {
    /// The hash of a raw key: its bytes alone (the index hashes nothing else, so no length
    /// prefix is needed to keep two keys' inputs apart).
    #[inline]
    pub(super) fn hash(&self, raw: &[u8]) -> u64 {
        let mut hasher = self.hasher.build_hasher();
        hasher.write(raw);
        hasher.finish()
    }

    /// An empty index hashing with `hasher`.
    pub(super) fn with_hasher(hasher: S) -> Self {
        HashIndex {
            bitmap: 0,
            root: Arc::from(Vec::new()),
            len: 0,
            hasher,
        }
    }

    /// An index of `items`, each with the [`hash`](Self::hash) of its raw key, hashing as
    /// this one does; of items with the same raw key, the last. Built at once: each node is
    /// allocated at its final width, where inserting the items one by one would reallocate
    /// a node at every slot it gains.
    pub(super) fn of_hashed(&self, mut items: Vec<(u64, T)>) -> Self
    where
        S: Clone,
    {
        // In the order of the trie's paths; a stable sort keeps a repeated key's last item
        // after its first.
        items.sort_by_cached_key(|(hash, _)| path(*hash));
        let hashes: Vec<u64> = items.iter().map(|(hash, _)| *hash).collect();
        // The items move into the nodes in this order: no item is touched again (a clone
        // would write its count, a miss in the processor's caches for each).
        let mut items = items.into_iter().map(|(_, item)| item);
        let (bitmap, root, len) = build(0, &hashes, &mut items);
        HashIndex {
            bitmap,
            root,
            len,
            hasher: self.hasher.clone(),
        }
    }

    /// How many items the index holds.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The item stored under `raw`.
    #[inline]
    pub(super) fn get(&self, raw: &[u8]) -> Option<&T> {
        self.find(self.hash(raw), raw)
    }

    /// The item stored under `raw`, whose hash is `hash`.
    #[inline]
    fn find(&self, hash: u64, raw: &[u8]) -> Option<&T> {
        let (mut bitmap, mut node, mut level) = (self.bitmap, &self.root, 0);
        loop {
            let bit = bit(hash, level);
            if bitmap & bit == 0 {
                return None;
            }
            match &node[position(bitmap, bit)] {
                Slot::Leaf(h, item) => return (*h == hash && item.raw() == raw).then_some(item),
                Slot::Collision(collided) => {
                    return collided.items.iter().find(|item| item.raw() == raw);
                }
                Slot::Branch(b, child) => (bitmap, node, level) = (*b, child, level + 1),
                Slot::Vacant => return None,
            }
        }
    }

    /// Stores `item` under its raw key; the item it replaces.
    pub(super) fn insert(&mut self, item: T) -> Option<T> {
        let hash = self.hash(item.raw());
        let replaced = insert(&mut self.bitmap, &mut self.root, 0, hash, item);
        if replaced.is_none() {
            self.len += 1;
        }
        replaced
    }

    /// Removes the item stored under `raw`; the item removed.
    pub(super) fn remove(&mut self, raw: &[u8]) -> Option<T> {
        let hash = self.hash(raw);
        // Looking first keeps a miss from copying the path to it.
        self.find(hash, raw)?;
        let removed = remove(&mut self.bitmap, &mut self.root, 0, hash, raw);
        if removed.is_some() {
            self.len -= 1;
        }
        removed
    }
}

/// Inserts into the node (`bitmap`, `node`) at `level`.
fn insert<T: Keyed>(
    bitmap: &mut Bitmap,
    node: &mut Arc<[Slot<T>]>,
    level: u32,
    hash: u64,
    item: T,
) -> Option<T> {
    let bit = bit(hash, level);
    let at = position(*bitmap, bit);
    if *bitmap & bit == 0 {
        resize(node, at, Some(Slot::Leaf(hash, item)));
        *bitmap |= bit;
        return None;
    }
    let slot = &mut Arc::make_mut(node)[at];
    let grown = match slot {
        Slot::Branch(b, child) => return insert(b, child, level + 1, hash, item),
        Slot::Leaf(h, held) if *h == hash && held.raw() == item.raw() => {
            return Some(std::mem::replace(held, item));
        }
        Slot::Leaf(h, held) if *h == hash => Slot::Collision(Arc::new(Collided {
            hash,
            items: vec![held.clone(), item],
        })),
        Slot::Leaf(h, held) => split(level + 1, Slot::Leaf(*h, held.clone()), *h, hash, item),
        Slot::Collision(collided) if collided.hash == hash => {
            let items = &mut Arc::make_mut(collided).items;
            return match items.iter().position(|held| held.raw() == item.raw()) {
                Some(i) => Some(std::mem::replace(&mut items[i], item)),
                None => {
                    items.push(item);
                    None
                }
            };
        }
        Slot::Collision(collided) => {
            let shared = collided.hash;
            split(
                level + 1,
                Slot::Collision(Arc::clone(collided)),
                shared,
                hash,
                item,
            )
        }
        Slot::Vacant => Slot::Leaf(hash, item),
    };
    *slot = grown;
    None
}

/// Rebuilds `node` one slot wider, with `slot` at `at`, or (`None`) one narrower, without the
/// slot at `at`: a node sized to its contents is reallocated when its width changes. A node
/// no other copy of the index shares gives its slots up instead of cloning them (a clone
/// costs a reference count on each, and dropping the old node as many again).
fn resize<T: Clone>(node: &mut Arc<[Slot<T>]>, at: usize, slot: Option<Slot<T>>) {
    let skip = usize::from(slot.is_none());
    let rebuilt: Arc<[Slot<T>]> = match Arc::get_mut(node) {
        Some(owned) => {
            let (before, after) = owned.split_at_mut(at);
            let after = after.get_mut(skip..).unwrap_or_default();
            (before.iter_mut().map(std::mem::take))
                .chain(slot)
                .chain(after.iter_mut().map(std::mem::take))
                .collect()
        }
        None => {
            let (before, after) = node.split_at(at);
            let after = after.get(skip..).unwrap_or_default();
            (before.iter().cloned())
                .chain(slot)
                .chain(after.iter().cloned())
                .collect()
        }
    };
    *node = rebuilt;
}

/// A hash's path through the trie as a number: its level 0 bits first, so that sorting by
/// path groups the items of each node together, in slot order.
fn path(hash: u64) -> u64 {
    let levels = u64::BITS.div_ceil(BITS);
    (0..levels).fold(0, |path, level| {
        let width = BITS.min(u64::BITS - level * BITS);
        (path << width) | (hash >> (level * BITS)) & ((1 << width) - 1)
    })
}

/// The node at `level` holding the items of `hashes` (sorted by [`path`], all on one path
/// down to this level), taken from `items` in that order: its bitmap, its slots and how many
/// distinct items it holds.
fn build<T: Keyed>(
    level: u32,
    hashes: &[u64],
    items: &mut impl Iterator<Item = T>,
) -> (Bitmap, Arc<[Slot<T>]>, usize) {
    let bitmap = (hashes.iter()).fold(0, |bitmap, hash| bitmap | bit(*hash, level));
    let mut groups = hashes.chunk_by(|a, b| bit(*a, level) == bit(*b, level));
    let mut len = 0;
    // One group per bit: collecting a counted range allocates the node once, at its width.
    let slots = (0..bitmap.count_ones())
        .map(|_| {
            let Some(group) = groups.next() else {
                // There are as many groups as bits, and as many items as hashes.
                return Slot::Vacant;
            };
            let hash = group[0];
            if group.len() > 1 && group.iter().any(|h| *h != hash) {
                let (b, child, n) = build(level + 1, group, items);
                len += n;
                return Slot::Branch(b, child);
            }
            if let [_] = group {
                let Some(item) = items.next() else {
                    return Slot::Vacant;
                };
                len += 1;
                return Slot::Leaf(hash, item);
            }
            // Items sharing the whole hash: the last of each raw key.
            let mut kept: Vec<T> = Vec::new();
            for item in items.by_ref().take(group.len()) {
                match kept.iter_mut().find(|k| k.raw() == item.raw()) {
                    Some(held) => *held = item,
                    None => kept.push(item),
                }
            }
            len += kept.len();
            match <[T; 1]>::try_from(kept) {
                Ok([item]) => Slot::Leaf(hash, item),
                Err(items) if items.is_empty() => Slot::Vacant,
                Err(items) => Slot::Collision(Arc::new(Collided { hash, items })),
            }
        })
        .collect();
    (bitmap, slots, len)
}

/// A node at `level` holding `held` (whose hash is `held_hash`) and a new leaf of `hash`,
/// where the two hashes agree through the level above.
fn split<T: Keyed>(level: u32, held: Slot<T>, held_hash: u64, hash: u64, item: T) -> Slot<T> {
    let (a, b) = (bit(held_hash, level), bit(hash, level));
    if a == b {
        return Slot::Branch(
            a,
            Arc::from([split(level + 1, held, held_hash, hash, item)]),
        );
    }
    let leaf = Slot::Leaf(hash, item);
    let slots = if a < b { [held, leaf] } else { [leaf, held] };
    Slot::Branch(a | b, Arc::from(slots))
}

/// Removes `raw`, known to be held, from the node (`bitmap`, `node`) at `level`.
fn remove<T: Keyed>(
    bitmap: &mut Bitmap,
    node: &mut Arc<[Slot<T>]>,
    level: u32,
    hash: u64,
    raw: &[u8],
) -> Option<T> {
    let bit = bit(hash, level);
    if *bitmap & bit == 0 {
        return None;
    }
    let at = position(*bitmap, bit);
    if let Slot::Leaf(h, held) = &node[at] {
        if *h != hash || held.raw() != raw {
            return None;
        }
        let removed = held.clone();
        resize(node, at, None);
        *bitmap &= !bit;
        return Some(removed);
    }
    let slot = &mut Arc::make_mut(node)[at];
    match slot {
        Slot::Leaf(..) | Slot::Vacant => None,
        Slot::Collision(collided) => {
            let i = collided.items.iter().position(|held| held.raw() == raw)?;
            let items = &mut Arc::make_mut(collided).items;
            let removed = items.remove(i);
            if let [last] = &items[..] {
                *slot = Slot::Leaf(hash, last.clone());
            }
            Some(removed)
        }
        Slot::Branch(b, child) => {
            let removed = remove(b, child, level + 1, hash, raw)?;
            // A branch left with one item gives it to its parent: an item may sit at any
            // level of its hash's path, and the trie stays as shallow as its contents.
            if let [Slot::Leaf(..) | Slot::Collision(_)] = &child[..] {
                *slot = child[0].clone();
            }
            Some(removed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::hash::{BuildHasher, Hasher};

    #[derive(Clone, Debug, PartialEq)]
    struct Held(Arc<(Vec<u8>, u32)>);

    impl Keyed for Held {
        fn raw(&self) -> &[u8] {
            &self.0.0
        }
    }

    /// A hasher keeping only the bits of `mask`: few bits make whole-hash collisions,
    /// bits far apart make long shared paths.
    #[derive(Clone)]
    struct Masked(u64);

    struct MaskedHasher(foldhash::quality::FoldHasher<'static>, u64);

    impl Hasher for MaskedHasher {
        fn finish(&self) -> u64 {
            self.0.finish() & self.1
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.write(bytes)
        }
    }

    impl BuildHasher for Masked {
        type Hasher = MaskedHasher;
        fn build_hasher(&self) -> MaskedHasher {
            MaskedHasher(
                foldhash::quality::FixedState::with_seed(7).build_hasher(),
                self.0,
            )
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u8, u32),
        Remove(u8),
        Keep,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (any::<u8>(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
            2 => any::<u8>().prop_map(Op::Remove),
            1 => Just(Op::Keep),
        ]
    }

    fn raw(k: u8) -> Vec<u8> {
        format!("key/{k}").into_bytes()
    }

    fn agrees(
        index: &HashIndex<Held, Masked>,
        model: &BTreeMap<u8, u32>,
    ) -> Result<(), TestCaseError> {
        prop_assert_eq!(index.len(), model.len());
        for k in 0..=u8::MAX {
            let found = index.get(&raw(k)).map(|held| held.0.1);
            prop_assert_eq!(found, model.get(&k).copied(), "key {}", k);
        }
        Ok(())
    }

    proptest! {
        /// Every lookup agrees with a map after any inserts and removes, whether the index
        /// started empty or was built at once from items (some repeating a key), under
        /// hashes that collide whole, share long paths, or neither; and a copy kept before
        /// the changes still answers as the map did then.
        #[test]
        fn answers_as_a_map_and_copies_keep_their_contents(
            mask in prop_oneof![Just(u64::MAX), Just(0b111), Just(0xF000_0000_0000_000F), Just(0x8000_0000_0000_0001)],
            initial in proptest::collection::vec((any::<u8>(), any::<u32>()), 0..300),
            ops in proptest::collection::vec(op(), 0..400),
        ) {
            let empty = HashIndex::with_hasher(Masked(mask));
            let items = (initial.iter())
                .map(|(k, v)| (empty.hash(&raw(*k)), Held(Arc::new((raw(*k), *v)))))
                .collect();
            let mut index = empty.of_hashed(items);
            let mut model: BTreeMap<u8, u32> = initial.into_iter().collect();
            agrees(&index, &model)?;
            let mut kept = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        let replaced = index.insert(Held(Arc::new((raw(k), v)))).map(|h| h.0.1);
                        prop_assert_eq!(replaced, model.insert(k, v));
                    }
                    Op::Remove(k) => {
                        let removed = index.remove(&raw(k)).map(|h| h.0.1);
                        prop_assert_eq!(removed, model.remove(&k));
                    }
                    Op::Keep => kept.push((index.clone(), model.clone())),
                }
                agrees(&index, &model)?;
            }
            for (index, model) in &kept {
                agrees(index, model)?;
            }
        }
    }

    #[test]
    fn a_slot_is_four_words() {
        assert_eq!(
            std::mem::size_of::<Slot<Held>>(),
            4 * std::mem::size_of::<usize>()
        );
    }

    /// The bytes of the nodes under `slots`.
    fn footprint<T>(slots: &[Slot<T>]) -> usize {
        let own = 2 * std::mem::size_of::<usize>() + std::mem::size_of_val(slots);
        let children = slots.iter().map(|slot| match slot {
            Slot::Branch(_, child) => footprint(child),
            _ => 0,
        });
        own + children.sum::<usize>()
    }

    /// Nodes hold only the slots in use: a hundred thousand keys cost about five words each
    /// (a node of fixed width would cost several times that).
    #[test]
    fn nodes_cost_what_they_hold() {
        let mut index = HashIndex::with_hasher(foldhash::fast::FixedState::with_seed(1));
        for i in 0..100_000u32 {
            index.insert(Held(Arc::new((format!("bench/item/{i}").into_bytes(), i))));
        }
        let per_key = footprint(&index.root) as f64 / 100_000.0;
        assert!(per_key < 48.0, "{per_key} bytes per key");
        assert!((0..100_000u32).step_by(997).all(|i| {
            index
                .get(format!("bench/item/{i}").as_bytes())
                .is_some_and(|held| held.0.1 == i)
        }));
    }

    #[test]
    fn emptied_index_is_empty_and_reusable() {
        let mut index = HashIndex::with_hasher(Masked(0b1));
        for k in 0..50 {
            index.insert(Held(Arc::new((raw(k), 0))));
        }
        for k in 0..50 {
            assert!(index.remove(&raw(k)).is_some());
        }
        assert_eq!(index.len(), 0);
        assert_eq!(index.bitmap, 0);
        assert!(index.get(&raw(3)).is_none());
        index.insert(Held(Arc::new((raw(3), 9))));
        assert_eq!(index.get(&raw(3)).map(|h| h.0.1), Some(9));
    }
}
