//! `#[derive(Keyspace)]` with `#[kv(value_enum = ..)]`: the schema's values as a type. Each
//! template decodes into its own variant with its own codec, a `raw` variant keeps the bytes,
//! and a value that does not decode is an error of its template's codec.

use keyplane_core::ErrorKind;
use keyplane_core::keyspace::{CodecContext, Json, Key, Keyspace, KeyspaceValues, Text, ValueOf};

#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
struct Meta {
    code: String,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "app/{id}/meta", value = Json<Meta>)]
struct MetaKey {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "app/{id}/name", value = Text)]
struct NameKey {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "app/{id}/alias", value = Text)]
struct AliasKey {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "app/{id}/members", set = Text)]
struct MembersKey {
    id: u64,
}

/// The application's keys.
#[derive(Keyspace, Debug, Clone, PartialEq)]
#[kv(value_enum = AppValue)]
enum App {
    /// `app/{id}/meta`
    Meta(MetaKey),
    /// `app/{id}/name`
    Name(NameKey),
    /// Two templates with one codec still get a variant each.
    Alias(AliasKey),
    /// A set: its plain value, if another program wrote one, stays bytes.
    #[kv(raw)]
    Members(MembersKey),
}

fn decode(raw: &str, bytes: &[u8]) -> keyplane_core::Result<AppValue> {
    App::parse(raw)
        .unwrap()
        .decode_value(bytes, &CodecContext::new())
}

#[test]
fn each_template_decodes_into_its_own_variant() {
    assert_eq!(
        decode("app/1/meta", br#"{"code":"a"}"#).unwrap(),
        AppValue::Meta(Meta { code: "a".into() })
    );
    assert_eq!(
        decode("app/1/name", b"first").unwrap(),
        AppValue::Name("first".into())
    );
    // Same codec, same value type: the variant still says which template it came from.
    assert_eq!(
        decode("app/1/alias", b"first").unwrap(),
        AppValue::Alias("first".into())
    );
    assert_ne!(
        decode("app/1/alias", b"x").unwrap(),
        decode("app/1/name", b"x").unwrap()
    );
}

#[test]
fn raw_variants_keep_the_stored_bytes() {
    assert_eq!(
        decode("app/1/members", b"\xff not text").unwrap(),
        AppValue::Members(b"\xff not text".to_vec())
    );
}

#[test]
fn a_value_that_does_not_decode_is_a_codec_error() {
    let err = decode("app/1/meta", b"not json").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec);
    assert_eq!(
        decode("app/1/name", b"\xff").unwrap_err().kind(),
        ErrorKind::Codec
    );
}

#[test]
fn value_variants_hold_the_key_value_types() {
    // The generated variant's field is the key's `ValueOf`: this only compiles if it is.
    fn meta(value: AppValue) -> Option<ValueOf<MetaKey>> {
        match value {
            AppValue::Meta(meta) => Some(meta),
            _ => None,
        }
    }
    let value: <App as KeyspaceValues>::Value = AppValue::Meta(Meta { code: "m".into() });
    assert_eq!(meta(value.clone()).unwrap().code, "m");
    assert_eq!(meta(AppValue::Name("n".into())), None);
    assert!(format!("{value:?}").starts_with("Meta("));
    let _ = MembersKey { id: 1 }.encode();
}
