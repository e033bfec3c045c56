//! Encrypted values (`Encrypted` codecs, such as nxc's pool): `kvctl get` decrypts them with
//! a keyring given by `--keyring FILE` (or `KVCTL_KEYRING`), and otherwise says which key id
//! sealed them instead of printing ciphertext. Key material never reaches the output or the
//! logs: errors name the file and the key ids only.
//!
//! The keyring file is JSON: `{"current": "2026-01", "keys": {"2025-01": "<base64 of 32
//! bytes>", "2026-01": "..."}}`; `current` may be left out when there is one key.

use crate::error::{CliError, CliResult};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use keyplane::keyspace::{EncryptionKey, Keyring};
use serde_json::Value;

/// Reads the keyring file at `path`.
///
/// # Errors
/// Exit code 2 naming the file and what is wrong, never a key's bytes.
pub(crate) fn load(path: &str) -> CliResult<Keyring> {
    let bad = |why: String| CliError::invalid(format!("keyring {path}: {why}"));
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|_| bad("not JSON (expected {\"current\": ID, \"keys\": {ID: BASE64}})".into()))?;
    let keys = doc
        .get("keys")
        .and_then(Value::as_object)
        .filter(|k| !k.is_empty())
        .ok_or_else(|| bad("no `keys` object of key id to base64 key".into()))?;
    let current = match doc.get("current") {
        Some(Value::String(id)) => id.clone(),
        None if keys.len() == 1 => keys.keys().next().cloned().unwrap_or_default(),
        _ => return Err(bad("`current` must name the key that encrypts".into())),
    };
    let key = |id: &str| -> CliResult<EncryptionKey> {
        let text = keys
            .get(id)
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("no key with id {id:?}")))?;
        let bytes = B64
            .decode(text.trim())
            .map_err(|_| bad(format!("the key {id:?} is not base64")))?;
        EncryptionKey::from_slice(&bytes)
            .map_err(|_| bad(format!("the key {id:?} is not 32 bytes")))
    };
    let mut ring = Keyring::new(current.clone(), key(&current)?)
        .map_err(|e| bad(format!("key id {current:?}: {}", e.message())))?;
    for id in keys.keys().filter(|id| **id != current) {
        ring = ring
            .with_key(id.clone(), key(id)?)
            .map_err(|e| bad(format!("key id {id:?}: {}", e.message())))?;
    }
    Ok(ring)
}

/// How an encrypted value is shown: its plaintext with a keyring, else a note naming the key
/// id that sealed it.
pub(crate) enum Shown {
    Plain(Vec<u8>),
    Sealed { key_id: String },
}

/// Opens `envelope` with `keyring` when one is given.
///
/// # Errors
/// Exit code 2 when the value is not an envelope, or the keyring cannot open it (a key id
/// it lacks, a failed authentication).
pub(crate) fn show(key: &str, envelope: &[u8], keyring: Option<&Keyring>) -> CliResult<Shown> {
    let key_id = Keyring::envelope_key_id(envelope)
        .map_err(|e| {
            CliError::invalid(format!(
                "{key}: the value is not an encrypted envelope: {}",
                e.message()
            ))
        })?
        .to_owned();
    match keyring {
        None => Ok(Shown::Sealed { key_id }),
        Some(ring) => ring
            .decrypt_for(key.as_bytes(), envelope)
            .map(Shown::Plain)
            .map_err(|e| {
                let ids: Vec<&str> = ring.ids().collect();
                CliError::invalid(format!(
                    "{key}: sealed with key id {key_id:?}, which the keyring ({}) cannot open: {}",
                    ids.join(", "),
                    e.message()
                ))
            }),
    }
}
