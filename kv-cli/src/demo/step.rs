//! What each schema's part of the demo did, and the demo's leases.

use std::time::Duration;

/// The TTL of the demo's leases: a day.
pub(crate) const LEASE: Duration = Duration::from_secs(24 * 60 * 60);

/// What one schema's part did.
pub(crate) struct Step {
    pub(super) schema: &'static str,
    pub(super) written: bool,
    pub(super) what: &'static str,
    /// Collection keys (Redis SET, HASH, LIST) with what they hold: key listings do not
    /// show them.
    pub(super) collections: Vec<(String, String)>,
}

impl Step {
    pub(super) fn written(schema: &'static str, what: &'static str) -> Self {
        Step {
            schema,
            written: true,
            what,
            collections: Vec::new(),
        }
    }

    /// Not written on this store: `why`.
    pub(super) fn skipped(schema: &'static str, why: &'static str) -> Self {
        Step {
            schema,
            written: false,
            what: why,
            collections: Vec::new(),
        }
    }

    pub(super) fn present(schema: &'static str, what: &'static str) -> Self {
        Step {
            schema,
            written: false,
            what,
            collections: Vec::new(),
        }
    }
}
