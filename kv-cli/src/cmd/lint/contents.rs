//! The contents of the collections lint checks.

use crate::error::CliResult;
use keyplane::{CollectionOp, CollectionResult, Store};

/// The members of the set at `key` (none when it is not a set).
pub(super) async fn members(store: &dyn Store, key: &str) -> CliResult<Vec<Vec<u8>>> {
    match store
        .collection(CollectionOp::SetMembers {
            key: key.as_bytes().to_vec(),
        })
        .await?
    {
        CollectionResult::Members(m) => Ok(m),
        _ => Ok(Vec::new()),
    }
}

/// The fields of the map at `key` (none when it is not a map).
pub(super) async fn fields(store: &dyn Store, key: &str) -> CliResult<Vec<(Vec<u8>, Vec<u8>)>> {
    match store
        .collection(CollectionOp::MapGetAll {
            key: key.as_bytes().to_vec(),
        })
        .await?
    {
        CollectionResult::Fields(f) => Ok(f),
        _ => Ok(Vec::new()),
    }
}
