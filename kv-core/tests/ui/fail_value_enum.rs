use keyplane_core::keyspace::{Key, Keyspace, Text};

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "a/{x}", value = Text)]
struct AnyKey {
    x: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "b/{x}", set = Text)]
struct SetOfKey {
    x: u64,
}

// `raw` describes the value enum: without one it is a mistake.
#[derive(Keyspace, Debug, Clone, PartialEq)]
enum NoValues {
    #[kv(raw)]
    Any(AnyKey),
}

// A set key has no plain value to decode: its value variant must be `raw`.
#[derive(Keyspace, Debug, Clone, PartialEq)]
#[kv(value_enum = SetValue)]
enum Sets {
    Any(AnyKey),
    Set(SetOfKey),
}

fn main() {}
