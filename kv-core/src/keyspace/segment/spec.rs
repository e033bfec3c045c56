//! [`SegmentSpec`]: a segment type's rule as data, so that a schema loaded from a manifest
//! (without the Rust types) checks and parses keys by the same rules as the types.
//!
//! The checks themselves ([`SegmentSpec::check`], [`SegmentSpec::describe`]) call the
//! built-in types' decoders; they live beside the types, in `segment_spec_check`.

use super::charset::Charset;

/// How a text segment treats characters a key cannot hold as is. In a manifest it is the
/// word `"reject"` or `"escape"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TextPolicy {
    /// Values must already be key-safe: only charset characters, and never `/`, `:`, `{`,
    /// `}`, `%` or a control character (whatever the charset says). The key holds the value
    /// verbatim.
    Reject,
    /// Any value (within the charset, if one is given) is stored percent-escaped, as Go's
    /// `url.PathEscape` does; see [`escape_into`](super::escape_into).
    Escape,
}

/// The rule of a segment type, as data: what [`Segment::spec`](crate::keyspace::Segment::spec) returns
/// and what a JSON manifest holds for each variable of a template.
///
/// A tool that has only the manifest checks keys with [`SegmentSpec::check`], which accepts
/// exactly what the type's [`Segment::decode`](crate::keyspace::Segment::decode) accepts for every
/// kind but [`SegmentSpec::Custom`]. The JSON form is tagged by `kind`:
///
/// ```
/// use keyplane_core::keyspace::{Segment, SegmentSpec, Separator};
///
/// let spec: SegmentSpec = serde_json::from_str(r#"{"kind": "int", "signed": false, "bits": 64}"#)?;
/// assert_eq!(spec, u64::spec());
/// spec.validate()?;
/// assert!(spec.check("42", Separator::Slash).is_ok());
/// assert!(spec.check("042", Separator::Slash).is_err());
///
/// let text: SegmentSpec = serde_json::from_str(
///     r#"{"kind": "text", "charset": "[a-z]", "max_len": 8, "policy": "reject", "except": ["info"]}"#,
/// )?;
/// assert!(text.check("prod", Separator::Slash).is_ok());
/// assert!(text.check("info", Separator::Slash).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[serde(from = "StrictSpec")]
#[non_exhaustive]
pub enum SegmentSpec {
    /// A canonical decimal integer (the built-in integer types): `bits` is 8, 16, 32, 64 or
    /// 128 (`usize`/`isize` are written with their width on the platform that wrote the
    /// spec), `signed` allows a `-`.
    Int {
        /// Whether negative values exist (`i*` types).
        signed: bool,
        /// The width of the type: 8, 16, 32, 64 or 128.
        bits: u8,
    },
    /// Exactly `width` zero-padded decimal digits, as [`Padded`](crate::keyspace::Padded)`<width, T>`
    /// with `T` of `bits` bits (`signed` when `T` is signed: the digits carry no sign, only
    /// the range is smaller).
    Padded {
        /// The number of digits, at least 1.
        width: usize,
        /// Whether `T` is signed.
        signed: bool,
        /// The width of `T`: 8, 16, 32, 64 or 128.
        bits: u8,
    },
    /// A UUID, lowercase hyphenated ([`uuid::Uuid`]).
    Uuid,
    /// A canonical `host:port` ([`HostPort`](crate::keyspace::HostPort)).
    HostPort,
    /// A canonical dotted-decimal IPv4 address ([`std::net::Ipv4Addr`]).
    Ipv4,
    /// Text under a [`TextRule`](crate::keyspace::TextRule) (what [`text_segment!`](crate::text_segment)
    /// declares), minus the words in `except`, refused exactly as written (a service may not
    /// be called `info`, for instance).
    Text {
        /// The character class ([`Charset`] syntax, e.g. `[a-zA-Z0-9_]`); `None` allows any
        /// character.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        charset: Option<String>,
        /// The maximum length of a value, in bytes before escaping; at least 1.
        max_len: usize,
        /// Whether unsafe characters are refused or percent-escaped.
        policy: TextPolicy,
        /// Values refused although the rule allows them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        except: Vec<String>,
    },
    /// A rule only the Rust type knows (a hand-written [`Segment`](crate::keyspace::Segment)), in
    /// words. Without the type, [`SegmentSpec::check`] cannot apply it: it accepts any
    /// segment that every segment type may produce (not empty, not `.` or `..`, without the
    /// separator, `{`, `}` or NUL), so a tool may accept keys the type would refuse.
    Custom {
        /// The rule in words ([`Segment::describe`](crate::keyspace::Segment::describe)).
        rule: String,
    },
}

/// The form a [`SegmentSpec`] is read from: the same JSON, with the field-less kinds as
/// empty structs, because serde lets a unit variant of a tagged enum ignore unknown fields
/// (`{"kind": "uuid", "charset": "[a-z]"}` is a mistake in a manifest, refused here).
#[derive(serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum StrictSpec {
    Int {
        signed: bool,
        bits: u8,
    },
    Padded {
        width: usize,
        signed: bool,
        bits: u8,
    },
    Uuid {},
    HostPort {},
    Ipv4 {},
    Text {
        #[serde(default)]
        charset: Option<String>,
        max_len: usize,
        policy: TextPolicy,
        #[serde(default)]
        except: Vec<String>,
    },
    Custom {
        rule: String,
    },
}

impl From<StrictSpec> for SegmentSpec {
    fn from(spec: StrictSpec) -> Self {
        match spec {
            StrictSpec::Int { signed, bits } => SegmentSpec::Int { signed, bits },
            StrictSpec::Padded {
                width,
                signed,
                bits,
            } => SegmentSpec::Padded {
                width,
                signed,
                bits,
            },
            StrictSpec::Uuid {} => SegmentSpec::Uuid,
            StrictSpec::HostPort {} => SegmentSpec::HostPort,
            StrictSpec::Ipv4 {} => SegmentSpec::Ipv4,
            StrictSpec::Text {
                charset,
                max_len,
                policy,
                except,
            } => SegmentSpec::Text {
                charset,
                max_len,
                policy,
                except,
            },
            StrictSpec::Custom { rule } => SegmentSpec::Custom { rule },
        }
    }
}

/// The integer widths a spec may name.
const BITS: [u8; 5] = [8, 16, 32, 64, 128];

impl SegmentSpec {
    /// Checks the spec itself, as a manifest is loaded: integer widths among 8, 16, 32, 64
    /// and 128, a padded width and a text length of at least 1, a charset that parses.
    /// [`SegmentSpec::check`] refuses every raw segment under a spec this refuses.
    ///
    /// # Errors
    /// A message naming what is wrong with the spec.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            SegmentSpec::Int { bits, .. } => check_bits(*bits),
            SegmentSpec::Padded { width, bits, .. } => {
                check_bits(*bits)?;
                if *width == 0 {
                    return Err("a padded segment has at least 1 digit".into());
                }
                Ok(())
            }
            SegmentSpec::Text {
                charset, max_len, ..
            } => {
                if *max_len == 0 {
                    return Err("a text segment's max_len is at least 1".into());
                }
                match charset {
                    Some(class) => Charset::parse(class)
                        .map(drop)
                        .map_err(|e| format!("invalid charset {class:?}: {e}")),
                    None => Ok(()),
                }
            }
            SegmentSpec::Uuid
            | SegmentSpec::HostPort
            | SegmentSpec::Ipv4
            | SegmentSpec::Custom { .. } => Ok(()),
        }
    }

    /// Whether encodings sort like values, as [`Segment::ORDERED`](crate::keyspace::Segment::ORDERED)
    /// of the type: padded integers and UUIDs.
    pub fn ordered(&self) -> bool {
        matches!(self, SegmentSpec::Padded { .. } | SegmentSpec::Uuid)
    }

    /// The spec with `words` refused as well: for a type that wraps a text segment and
    /// refuses a few values of it. A text spec gets them in `except`; any other kind cannot
    /// say so and becomes [`SegmentSpec::Custom`] with the exception in words.
    pub fn with_except(self, words: &[&str]) -> SegmentSpec {
        match self {
            SegmentSpec::Text {
                charset,
                max_len,
                policy,
                mut except,
            } => {
                except.extend(words.iter().map(|w| (*w).to_owned()));
                SegmentSpec::Text {
                    charset,
                    max_len,
                    policy,
                    except,
                }
            }
            other if words.is_empty() => other,
            other => SegmentSpec::Custom {
                rule: format!("{}, {}", other.describe(), except_words(words)),
            },
        }
    }
}

/// Whether `bits` is an integer width a spec may name.
fn check_bits(bits: u8) -> Result<(), String> {
    if BITS.contains(&bits) {
        Ok(())
    } else {
        Err(format!("integer width {bits} is not 8, 16, 32, 64 or 128"))
    }
}

/// `except `a`, `b` and `c``: the refused words, as the types' descriptions write them.
pub(in crate::keyspace) fn except_words<S: AsRef<str>>(words: &[S]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("`{}`", w.as_ref())).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => {
            format!("except {} and {last}", rest.join(", "))
        }
        Some((last, _)) => format!("except {last}"),
        None => String::new(),
    }
}

#[cfg(test)]
// The test text types leave some of their generated methods unused.
#[allow(dead_code)]
mod tests {
    use super::*;
    use crate::keyspace::{HostPort, Padded, Segment, Separator};
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, Ipv6Addr};
    use uuid::Uuid;

    crate::text_segment!(
        Code,
        charset = "[a-zA-Z0-9_]",
        max_len = 64,
        policy = Reject
    );
    crate::text_segment!(Slug, charset = "[a-z0-9-]", max_len = 8, policy = Reject);
    crate::text_segment!(Verbatim, charset = "[^\n]", max_len = 16, policy = Reject);
    crate::text_segment!(Label, max_len = 32, policy = Escape);
    crate::text_segment!(
        Han,
        charset = "[\u{4e00}-\u{9fff}a-z]",
        max_len = 12,
        policy = Escape
    );

    const SEPS: [Separator; 2] = [Separator::Slash, Separator::Colon];

    /// Whether a raw segment decodes as the type.
    type Decodes = fn(&str, Separator) -> bool;

    /// `(type, spec, decodes)` of every type under test.
    macro_rules! table {
        ($($t:ty),* $(,)?) => {
            vec![$((
                stringify!($t),
                <$t as Segment>::spec(),
                (|raw, sep| <$t as Segment>::decode(raw, sep).is_ok()) as Decodes,
            )),*]
        };
    }

    fn types() -> Vec<(&'static str, SegmentSpec, Decodes)> {
        table![
            u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize,
            Padded<1, u8>, Padded<3, u8>, Padded<5, u16>, Padded<10, u32>, Padded<20, u64>,
            Padded<39, u128>, Padded<40, u128>,
            Uuid, HostPort, Ipv4Addr, Code, Slug, Verbatim, Label, Han,
        ]
    }

    /// Asserts that every spec accepts `raw` exactly when its type decodes it, under both
    /// separators.
    fn assert_agree(raw: &str) {
        for (name, spec, decodes) in types() {
            for sep in SEPS {
                assert_eq!(
                    spec.check(raw, sep).is_ok(),
                    decodes(raw, sep),
                    "{name} on {raw:?} with {sep:?}"
                );
            }
        }
    }

    /// Pieces of adversarial segments: signs, zeros, bounds of every width, separators,
    /// escapes, braces, dots, controls, non-ASCII, near-UUIDs and near-addresses.
    const PIECES: &[&str] = &[
        "",
        "0",
        "00",
        "-0",
        "-",
        "+",
        "+1",
        "1",
        "9",
        "10",
        "127",
        "128",
        "-128",
        "-129",
        "255",
        "256",
        "32767",
        "65535",
        "65536",
        "2147483648",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551615",
        "18446744073709551616",
        "170141183460469231731687303715884105727",
        "170141183460469231731687303715884105728",
        "340282366920938463463374607431768211455",
        "340282366920938463463374607431768211456",
        "/",
        ":",
        "%",
        "%2F",
        "%2f",
        "%3A",
        "%3a",
        "%25",
        "%20",
        "%E9%BB%98",
        "%G0",
        "{",
        "}",
        ".",
        "..",
        "\0",
        "\n",
        "\t",
        "\u{7f}",
        "é",
        "默认",
        "😀",
        " ",
        "a",
        "A",
        "z",
        "_",
        "info",
        "group",
        "67e55044-10b1-426f-9247-bb680e5fe0c8",
        "67E55044-10B1-426F-9247-BB680E5FE0C8",
        "67e5504410b1426f9247bb680e5fe0c8",
        "10.0.0.1",
        "127.000.0.1",
        "1.2.3",
        "[::1]",
        "[2001:db8::1]",
        "[2001:DB8::1]",
        "[::ffff:1.2.3.4]",
        "api.example.com",
        "API.example.com",
        "-a.com",
        "8080",
        "080",
        "0.0.0.0",
    ];

    fn adversarial() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::collection::vec(prop::sample::select(PIECES), 0..6).prop_map(|p| p.concat()),
            ".{0,80}",
            "[0-9]{0,45}",
            "-?[0-9]{1,40}",
            "[0-9a-fA-F-]{30,40}",
            (1usize..400).prop_map(|n| "a".repeat(n)),
        ]
    }

    /// Canonical encodings of every type, under `sep`.
    fn valid(sep: Separator) -> BoxedStrategy<String> {
        let enc = move |s: &dyn Fn(&mut String)| {
            let mut out = String::new();
            s(&mut out);
            out
        };
        prop_oneof![
            any::<u8>().prop_map(move |v| v.to_segment_string(sep)),
            any::<u16>().prop_map(move |v| v.to_segment_string(sep)),
            any::<i32>().prop_map(move |v| v.to_segment_string(sep)),
            any::<i64>().prop_map(move |v| v.to_segment_string(sep)),
            any::<u128>().prop_map(move |v| v.to_segment_string(sep)),
            any::<i128>().prop_map(move |v| v.to_segment_string(sep)),
            any::<u8>().prop_map(|v| format!("{v:03}")),
            any::<u16>().prop_map(|v| format!("{v:05}")),
            any::<u64>().prop_map(|v| format!("{v:020}")),
            any::<u128>().prop_map(|v| format!("{v:039}")),
            any::<[u8; 16]>().prop_map(move |b| Uuid::from_bytes(b).to_segment_string(sep)),
            any::<[u8; 4]>().prop_map(move |b| Ipv4Addr::from(b).to_segment_string(sep)),
            (any::<[u8; 4]>(), 1u16..).prop_map(move |(b, port)| {
                enc(&|out| {
                    drop(
                        HostPort::parse(&format!("{}:{port}", Ipv4Addr::from(b)))
                            .map(|hp| hp.encode(sep, out)),
                    )
                })
            }),
            (any::<[u16; 8]>(), 1u16..).prop_map(move |(b, port)| {
                enc(&|out| {
                    drop(
                        HostPort::parse(&format!("[{}]:{port}", Ipv6Addr::from(b)))
                            .map(|hp| hp.encode(sep, out)),
                    )
                })
            }),
            ("[a-z0-9-]{1,10}(\\.[a-z][a-z0-9]{0,4}){0,2}", 1u16..).prop_map(move |(h, port)| {
                enc(&|out| {
                    drop(HostPort::parse(&format!("{h}:{port}")).map(|hp| hp.encode(sep, out)))
                })
            }),
            "[a-zA-Z0-9_]{1,64}",
            "[^\n]{1,16}".prop_map(move |v| enc(&|out| drop(
                Verbatim::new(v.clone()).map(|t| t.encode(sep, out))
            ))),
            ".{1,32}".prop_map(move |v| enc(&|out| drop(
                Label::new(v.clone()).map(|t| t.encode(sep, out))
            ))),
            "[\u{4e00}-\u{4e10}a-z]{1,4}".prop_map(move |v| enc(&|out| drop(
                Han::new(v.clone()).map(|t| t.encode(sep, out))
            ))),
        ]
        .boxed()
    }

    proptest! {
        #[test]
        fn specs_agree_with_decode_on_adversarial_segments(raw in adversarial()) {
            assert_agree(&raw);
        }

        #[test]
        fn specs_agree_with_decode_on_canonical_segments(
            slash in valid(Separator::Slash),
            colon in valid(Separator::Colon),
        ) {
            assert_agree(&slash);
            assert_agree(&colon);
        }
    }

    #[test]
    fn specs_agree_with_decode_on_edge_cases() {
        for piece in PIECES {
            assert_agree(piece);
        }
        for raw in [
            "0".repeat(3),
            "0".repeat(40),
            format!("{}1", "0".repeat(38)),
            "9".repeat(39),
            "1".repeat(500),
            "a".repeat(64),
            "a".repeat(65),
            "é".repeat(6),
            "%E9%BB%98%E8%AE%A4".to_owned(),
            "10.0.0.1%3A8080".to_owned(),
            "10.0.0.1:8080".to_owned(),
            "[2001%3Adb8%3A%3A1]%3A443".to_owned(),
        ] {
            assert_agree(&raw);
        }
    }

    #[test]
    fn specs_describe_and_order_like_their_types() {
        for (name, spec, _) in types() {
            spec.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!spec.describe().is_empty(), "{name}");
        }
        macro_rules! same {
            ($($t:ty),*) => {$(
                assert_eq!(<$t>::spec().describe(), <$t>::describe(), stringify!($t));
                assert_eq!(<$t>::spec().ordered(), <$t>::ORDERED, stringify!($t));
            )*};
        }
        same!(u8, u64, i8, i128, Padded<3, u8>, Padded<20, u64>, Uuid, HostPort, Ipv4Addr);
        same!(Code, Slug, Verbatim, Label, Han);
        assert_eq!(usize::spec(), u64::spec());
        assert_eq!(usize::spec().ordered(), usize::ORDERED);
    }

    #[test]
    fn json_form_of_every_kind() {
        let cases = [
            (u64::spec(), r#"{"kind":"int","signed":false,"bits":64}"#),
            (i8::spec(), r#"{"kind":"int","signed":true,"bits":8}"#),
            (
                Padded::<10, u32>::spec(),
                r#"{"kind":"padded","width":10,"signed":false,"bits":32}"#,
            ),
            (Uuid::spec(), r#"{"kind":"uuid"}"#),
            (HostPort::spec(), r#"{"kind":"host_port"}"#),
            (Ipv4Addr::spec(), r#"{"kind":"ipv4"}"#),
            (
                Slug::spec().with_except(&["info", "new"]),
                r#"{"kind":"text","charset":"[a-z0-9-]","max_len":8,"policy":"reject","except":["info","new"]}"#,
            ),
            (
                Label::spec(),
                r#"{"kind":"text","max_len":32,"policy":"escape"}"#,
            ),
            (
                SegmentSpec::Custom {
                    rule: "eu or us".into(),
                },
                r#"{"kind":"custom","rule":"eu or us"}"#,
            ),
        ];
        for (spec, json) in cases {
            assert_eq!(serde_json::to_string(&spec).unwrap(), json);
            assert_eq!(
                serde_json::from_str::<SegmentSpec>(json).unwrap(),
                spec,
                "{json}"
            );
        }
        for bad in [
            r#"{"kind":"int","signed":false,"bits":64,"extra":1}"#,
            r#"{"kind":"int","signed":false}"#,
            r#"{"kind":"text","max_len":8,"policy":"Reject"}"#,
            r#"{"kind":"text","max_len":8,"policy":"reject","charset":"[a-z]","x":[]}"#,
            r#"{"kind":"float","bits":64}"#,
            r#"{"kind":"uuid","x":1}"#,
            r#"{"signed":false,"bits":64}"#,
        ] {
            assert!(serde_json::from_str::<SegmentSpec>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_specs_are_refused_and_never_panic() {
        let text = |charset: Option<&str>, max_len| SegmentSpec::Text {
            charset: charset.map(str::to_owned),
            max_len,
            policy: TextPolicy::Reject,
            except: Vec::new(),
        };
        let bad = [
            SegmentSpec::Int {
                signed: false,
                bits: 7,
            },
            SegmentSpec::Int {
                signed: true,
                bits: 0,
            },
            SegmentSpec::Int {
                signed: true,
                bits: 255,
            },
            SegmentSpec::Padded {
                width: 0,
                signed: false,
                bits: 8,
            },
            SegmentSpec::Padded {
                width: 3,
                signed: false,
                bits: 12,
            },
            text(Some("[z-a]"), 8),
            text(Some("[]"), 8),
            text(Some("a\\"), 8),
            text(Some("[a-z]"), 0),
            text(None, 0),
        ];
        for spec in bad {
            assert!(spec.validate().is_err(), "{spec:?}");
            assert!(!spec.describe().is_empty());
            for raw in PIECES {
                for sep in SEPS {
                    assert!(spec.check(raw, sep).is_err(), "{spec:?} accepted {raw:?}");
                }
            }
            let field = crate::keyspace::FieldInfo::from_spec("x", "Bad", spec);
            assert!(!field.can_produce("1", Separator::Slash));
        }
    }

    #[test]
    fn custom_and_except_rules() {
        let custom = SegmentSpec::Custom {
            rule: "eu or us".into(),
        };
        let s = Separator::Slash;
        assert!(custom.check("eu", s).is_ok() && custom.check("a:b", s).is_ok());
        for bad in ["", ".", "..", "a/b", "{x}", "a\0b"] {
            assert!(custom.check(bad, s).is_err(), "{bad:?}");
        }
        assert!(custom.check("a:b", Separator::Colon).is_err());
        assert!(!custom.ordered());

        let slug = Slug::spec().with_except(&["info"]);
        assert!(slug.check("info", s).is_err() && slug.check("infos", s).is_ok());
        assert!(slug.describe().ends_with(", except `info`"));
        let two = Slug::spec().with_except(&["group", "index"]);
        assert!(two.describe().ends_with(", except `group` and `index`"));
        // An escaped text refuses the word by its value, not its encoding.
        let label = Label::spec().with_except(&["a/b"]);
        assert!(label.check("a%2Fb", s).is_err() && label.check("a%2Fc", s).is_ok());
        // Other kinds cannot say it: they become a rule in words.
        let int = u8::spec().with_except(&["0"]);
        assert!(matches!(&int, SegmentSpec::Custom { rule } if rule.ends_with("except `0`")));
        assert_eq!(u8::spec().with_except(&[]), u8::spec());
    }

    #[test]
    fn fields_from_specs_check_like_typed_fields() {
        use crate::keyspace::FieldInfo;
        let typed = FieldInfo::of::<Padded<3, u8>>("n");
        let loaded = FieldInfo::from_spec("n", "Padded<3, u8>", typed.spec.clone());
        assert_eq!(
            (loaded.rule.as_str(), loaded.ordered),
            (typed.rule.as_str(), true)
        );
        for raw in ["007", "255", "256", "7", "-07"] {
            for sep in SEPS {
                assert_eq!(
                    loaded.check(raw, sep).is_ok(),
                    typed.check(raw, sep).is_ok()
                );
                assert_eq!(loaded.can_produce(raw, sep), typed.can_produce(raw, sep));
            }
        }
    }
}
