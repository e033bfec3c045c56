//! Percent-escaping is byte-identical to Go's `url.PathEscape` for `/` keys, and decoding is
//! strict. Expected outputs follow Go's `shouldEscape(c, encodePathSegment)`: `A-Za-z0-9 - _ .
//! ~` and `$ & + : = @` stay, everything else (each UTF-8 byte) becomes `%XX`, uppercase.

use keyplane_core::keyspace::{Segment, Separator, escape_into, path_escape, unescape_strict};

/// `(input, url.PathEscape(input))`.
const GO_PATH_ESCAPE: &[(&str, &str)] = &[
    ("默认租户", "%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7"),
    (" ", "%20"),
    ("/", "%2F"),
    ("%", "%25"),
    ("?", "%3F"),
    ("#", "%23"),
    ("+", "+"),
    ("&", "&"),
    ("=", "="),
    (":", ":"),
    ("@", "@"),
    ("~", "~"),
    ("$", "$"),
    (",", "%2C"),
    (";", "%3B"),
    ("😀", "%F0%9F%98%80"),
    ("{", "%7B"),
    ("}", "%7D"),
    ("[", "%5B"),
    ("]", "%5D"),
    ("!", "%21"),
    ("*", "%2A"),
    ("'", "%27"),
    ("(", "%28"),
    (")", "%29"),
    ("\"", "%22"),
    ("<", "%3C"),
    (">", "%3E"),
    ("\\", "%5C"),
    ("^", "%5E"),
    ("`", "%60"),
    ("|", "%7C"),
    ("\t", "%09"),
    ("\0", "%00"),
    ("\u{7f}", "%7F"),
    ("é", "%C3%A9"),
    ("abй日", "ab%D0%B9%E6%97%A5"),
    ("a-b_c.d~e", "a-b_c.d~e"),
    ("ABCxyz019", "ABCxyz019"),
    ("abc+def", "abc+def"),
    ("a/b", "a%2Fb"),
    ("one two", "one%20two"),
    ("10%", "10%25"),
    ("user@host:8080", "user@host:8080"),
    ("a b/c?d", "a%20b%2Fc%3Fd"),
    ("%2F", "%252F"),
    (".", "."),
    ("..", ".."),
    // Go's own url_test.go vector for PathEscape.
    (
        " ?&=#+%!<>#\"{}|\\^[]`☺\t:/@$'()*,;",
        "%20%3F&=%23+%25%21%3C%3E%23%22%7B%7D%7C%5C%5E%5B%5D%60%E2%98%BA%09:%2F@$%27%28%29%2A%2C%3B",
    ),
];

#[test]
fn path_escape_matches_go() {
    assert!(GO_PATH_ESCAPE.len() >= 30);
    for &(input, expected) in GO_PATH_ESCAPE {
        assert_eq!(path_escape(input), expected, "PathEscape({input:?})");
        assert_eq!(
            unescape_strict(expected, Separator::Slash).as_deref(),
            Ok(input),
            "strict unescape of {expected:?}"
        );
    }
}

#[test]
fn colon_keys_escape_the_colon_too() {
    for &(input, slash) in GO_PATH_ESCAPE {
        let mut colon = String::new();
        escape_into(input, Separator::Colon, &mut colon);
        assert_eq!(colon, slash.replace(':', "%3A"), "{input:?}");
        assert!(!colon.contains(':'));
        assert_eq!(
            unescape_strict(&colon, Separator::Colon).as_deref(),
            Ok(input)
        );
    }
}

#[test]
fn strict_unescape_rejects_non_canonical_input() {
    let s = Separator::Slash;
    for bad in [
        "%e9%bb%98", // lowercase hex
        "%41",       // `A` needs no escape
        "%3A",       // `:` needs no escape in a `/` key
        "%7",        // truncated
        "%",         // dangling
        "%G0",       // not hex
        "a b",       // raw space
        "a/b",       // raw separator
        "{x}",       // raw braces
        "默认",      // raw non-ASCII
        "%FF",       // not UTF-8
        "%C3",       // truncated UTF-8
    ] {
        assert!(unescape_strict(bad, s).is_err(), "{bad:?}");
    }
    assert!(unescape_strict("a:b", Separator::Colon).is_err());
    assert_eq!(
        unescape_strict("a%3Ab", Separator::Colon).as_deref(),
        Ok("a:b")
    );
}

keyplane_core::text_segment!(
    /// A service name as existing programs wrote it: anything, escaped.
    ServiceName, max_len = 256, policy = Escape
);

#[test]
fn escape_text_segments_write_what_go_wrote() {
    let name = ServiceName::new("默认租户").unwrap();
    assert_eq!(
        name.to_segment_string(Separator::Slash),
        "%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7"
    );
    let decoded = ServiceName::decode("%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7", Separator::Slash);
    assert_eq!(decoded, Ok(name));
    assert!(ServiceName::decode("%e9%bb%98", Separator::Slash).is_err());
    assert!(ServiceName::new(".").is_err() && ServiceName::new("..").is_err());
    assert!(ServiceName::new("").is_err());
    assert!(ServiceName::new("x".repeat(257)).is_err());
    // `.` as an escaped segment would be `.` again: rejected rather than normalised.
    assert!(ServiceName::decode("%2E", Separator::Slash).is_err());
}
