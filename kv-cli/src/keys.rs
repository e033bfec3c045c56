//! Keys as text, both ways, so that any key, binary ones included, round-trips through the
//! command line.
//!
//! Printed, a key keeps its plain UTF-8 characters, and every other byte is escaped as
//! [`keyplane::raw::escape_bytes`] writes it (as the rest of the project prints keys):
//! `\\` for a backslash, `\n`, `\r`, `\t`, and `\xNN` for any other control byte or a byte
//! that is not UTF-8. With `--hex`, every byte of a key is printed `\xNN`, as `etcdctl --hex`
//! prints it (and a value in a table as well).
//!
//! Read back, a raw key argument is always unescaped the same way: `\\` is a backslash,
//! `\xNN` a byte, `\n`, `\r`, `\t`, `\0`, `\'` and `\"` as in Rust; other characters stand for
//! themselves; a backslash before anything else is refused. So a key printed by `ls`, `watch`
//! or `txn`, with or without `--hex`, is passed back to `get`, `put`, `rm` or `watch` as
//! printed, and a key holding a literal backslash is typed with `\\`. A printed key is
//! unambiguous: a backslash in it always starts an escape.

use keyplane::raw::escape_bytes;
use std::sync::atomic::{AtomicBool, Ordering};

/// `--hex`: keys (and values in tables) printed as `\xNN` bytes.
static HEX: AtomicBool = AtomicBool::new(false);

/// Turns `--hex` on or off for the run.
pub(crate) fn set_hex(on: bool) {
    HEX.store(on, Ordering::Relaxed);
}

/// Whether `--hex` is on.
pub(crate) fn hex() -> bool {
    HEX.load(Ordering::Relaxed)
}

/// A key as printed: escaped (see the module docs), or every byte `\xNN` with `--hex`.
pub(crate) fn text(key: &[u8]) -> String {
    if hex() { hex_text(key) } else { escape(key) }
}

/// Every byte as `\xNN`, as `etcdctl --hex` prints keys and values.
pub(crate) fn hex_text(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\x{b:02x}")).collect()
}

/// The escaped form: plain UTF-8 characters as they are, a backslash, control characters
/// and bytes that are not UTF-8 as [`escape_bytes`] writes them.
pub(crate) fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' || c.is_control() {
                let mut buf = [0u8; 4];
                out.push_str(&escape_bytes(c.encode_utf8(&mut buf).as_bytes()));
            } else {
                out.push(c);
            }
        }
        out.push_str(&escape_bytes(chunk.invalid()));
    }
    out
}

/// A key argument's bytes: the escapes of the module docs undone.
///
/// # Errors
/// A message naming the argument for a backslash that starts no escape, or `\x` without two
/// hex digits.
pub(crate) fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let bad = |what: String| {
        format!(
            "{text:?}: {what}; in a key a backslash starts an escape (`\\\\` for a backslash, \
             `\\xNN` for a byte)"
        )
    };
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let byte = match chars.next() {
            Some('\\') => b'\\',
            Some('n') => b'\n',
            Some('r') => b'\r',
            Some('t') => b'\t',
            Some('0') => 0,
            Some('\'') => b'\'',
            Some('"') => b'"',
            Some('x') => {
                let digits: String = chars.by_ref().take(2).collect();
                match u8::from_str_radix(&digits, 16) {
                    Ok(byte) if digits.len() == 2 => byte,
                    _ => return Err(bad(format!("`\\x{digits}` is not two hex digits"))),
                }
            }
            Some(other) => return Err(bad(format!("`\\{other}` is not an escape"))),
            None => return Err(bad("a lone backslash at the end".to_owned())),
        };
        out.push(byte);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_keys_round_trip() {
        let keys: [&[u8]; 6] = [
            b"jxt/tenants/1/meta",
            b"a\x00b\xffc\n\\d",
            "默认/\u{85}x".as_bytes(),
            b"quote\"s and 'single'",
            b"\\x41",
            b"\x01\t\r",
        ];
        for key in keys {
            let printed = escape(key);
            assert_eq!(unescape(&printed).unwrap(), key, "{printed}");
            assert_eq!(unescape(&hex_text(key)).unwrap(), key);
            assert!(!printed.chars().any(char::is_control), "{printed}");
        }
        assert_eq!(escape(b"jxt/tenants/1/meta"), "jxt/tenants/1/meta");
        assert_eq!(escape(b"a\x00b\xffc\n\\d"), r"a\x00b\xffc\n\\d");
        assert_eq!(escape("默认".as_bytes()), "默认");
    }

    #[test]
    fn bad_escapes_are_refused() {
        for text in [r"a\q", r"a\x4", r"a\xzz", "a\\"] {
            let err = unescape(text).unwrap_err();
            assert!(err.contains("backslash"), "{err}");
        }
    }
}
