//! The collection operations of [`TypedTxn`]: typed set, map and list writes that commit
//! atomically with the transaction's other ops (a value and its index set, for instance).

use super::collections::{ListHandle, MapHandle, SetHandle};
use super::txn::TypedTxn;
use crate::keyspace::codec::Codec;
use crate::{CollectionKind, CollectionOp};
use crate::{Compare, CompareOp, TxnOp};

impl TypedTxn {
    /// The set's key and `member` encoded; `None` when it does not encode (the builder keeps
    /// the error and `commit` returns it).
    fn set_member<C: Codec>(
        &mut self,
        set: &SetHandle<C>,
        member: &C::Value,
    ) -> Option<(Vec<u8>, Vec<u8>)> {
        if !self.allowed(set.writable()) {
            return None;
        }
        let key = set.key().to_vec();
        let member = self.encode(set.codec(), &key, member)?;
        Some((key, member))
    }

    /// The map's key, `field` and `value` encoded; `None` when one does not encode.
    fn map_entry<F: Codec, V: Codec>(
        &mut self,
        map: &MapHandle<F, V>,
        field: &F::Value,
        value: &V::Value,
    ) -> Option<(Vec<u8>, Vec<u8>, Vec<u8>)> {
        if !self.allowed(map.writable()) {
            return None;
        }
        let key = map.key().to_vec();
        let field = self.encode(Ok(map.field_codec()), &key, field);
        let value = self.encode(map.value_codec(), &key, value);
        Some((key, field?, value?))
    }

    /// Adds `member` to the set in the branch being written (the success branch until
    /// [`or_else`](TypedTxn::or_else)).
    pub fn set_add<C: Codec>(&mut self, set: &SetHandle<C>, member: &C::Value) -> &mut Self {
        if let Some((key, member)) = self.set_member(set, member) {
            let op = CollectionOp::SetAdd { key, member };
            self.push(self.writing(), TxnOp::Collection(op));
        }
        self
    }

    /// Removes `member` from the set in the branch being written (the success branch until
    /// [`or_else`](TypedTxn::or_else)).
    pub fn set_remove<C: Codec>(&mut self, set: &SetHandle<C>, member: &C::Value) -> &mut Self {
        if let Some((key, member)) = self.set_member(set, member) {
            let op = CollectionOp::SetRemove { key, member };
            self.push(self.writing(), TxnOp::Collection(op));
        }
        self
    }

    /// Sets a field of the map in the branch being written (the success branch until
    /// [`or_else`](TypedTxn::or_else)).
    pub fn map_put<F: Codec, V: Codec>(
        &mut self,
        map: &MapHandle<F, V>,
        field: &F::Value,
        value: &V::Value,
    ) -> &mut Self {
        if let Some((key, field, value)) = self.map_entry(map, field, value) {
            let op = CollectionOp::MapPut { key, field, value };
            self.push(self.writing(), TxnOp::Collection(op));
        }
        self
    }

    /// Deletes a field of the map in the branch being written (the success branch until
    /// [`or_else`](TypedTxn::or_else)).
    pub fn map_delete<F: Codec, V: Codec>(
        &mut self,
        map: &MapHandle<F, V>,
        field: &F::Value,
    ) -> &mut Self {
        if !self.allowed(map.writable()) {
            return self;
        }
        let key = map.key().to_vec();
        if let Some(field) = self.encode(Ok(map.field_codec()), &key, field) {
            let op = CollectionOp::MapDelete { key, field };
            self.push(self.writing(), TxnOp::Collection(op));
        }
        self
    }

    /// Appends an item to the list in the branch being written (the success branch until
    /// [`or_else`](TypedTxn::or_else)).
    pub fn list_push<C: Codec>(&mut self, list: &ListHandle<C>, item: &C::Value) -> &mut Self {
        if !self.allowed(list.writable()) {
            return self;
        }
        let key = list.key().to_vec();
        if let Some(value) = self.encode(list.codec(), &key, item) {
            let op = CollectionOp::ListPush { key, value };
            self.push(self.writing(), TxnOp::Collection(op));
        }
        self
    }

    /// Inserts an item at the head of the list (Redis `LPUSH`) in the branch being written.
    pub fn list_push_front<C: Codec>(
        &mut self,
        list: &ListHandle<C>,
        item: &C::Value,
    ) -> &mut Self {
        if !self.allowed(list.writable()) {
            return self;
        }
        let key = list.key().to_vec();
        if let Some(value) = self.encode(list.codec(), &key, item) {
            let op = CollectionOp::ListPushFront { key, value };
            self.push(self.writing(), TxnOp::Collection(op));
        }
        self
    }

    /// Requires the set to hold `member`.
    pub fn when_set_contains<C: Codec>(
        &mut self,
        set: &SetHandle<C>,
        member: &C::Value,
    ) -> &mut Self {
        if let Some((key, member)) = self.set_member(set, member) {
            self.push_compare(Compare::set_contains(key, member));
        }
        self
    }

    /// Requires the set not to hold `member` (or not to exist).
    pub fn when_set_lacks<C: Codec>(&mut self, set: &SetHandle<C>, member: &C::Value) -> &mut Self {
        if let Some((key, member)) = self.set_member(set, member) {
            self.push_compare(Compare::set_lacks(key, member));
        }
        self
    }

    /// Requires the map to have `field` with exactly the encoding of `value` (a compare on
    /// bytes, as [`when_value_equals`](Self::when_value_equals)).
    pub fn when_map_field_equals<F: Codec, V: Codec>(
        &mut self,
        map: &MapHandle<F, V>,
        field: &F::Value,
        value: &V::Value,
    ) -> &mut Self {
        if let Some((key, field, value)) = self.map_entry(map, field, value) {
            let compare = Compare::map_field(key, field, CompareOp::Equal, value);
            self.push_compare(compare);
        }
        self
    }

    /// Requires the map to have no `field` (or not to exist).
    pub fn when_map_lacks<F: Codec, V: Codec>(
        &mut self,
        map: &MapHandle<F, V>,
        field: &F::Value,
    ) -> &mut Self {
        let key = map.key().to_vec();
        if let Some(field) = self.encode(Ok(map.field_codec()), &key, field) {
            self.push_compare(Compare::map_lacks(key, field));
        }
        self
    }

    /// Requires the set's number of members to be `op` `len` (0 when it does not exist).
    pub fn when_set_len<C: Codec>(
        &mut self,
        set: &SetHandle<C>,
        op: CompareOp,
        len: i64,
    ) -> &mut Self {
        let compare = Compare::size(set.key(), CollectionKind::Set, op, len);
        self.push_compare(compare);
        self
    }

    /// Requires the map's number of fields to be `op` `len` (0 when it does not exist).
    pub fn when_map_len<F: Codec, V: Codec>(
        &mut self,
        map: &MapHandle<F, V>,
        op: CompareOp,
        len: i64,
    ) -> &mut Self {
        let compare = Compare::size(map.key(), CollectionKind::Map, op, len);
        self.push_compare(compare);
        self
    }

    /// Requires the list's length to be `op` `len` (0 when it does not exist).
    pub fn when_list_len<C: Codec>(
        &mut self,
        list: &ListHandle<C>,
        op: CompareOp,
        len: i64,
    ) -> &mut Self {
        let compare = Compare::size(list.key(), CollectionKind::List, op, len);
        self.push_compare(compare);
        self
    }
}
