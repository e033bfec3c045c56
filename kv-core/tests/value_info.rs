//! What a template says of its value ([`ValueInfo`]): the codec's format, the JSON Schema of
//! a `Json<T>` whose `T` describes itself, and a check by the codec and `agrees`.

use keyplane_core::ErrorKind;
use keyplane_core::keyspace::{Json, Key, Text, ValueFormat};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, Debug, Clone, PartialEq)]
struct Service {
    id: u64,
    image: String,
}

/// A value type without `JsonSchema`: its key derives all the same.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
struct Opaque {
    n: u32,
}

fn same_id(key: &ServiceKey, service: &Service) -> Result<(), String> {
    if service.id == key.id {
        Ok(())
    } else {
        Err(format!("its id is {}", service.id))
    }
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "acme/services/{id}", value = Json<Service>, agrees = same_id)]
struct ServiceKey {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "acme/opaque/{id}", value = Json<Opaque>)]
struct OpaqueKey {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "acme/notes/{id}", value = Text)]
struct NoteKey {
    id: u64,
}

#[test]
fn a_json_value_that_describes_itself_carries_its_schema() {
    let info = ServiceKey::info();
    assert_eq!(info.value.format, ValueFormat::Json);
    let schema = info.value.json_schema.expect("a JSON Schema");
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(schema["properties"]["image"]["type"], "string", "{schema}");
    let required = schema["required"].as_array().expect("required fields");
    assert!(required.iter().any(|r| r == "id"), "{schema}");
}

#[test]
fn a_json_value_without_a_schema_derives_and_says_so() {
    let info = OpaqueKey::info();
    assert_eq!(info.value.format, ValueFormat::Json);
    assert!(info.value.json_schema.is_none());
    assert!(info.value.check("acme/opaque/1", br#"{"n":1}"#).is_ok());
    assert!(info.value.check("acme/opaque/1", br#"{"n":-1}"#).is_err());
}

#[test]
fn text_values_are_text() {
    let info = NoteKey::info();
    assert_eq!(info.value.format, ValueFormat::Text);
    assert!(info.value.json_schema.is_none());
    assert!(info.value.check("acme/notes/1", b"hello").is_ok());
    assert!(info.value.check("acme/notes/1", b"\xff").is_err());
}

#[test]
fn the_check_decodes_and_asks_the_key() {
    let info = ServiceKey::info();
    let value = br#"{"id":7,"image":"nginx"}"#;
    assert!(info.value.check("acme/services/7", value).is_ok());
    let err = info.value.check("acme/services/8", value).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidValue, "{err}");
    let err = info
        .value
        .check("acme/services/7", br#"{"id":7}"#)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec, "{err}");
    assert!(info.value.check("acme/services/7", b"not json").is_err());
}
