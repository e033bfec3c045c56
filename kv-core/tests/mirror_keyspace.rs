//! A mirror of a whole keyspace on MemStore: keys parsed into the keyspace's enum, values as
//! bytes, keys of no template reported, relist-free catch-up through `wait_for`.

use keyplane_core::keyspace::{Json, Key, Keyspace, Text, TypedStore};
use keyplane_core::{PutOptions, Store};
use std::sync::Arc;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "svc/{id}/name", value = Text)]
struct NameKey {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "svc/{id}/port", value = Json<u16>)]
struct PortKey {
    id: u64,
}

#[derive(Keyspace, Debug, Clone, PartialEq)]
enum Services {
    Name(NameKey),
    Port(PortKey),
}

#[tokio::test]
async fn a_keyspace_mirror_types_every_template_and_reports_strangers() {
    let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
    let typed = TypedStore::new(store.clone());
    typed
        .put(&NameKey { id: 1 }, &"billing".to_string())
        .await
        .unwrap();
    let mirror = typed.mirror_keyspace::<Services>().start().await.unwrap();
    assert_eq!(mirror.snapshot().len(), 1);

    typed.put(&PortKey { id: 1 }, &8080).await.unwrap();
    store
        .put(b"svc/1/owner", b"team-a", PutOptions::default())
        .await
        .unwrap();
    // Outside the keyspace's common root: not mirrored at all.
    let last = store
        .put(b"other/1", b"x", PutOptions::default())
        .await
        .unwrap()
        .revision;
    let view = mirror.wait_for(last).await.unwrap();
    let keys: Vec<Services> = view.iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(
        keys,
        [
            Services::Name(NameKey { id: 1 }),
            Services::Port(PortKey { id: 1 })
        ]
    );
    let port = view.get_raw(b"svc/1/port").unwrap().1;
    assert_eq!(port.value, b"8080");
    let strangers: Vec<&[u8]> = view.unreadable().map(|(e, _)| e.key.as_slice()).collect();
    assert_eq!(strangers, [b"svc/1/owner".as_slice()]);
    assert!(view.revision() >= last);
}

#[derive(Debug, Clone, PartialEq)]
enum ServiceValue {
    Name(String),
    Port(u16),
}

#[tokio::test]
async fn a_keyspace_mirror_decodes_each_template_once() {
    use keyplane_core::keyspace::Codec;
    let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
    let typed = TypedStore::new(store.clone());
    let mirror = typed
        .mirror_keyspace::<Services>()
        .decode_with(|key, bytes| {
            Ok(match key {
                Services::Name(_) => ServiceValue::Name(Text.decode(bytes)?),
                Services::Port(_) => ServiceValue::Port(Json::<u16>::new().decode(bytes)?),
            })
        })
        .index("name", |_, value| match value {
            ServiceValue::Name(name) => vec![name.clone()],
            ServiceValue::Port(_) => Vec::new(),
        })
        .start()
        .await
        .unwrap();
    typed
        .put(&NameKey { id: 2 }, &"search".to_string())
        .await
        .unwrap();
    typed.put(&PortKey { id: 2 }, &9200).await.unwrap();
    let last = store
        .put(b"svc/3/port", b"not a port", PutOptions::default())
        .await
        .unwrap()
        .revision;
    let view = mirror.wait_for(last).await.unwrap();
    let port = view.get_raw(b"svc/2/port").unwrap().1;
    assert_eq!(port.value, ServiceValue::Port(9200));
    let named: Vec<&Services> = view.lookup("name", "search").map(|(k, _)| k).collect();
    assert_eq!(named, [&Services::Name(NameKey { id: 2 })]);
    let (entry, error) = view.unreadable().next().unwrap();
    assert_eq!(entry.key, b"svc/3/port");
    assert_eq!(error.kind(), keyplane_core::ErrorKind::Codec);
}
