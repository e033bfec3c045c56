//! The typed keys of the mirror measures (the mirror bench and the report's memory section):
//! `{root}/item/{id}` with a text value, listed under `{root}/item/`.

use keyplane_core::keyspace::{Key, Prefix, Text};

keyplane_core::text_segment!(
    /// The root of a run's items.
    pub Root, charset = "[a-z0-9-]", max_len = 63, policy = Reject
);

/// One item.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "{root}/item/{id}", value = Text)]
pub struct ItemKey {
    pub root: Root,
    pub id: u64,
}

/// Every item under a root.
#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "{root}/item/", key = ItemKey)]
pub struct Items {
    pub root: Root,
}
