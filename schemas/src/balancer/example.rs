//! A realistic example dataset, written through the operations (used by `kvctl demo`).

use super::cache::Balancer;
use super::values::{ApiKeyRecord, KeyStatus, LoadReport, LoadedKey};
use keyplane_core::Result;

/// The groups of the example and their keys: three groups of five keys, keys 4, 5, 7 and 8
/// shared by two groups.
pub const EXAMPLE_GROUPS: [(u64, [u64; 5]); 3] = [
    (1, [1, 2, 3, 4, 5]),
    (2, [4, 5, 6, 7, 8]),
    (3, [7, 8, 9, 10, 11]),
];

/// Writes the example through [`Balancer::load_keys`]: keys 1 to 11 (`sk-demo-{id}`, all
/// active), linked as [`EXAMPLE_GROUPS`] says.
///
/// # Errors
/// Backend errors.
pub async fn write_example(cache: &Balancer) -> Result<LoadReport> {
    let keys: Vec<LoadedKey> = (1..=11)
        .map(|id| LoadedKey {
            id,
            record: ApiKeyRecord {
                api_key: format!("sk-demo-{id:04}"),
                status: KeyStatus::Active,
            },
            groups: EXAMPLE_GROUPS
                .iter()
                .filter(|(_, keys)| keys.contains(&id))
                .map(|(group, _)| *group)
                .collect(),
        })
        .collect();
    cache.load_keys(&keys).await
}
