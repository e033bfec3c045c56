//! Redis Cluster key slots: which part of a key is hashed, and to which slot.

/// The part of `key` Redis Cluster hashes: the text between the first `{` and the first `}`
/// after it when that text is not empty, otherwise `None` (the whole key is hashed).
///
/// ```
/// use keyplane_contract::raw::redis_hash_tag;
/// assert_eq!(redis_hash_tag(b"nxc:map:{prod}:openai"), Some(&b"prod"[..]));
/// assert_eq!(redis_hash_tag(b"a{}b{c}"), None);
/// assert_eq!(redis_hash_tag(b"plain"), None);
/// ```
pub fn redis_hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let rest = &key[open + 1..];
    let close = rest.iter().position(|&b| b == b'}')?;
    (close > 0).then(|| &rest[..close])
}

/// The Redis Cluster slot (0–16383) of `key`: CRC16/XMODEM of its hash tag, or of the whole
/// key when it has none.
///
/// ```
/// use keyplane_contract::raw::redis_key_slot;
/// assert_eq!(redis_key_slot(b"123456789"), 0x31C3 % 16384);
/// assert_eq!(redis_key_slot(b"{user1000}.following"), redis_key_slot(b"{user1000}.followers"));
/// ```
pub fn redis_key_slot(key: &[u8]) -> u16 {
    crc16(redis_hash_tag(key).unwrap_or(key)) % 16384
}

fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}
