//! The API key object: the fields of its HASH.

use std::fmt;

/// The HASH field holding the key's secret value.
pub const API_KEY_FIELD: &str = "api_key";
/// The HASH field holding the key's status.
pub const STATUS_FIELD: &str = "status";

/// A key's status: only active keys are in their groups' active lists.
///
/// The document gives `active` and `disabled` as examples ("例如"), and the service that
/// shares the cache may write others: any other text is kept as it is ([`Other`]), byte
/// for byte, and such a key is treated as not active (never in a list, never picked).
/// Reads never fail on a status; `kvctl lint` reports the ones this library does not know.
///
/// [`Other`]: KeyStatus::Other
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeyStatus {
    /// `active`: handed out by rotation.
    Active,
    /// `disabled`: kept, never handed out.
    Disabled,
    /// Any other stored text (`suspended`, `Active`...): kept as written, never handed out.
    Other(String),
}

impl KeyStatus {
    /// The stored text: `active`, `disabled`, or the other status as written.
    pub fn as_str(&self) -> &str {
        match self {
            KeyStatus::Active => "active",
            KeyStatus::Disabled => "disabled",
            KeyStatus::Other(text) => text,
        }
    }

    /// Whether the key is handed out by rotation: its stored text is `active` (an
    /// [`Other`](KeyStatus::Other) spelling `active` counts too, since it stores the same
    /// bytes).
    pub fn is_active(&self) -> bool {
        self.as_str() == "active"
    }

    /// Whether the status is one of the document's (`active` or `disabled`).
    pub fn is_known(&self) -> bool {
        matches!(self.as_str(), "active" | "disabled")
    }
}

impl From<&str> for KeyStatus {
    /// The status stored as `text`: `active`, `disabled`, or any other text, kept exactly.
    fn from(text: &str) -> Self {
        match text {
            "active" => KeyStatus::Active,
            "disabled" => KeyStatus::Disabled,
            other => KeyStatus::Other(other.to_owned()),
        }
    }
}

impl From<String> for KeyStatus {
    /// As `From<&str>`, reusing the string for an other status.
    fn from(text: String) -> Self {
        match text.as_str() {
            "active" => KeyStatus::Active,
            "disabled" => KeyStatus::Disabled,
            _ => KeyStatus::Other(text),
        }
    }
}

impl fmt::Display for KeyStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An API key object as cached: `key:{id}` HASH `{api_key, status}`.
///
/// Its `Debug` shows `api_key: ***`: the value is a secret, like a keyring's keys, and
/// must not reach logs or panic messages.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    /// The key's secret value (never empty).
    pub api_key: String,
    /// Its status.
    pub status: KeyStatus,
}

impl fmt::Debug for ApiKeyRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKeyRecord")
            .field("api_key", &format_args!("***"))
            .field("status", &self.status)
            .finish()
    }
}

/// A key to bulk-load: its id, object and groups. Its `Debug` hides the API key, as
/// [`ApiKeyRecord`]'s does.
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
