//! The rules every key obeys on every backend, and the byte helpers backends share.

use crate::error::{Error, Result};

/// The longest key any backend accepts, in bytes.
pub const MAX_KEY_LEN: usize = 4096;

/// Checks the rules every key obeys on every backend: not empty, at most [`MAX_KEY_LEN`]
/// bytes, and no NUL byte (NUL is reserved: ordered backends use it to lay out collection
/// members, so no user key can collide with them).
///
/// # Errors
/// [`ErrorKind::InvalidKey`](crate::ErrorKind::InvalidKey) naming the rule that failed.
pub fn validate_key(key: &[u8]) -> Result<()> {
    if key.is_empty() {
        return Err(Error::invalid_key("a key must not be empty"));
    }
    validate_key_bytes(key)
}

/// Checks a prefix: the same rules as [`validate_key`], except that `allow_empty` says whether
/// the empty prefix (the whole keyspace) is accepted.
///
/// # Errors
/// [`ErrorKind::InvalidKey`](crate::ErrorKind::InvalidKey) naming the rule that failed.
pub fn validate_prefix(prefix: &[u8], allow_empty: bool) -> Result<()> {
    if prefix.is_empty() && !allow_empty {
        return Err(Error::invalid_key("an empty prefix would match every key"));
    }
    validate_key_bytes(prefix)
}

fn validate_key_bytes(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(Error::invalid_key(format!(
            "a key is at most {MAX_KEY_LEN} bytes, this one has {}",
            key.len()
        )));
    }
    if key.contains(&0) {
        return Err(
            Error::invalid_key("a key must not contain a NUL byte (reserved)")
                .with_context("key", escape_bytes(key)),
        );
    }
    Ok(())
}

/// The smallest key greater than every key that starts with `prefix`, or `None` when no such
/// key exists (the prefix is empty or all `0xFF`): then the range is unbounded above.
///
/// ```
/// assert_eq!(keyplane_contract::raw::prefix_end(b"a/"), Some(b"a0".to_vec()));
/// assert_eq!(keyplane_contract::raw::prefix_end(b"a\xff"), Some(b"b".to_vec()));
/// assert_eq!(keyplane_contract::raw::prefix_end(b"\xff\xff"), None);
/// ```
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Renders bytes for messages: UTF-8 as is, other bytes as `\xNN`.
pub fn escape_bytes(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes.escape_ascii().collect::<Vec<u8>>()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_rules() {
        assert!(validate_key(b"").is_err());
        assert!(validate_key(b"a\0b").is_err());
        assert!(validate_key(&vec![b'a'; MAX_KEY_LEN + 1]).is_err());
        assert!(validate_key(b"jxt/tenants/1/meta").is_ok());
        assert!(validate_prefix(b"", false).is_err());
        assert!(validate_prefix(b"", true).is_ok());
    }

    #[test]
    fn prefix_end_carries_over_ff() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b""), None);
    }
}
