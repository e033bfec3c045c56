// `value = ..` names a codec: a bare value type gets the codec to wrap it in.
use keyplane_core::keyspace::Key;

#[derive(Debug, Clone, PartialEq)]
struct Service {
    port: u16,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "acme/services/{id}", value = Service)]
struct ServiceKey {
    id: u64,
}

fn main() {}
