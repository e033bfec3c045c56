//! The collection operations of [`TypedTxn`]: typed set, map and list writes that commit
//! atomically with the transaction's other ops (a value and its index set, for instance).

use super::collections::{ListHandle, MapHandle, SetHandle};
use super::txn::{Branch, TypedTxn};
use crate::collections::CollectionOp;
use crate::keyspace::codec::Codec;
use crate::txn::TxnOp;

impl TypedTxn {
    /// Adds `member` to the set in the success branch.
    pub fn set_add<C: Codec>(&mut self, set: &SetHandle<C>, member: &C::Value) -> &mut Self {
        let key = set.key().to_vec();
        if let Some(member) = self.encode(set.codec(), &key, member) {
            let op = CollectionOp::SetAdd { key, member };
            self.push(Branch::Success, TxnOp::Collection(op));
        }
        self
    }

    /// Removes `member` from the set in the success branch.
    pub fn set_remove<C: Codec>(&mut self, set: &SetHandle<C>, member: &C::Value) -> &mut Self {
        let key = set.key().to_vec();
        if let Some(member) = self.encode(set.codec(), &key, member) {
            let op = CollectionOp::SetRemove { key, member };
            self.push(Branch::Success, TxnOp::Collection(op));
        }
        self
    }

    /// Sets a field of the map in the success branch.
    pub fn map_put<F: Codec, V: Codec>(
        &mut self,
        map: &MapHandle<F, V>,
        field: &F::Value,
        value: &V::Value,
    ) -> &mut Self {
        let key = map.key().to_vec();
        let field = self.encode(map.field_codec(), &key, field);
        let value = self.encode(map.value_codec(), &key, value);
        if let (Some(field), Some(value)) = (field, value) {
            let op = CollectionOp::MapPut { key, field, value };
            self.push(Branch::Success, TxnOp::Collection(op));
        }
        self
    }

    /// Deletes a field of the map in the success branch.
    pub fn map_delete<F: Codec, V: Codec>(
        &mut self,
        map: &MapHandle<F, V>,
        field: &F::Value,
    ) -> &mut Self {
        let key = map.key().to_vec();
        if let Some(field) = self.encode(map.field_codec(), &key, field) {
            let op = CollectionOp::MapDelete { key, field };
            self.push(Branch::Success, TxnOp::Collection(op));
        }
        self
    }

    /// Appends an item to the list in the success branch.
    pub fn list_push<C: Codec>(&mut self, list: &ListHandle<C>, item: &C::Value) -> &mut Self {
        let key = list.key().to_vec();
        if let Some(value) = self.encode(list.codec(), &key, item) {
            let op = CollectionOp::ListPush { key, value };
            self.push(Branch::Success, TxnOp::Collection(op));
        }
        self
    }
}
