//! The API key object: the fields of its HASH.

use keyplane_core::{Error, ErrorKind, Result};
use std::fmt;

/// The HASH field holding the key's secret value.
pub const API_KEY_FIELD: &str = "api_key";
/// The HASH field holding the key's status.
pub const STATUS_FIELD: &str = "status";

/// A key's status: only active keys are in their groups' active lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyStatus {
    /// `active`: handed out by rotation.
    Active,
    /// `disabled`: kept, never handed out.
    Disabled,
}

impl KeyStatus {
    /// The stored text: `active` or `disabled`.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyStatus::Active => "active",
            KeyStatus::Disabled => "disabled",
        }
    }

    /// Parses the stored text.
    ///
    /// # Errors
    /// `Codec` for anything but `active` or `disabled`.
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "active" => Ok(KeyStatus::Active),
            "disabled" => Ok(KeyStatus::Disabled),
            other => Err(Error::new(ErrorKind::Codec, "unknown key status")
                .with_context("status", format!("{other:?}"))),
        }
    }
}

impl fmt::Display for KeyStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An API key object as cached: `key:{id}` HASH `{api_key, status}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    /// The key's secret value (never empty).
    pub api_key: String,
    /// Its status.
    pub status: KeyStatus,
}

/// A key to bulk-load: its id, object and groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedKey {
    /// The key's id.
    pub id: u64,
    /// The key object.
    pub record: ApiKeyRecord,
    /// The groups it belongs to (duplicates ignored).
    pub groups: Vec<u64>,
}

/// What a bulk load did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadReport {
    /// Keys loaded.
    pub keys: usize,
    /// Transactions sent.
    pub txns: usize,
}
