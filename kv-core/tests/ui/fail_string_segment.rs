// A newcomer's first key: a `String` field is not a segment; the error says what to write.
use keyplane_core::keyspace::{Json, Key};

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "acme/apps/{app}/services/{name}", value = Json<u32>)]
struct ServiceKey {
    app: u64,
    name: String,
}

fn main() {}
