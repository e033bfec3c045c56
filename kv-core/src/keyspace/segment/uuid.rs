//! UUID segments: lowercase hyphenated only.

use super::spec::SegmentSpec;
use super::traits::{Segment, SegmentError, Separator};
use uuid::Uuid;

/// Lowercase hexadecimal of fixed width sorts like the UUID's bytes, so UUIDs are ordered.
impl Segment for Uuid {
    const ORDERED: bool = true;

    fn encode(&self, _sep: Separator, out: &mut String) {
        let mut buf = Uuid::encode_buffer();
        out.push_str(self.hyphenated().encode_lower(&mut buf));
    }

    fn decode(raw: &str, _sep: Separator) -> Result<Self, SegmentError> {
        let canonical = raw.len() == 36
            && raw.bytes().enumerate().all(|(i, b)| match i {
                8 | 13 | 18 | 23 => b == b'-',
                _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
            });
        if !canonical {
            return Err(SegmentError::new(
                raw,
                "a UUID is written lowercase and hyphenated (8-4-4-4-12)",
            ));
        }
        Uuid::try_parse(raw).map_err(|e| SegmentError::new(raw, e.to_string()))
    }

    fn describe() -> String {
        "UUID, lowercase hyphenated (8-4-4-4-12 hex digits)".into()
    }

    fn spec() -> SegmentSpec {
        SegmentSpec::Uuid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowercase_hyphenated_only() {
        let s = Separator::Slash;
        let text = "67e55044-10b1-426f-9247-bb680e5fe0c8";
        let id = Uuid::decode(text, s).unwrap();
        assert_eq!(id.to_segment_string(s), text);
        for bad in [
            "67E55044-10B1-426F-9247-BB680E5FE0C8",
            "67e5504410b1426f9247bb680e5fe0c8",
            "{67e55044-10b1-426f-9247-bb680e5fe0c8}",
            "urn:uuid:67e55044-10b1-426f-9247-bb680e5fe0c8",
            "67e55044-10b1-426f-9247-bb680e5fe0c",
            "67e55044-10b1-426f-9247-bb680e5fe0c8 ",
        ] {
            assert!(Uuid::decode(bad, s).is_err(), "{bad}");
        }
    }
}
