//! Percent-escaping of text segments, byte-identical to Go's `url.PathEscape` for `/` keys.
//!
//! Go's `shouldEscape(c, encodePathSegment)` keeps the unreserved bytes `A-Z a-z 0-9 - _ . ~`
//! and, of the reserved bytes `$ & + , / : ; = ? @`, keeps `$ & + : = @` (a path segment
//! escapes `/ ; , ?`). Every other byte, including `%`, space, `{`, `}`, controls and each
//! byte of non-ASCII UTF-8, becomes `%XX` with uppercase hex. Keys separated by `:` escape `:`
//! as well; nothing else differs.

use super::traits::{SegmentError, Separator};

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Whether `b` is written as `%XX` in a segment of a key separated by `sep`.
pub const fn should_escape(b: u8, sep: Separator) -> bool {
    match b {
        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => false,
        b'$' | b'&' | b'+' | b'=' | b'@' => false,
        b':' => matches!(sep, Separator::Colon),
        _ => true,
    }
}

/// Appends `value` percent-escaped for a segment of a key separated by `sep`.
///
/// For [`Separator::Slash`] the output equals Go's `url.PathEscape(value)`.
pub fn escape_into(value: &str, sep: Separator, out: &mut String) {
    out.reserve(value.len());
    for &b in value.as_bytes() {
        if should_escape(b, sep) {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 0xf)] as char);
        } else {
            // Only ASCII bytes are left unescaped, so each is a whole char.
            out.push(b as char);
        }
    }
}

/// Go's `url.PathEscape`: [`escape_into`] with the `/` separator, as a new string.
///
/// ```
/// use keyplane_core::keyspace::path_escape;
/// assert_eq!(path_escape("默认租户"), "%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7");
/// assert_eq!(path_escape("a b/c?d"), "a%20b%2Fc%3Fd");
/// assert_eq!(path_escape("user@host:8080"), "user@host:8080");
/// ```
pub fn path_escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    escape_into(value, Separator::Slash, &mut out);
    out
}

/// Decodes a percent-escaped segment, strictly: the result re-escapes to exactly `raw`.
///
/// # Errors
/// [`SegmentError`] for a byte that should have been escaped, an escape that was not needed,
/// lowercase or malformed hex, or escapes that do not form UTF-8.
pub fn unescape_strict(raw: &str, sep: Separator) -> Result<String, SegmentError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).and_then(|&h| hex_value(h)),
                bytes.get(i + 2).and_then(|&l| hex_value(l)),
            ) else {
                return Err(SegmentError::new(
                    raw,
                    "`%` must be followed by two uppercase hex digits",
                ));
            };
            let decoded = hi << 4 | lo;
            if !should_escape(decoded, sep) {
                return Err(SegmentError::new(
                    raw,
                    format!("`{}` must not be escaped", decoded as char),
                ));
            }
            out.push(decoded);
            i += 3;
        } else if should_escape(b, sep) {
            return Err(SegmentError::new(
                raw,
                format!("byte 0x{b:02X} must be percent-escaped"),
            ));
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| SegmentError::new(raw, "the escaped bytes are not UTF-8"))
}

fn hex_value(h: u8) -> Option<u8> {
    match h {
        b'0'..=b'9' => Some(h - b'0'),
        b'A'..=b'F' => Some(h - b'A' + 10),
        _ => None,
    }
}
