//! Registry operations on every backend: define, register with keep-alive, discover,
//! watch instances come and go (lease expiry included), deregister, evict.

use futures::StreamExt;
use keyplane_core::Store;
use keyplane_core::keyspace::{Host, HostPort, Key, Prefix, TypedStore};
use keyplane_core::recipes::LeaseHeld;
use keyplane_schemas::registry::*;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

/// Bounds every wait on an event, so that a missing event fails the test instead of hanging.
const PATIENCE: Duration = Duration::from_secs(30);
const LONG_TTL: Duration = Duration::from_secs(30);
const SHORT_TTL: Duration = Duration::from_secs(1);

/// A group and service of their own for each case: the registry's root is fixed.
async fn service(store: &TypedStore) -> ServiceId {
    let group = GroupName::new(format!("g{}", uuid::Uuid::new_v4().simple())).unwrap();
    let service = ServiceId::new(
        group.clone(),
        ServiceName::new("VerifyCodeService").unwrap(),
    );
    define_group(
        store,
        &group,
        &GroupInfo {
            description: "test group".into(),
        },
    )
    .await
    .unwrap();
    let info = ServiceInfo {
        description: "codes".into(),
        grpc_service: None,
    };
    define_service(store, &service, &info).await.unwrap();
    service
}

fn new_instance(version: &str, weight: Option<u32>) -> NewInstance {
    NewInstance {
        data: InstanceData {
            version: version.into(),
            http_port: Some(8080),
            secure_grpc_port: None,
            started_at: 1,
            metadata: BTreeMap::from([("zone".into(), "a".into())]),
        },
        status: InstanceStatus {
            state: InstanceState::Serving,
            since: 1,
        },
        config: weight.map(|weight| InstanceConfig {
            weight,
            settings: BTreeMap::new(),
        }),
    }
}

fn at(service: &ServiceId, last: u8, port: u16) -> InstanceId {
    service.instance(HostPort::new(Host::Ipv4(Ipv4Addr::new(192, 168, 0, last)), port).unwrap())
}

async fn next_events(watch: &mut InstanceWatch) -> Vec<InstanceEvent> {
    let batch = tokio::time::timeout(PATIENCE, watch.next())
        .await
        .expect("an instance event in time")
        .expect("the watch goes on")
        .expect("no watch error");
    batch.events
}

async fn register_discover_deregister(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let service = service(&store).await;
    let (a, b) = (at(&service, 1, 11080), at(&service, 1, 21080));
    let ra = register(&store, &a, &new_instance("1.0.0", Some(10)), LONG_TTL)
        .await
        .unwrap();
    let rb = register(&store, &b, &new_instance("1.0.1", None), LONG_TTL)
        .await
        .unwrap();

    let found = discover(&store, &service).await.unwrap();
    assert!(found.skipped.is_empty());
    let ids: Vec<&InstanceId> = found.instances.iter().map(|i| &i.id).collect();
    assert_eq!(ids, [&a, &b]);
    let first = &found.instances[0];
    assert_eq!(first.data.version, "1.0.0");
    assert_eq!(first.status.unwrap().state, InstanceState::Serving);
    assert_eq!(first.config.as_ref().unwrap().weight, 10);
    assert_eq!(first.lease, Some(ra.lease()));
    assert_eq!(found.instances[1].config, None);

    // The files are the document's keys, all attached to the registration's lease.
    let raw = store.store().lease_time_to_live(ra.lease()).await.unwrap();
    let expected: Vec<Vec<u8>> = vec![
        a.config_key().encode().into_bytes(),
        a.data_key().encode().into_bytes(),
        a.status_key().encode().into_bytes(),
    ];
    assert_eq!(raw.keys, expected);

    let draining = InstanceStatus {
        state: InstanceState::Draining,
        since: 2,
    };
    ra.set_status(&draining).await.unwrap();
    assert_eq!(store.get(&a.status_key()).await.unwrap(), Some(draining));

    ra.deregister().await.unwrap();
    let found = discover(&store, &service).await.unwrap();
    assert_eq!(found.instances.len(), 1);
    assert_eq!(found.instances[0].id, b);
    assert!(!store.exists(&a.status_key()).await.unwrap());

    // An operator evicts the other one whoever holds its lease.
    assert!(evict_instance(&store, &b).await.unwrap());
    assert!(!evict_instance(&store, &b).await.unwrap());
    assert!(
        discover(&store, &service)
            .await
            .unwrap()
            .instances
            .is_empty()
    );
    assert!(rb.set_status(&draining).await.is_err());
    rb.deregister().await.unwrap();
    // The service's own info file stays.
    assert!(store.exists(&service.info_key()).await.unwrap());
}

async fn bad_input_writes_nothing(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let group = GroupName::new(format!("g{}", uuid::Uuid::new_v4().simple())).unwrap();
    let service = ServiceId::new(group.clone(), ServiceName::new("Missing").unwrap());
    let info = ServiceInfo {
        description: "x".into(),
        grpc_service: None,
    };
    let err = define_service(&store, &service, &info).await.unwrap_err();
    assert!(
        matches!(RegistryError::of(&err).cloned(), Some(RegistryError::UnknownGroup(ref g)) if *g == group),
        "{err}"
    );
    assert_eq!(err.kind(), keyplane_core::ErrorKind::NotFound);

    let instance = at(&service, 9, 9000);
    let err = register(&store, &instance, &new_instance("1", None), LONG_TTL)
        .await
        .unwrap_err();
    assert!(
        matches!(RegistryError::of(&err).cloned(), Some(RegistryError::UnknownService(ref s)) if *s == service),
        "{err}"
    );

    define_group(
        &store,
        &group,
        &GroupInfo {
            description: "g".into(),
        },
    )
    .await
    .unwrap();
    define_service(&store, &service, &info).await.unwrap();
    let err = register(&store, &instance, &new_instance(" ", None), LONG_TTL)
        .await
        .unwrap_err();
    assert!(
        matches!(
            RegistryError::of(&err).cloned(),
            Some(RegistryError::Invalid {
                what: "instance data",
                ..
            })
        ),
        "{err}"
    );
    let err = register(&store, &instance, &new_instance("1", Some(0)), LONG_TTL)
        .await
        .unwrap_err();
    assert!(
        matches!(
            RegistryError::of(&err).cloned(),
            Some(RegistryError::Invalid {
                what: "instance config",
                ..
            })
        ),
        "{err}"
    );

    // Only the two info files exist under the group.
    let dir = GroupDir { group }.encode();
    let page = store
        .store()
        .range(keyplane_core::RangeOptions::prefix(dir))
        .await
        .unwrap();
    let keys: Vec<String> = page
        .entries
        .iter()
        .map(|e| String::from_utf8(e.key.clone()).unwrap())
        .collect();
    let mut expected = vec![
        service.info_key().encode(),
        GroupInfoKey {
            group: service.group.clone(),
        }
        .encode(),
    ];
    expected.sort();
    assert_eq!(keys, expected);
}

async fn watch_sees_instances_come_and_go(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let service = service(&store).await;
    let found = discover(&store, &service).await.unwrap();
    let mut watch = watch_instances(&store, &service, Some(found.revision + 1))
        .await
        .unwrap();

    let (a, b) = (at(&service, 1, 11080), at(&service, 2, 11080));
    let ra = register(&store, &a, &new_instance("1.0.0", Some(5)), LONG_TTL)
        .await
        .unwrap();
    let events = next_events(&mut watch).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(events.iter().any(|e| matches!(e, InstanceEvent::Up { instance, data } if *instance == a && data.version == "1.0.0")));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, InstanceEvent::Status { instance, .. } if *instance == a))
    );
    assert!(events.iter().any(|e| matches!(e, InstanceEvent::Config { instance, config } if *instance == a && config.weight == 5)));

    // A short lease that nobody keeps alive: the instance goes down when it expires.
    let rb = register(&store, &b, &new_instance("2.0.0", None), SHORT_TTL)
        .await
        .unwrap();
    let events = next_events(&mut watch).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, InstanceEvent::Up { instance, .. } if *instance == b)),
        "{events:?}"
    );
    drop(rb); // the process dies: renewals stop
    let events = next_events(&mut watch).await;
    assert!(
        events
            .iter()
            .all(|e| matches!(e, InstanceEvent::Down { instance } if *instance == b)),
        "{events:?}"
    );
    assert!(!events.is_empty());
    // The kept-alive instance outlived the other's lease.
    let left = discover(&store, &service).await.unwrap();
    assert_eq!(
        left.instances.iter().map(|i| &i.id).collect::<Vec<_>>(),
        [&a]
    );

    ra.deregister().await.unwrap();
    let events = next_events(&mut watch).await;
    assert!(
        matches!(events.as_slice(), [InstanceEvent::Down { instance }] if *instance == a),
        "{events:?}"
    );
}

async fn a_restarted_instance_takes_over_its_address(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let service = service(&store).await;
    let a = at(&service, 7, 11080);
    let old = register(&store, &a, &new_instance("1.0.0", None), LONG_TTL)
        .await
        .unwrap();
    let from = store.store().revision().await.unwrap() + 1;
    let mut watch = watch_instances(&store, &service, Some(from)).await.unwrap();
    let new = register(&store, &a, &new_instance("1.1.0", None), LONG_TTL)
        .await
        .unwrap();
    let events = next_events(&mut watch).await;
    assert!(events.iter().any(|e| matches!(e, InstanceEvent::Updated { instance, data } if *instance == a && data.version == "1.1.0")), "{events:?}");

    // The old registration no longer owns the files.
    let status = InstanceStatus {
        state: InstanceState::Unhealthy,
        since: 3,
    };
    let err = old.set_status(&status).await.unwrap_err();
    assert!(
        matches!(RegistryError::of(&err).cloned(), Some(RegistryError::NotRegistered(ref i)) if *i == a),
        "{err}"
    );
    old.deregister().await.unwrap();
    let found = discover(&store, &service).await.unwrap();
    assert_eq!(found.instances.len(), 1);
    assert_eq!(found.instances[0].lease, Some(new.lease()));
    assert_eq!(found.instances[0].data.version, "1.1.0");
    new.deregister().await.unwrap();
}

async fn discovery_reports_foreign_keys(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let service = service(&store).await;
    let a = at(&service, 3, 11080);
    let reg = register(&store, &a, &new_instance("1", None), LONG_TTL)
        .await
        .unwrap();
    let foreign = format!("{}192.168.0.3:11080/metrics", service.dir().encode());
    store
        .store()
        .put(foreign.as_bytes(), b"{}", Default::default())
        .await
        .unwrap();
    let found = discover(&store, &service).await.unwrap();
    assert_eq!(found.instances.len(), 1);
    assert_eq!(found.skipped.len(), 1);
    assert_eq!(found.skipped[0].key, foreign.as_bytes());
    reg.deregister().await.unwrap();
    store.store().delete(foreign.as_bytes()).await.unwrap();
}

async fn example_dataset(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let group = GroupName::new(format!("g{}", uuid::Uuid::new_v4().simple())).unwrap();
    let example = write_example(&store, &group, LONG_TTL).await.unwrap();
    let found = discover(&store, &example.service).await.unwrap();
    let addrs: Vec<String> = found
        .instances
        .iter()
        .map(|i| i.id.addr.to_string())
        .collect();
    assert_eq!(addrs, ["192.168.0.1:11080", "192.168.0.2:11080"]);
    assert!(
        found
            .instances
            .iter()
            .all(|i| i.config.as_ref().is_some_and(|c| c.weight == 100))
    );
    assert_eq!(
        store
            .get(&GroupInfoKey { group })
            .await
            .unwrap()
            .map(|g| g.description),
        Some("services every product uses".into())
    );
    for registration in example.registrations {
        registration.deregister().await.unwrap();
    }
}

/// The live registry gives what `discover` reads from the store, follows status changes, and
/// drops an instance whose lease expires; a service left without instances leaves it.
async fn the_live_registry_agrees_with_discover(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let live = LiveRegistry::start(&store).await.unwrap();
    let mut changes = live.mirror().subscribe();
    let service = service(&store).await;
    let (a, b) = (at(&service, 2, 11080), at(&service, 3, 11080));
    let ra = register(&store, &a, &new_instance("2.0.0", Some(5)), LONG_TTL)
        .await
        .unwrap();
    register(&store, &b, &new_instance("2.0.1", None), SHORT_TTL)
        .await
        .unwrap();
    let agrees = |view: RegistryView| {
        let store = store.clone();
        let service = service.clone();
        async move {
            let found = discover(&store, &service).await.unwrap();
            assert_eq!(view.instances(&service), found.instances);
        }
    };
    let view = tokio::time::timeout(PATIENCE, live.wait_for(store.revision().await.unwrap()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(view.instances(&service).len(), 2);
    assert!(view.services().contains(&service));
    assert_eq!(view.service_info(&service).unwrap().description, "codes");
    agrees(view).await;

    let draining = InstanceStatus {
        state: InstanceState::Draining,
        since: 3,
    };
    let written = ra.set_status(&draining).await.unwrap();
    let view = live.wait_for(written).await.unwrap();
    assert_eq!(view.instances(&service)[0].status, Some(draining));
    agrees(view).await;

    // b's registration is dropped without deregistering: its lease expires.
    let view = tokio::time::timeout(PATIENCE, async {
        loop {
            let view = live.view();
            if view.instances(&service).len() == 1 {
                return view;
            }
            changes.next().await.expect("the mirror's changes");
        }
    })
    .await
    .expect("b's lease expiring");
    assert_eq!(view.instances(&service)[0].id, a);

    ra.deregister().await.unwrap();
    let view = live
        .wait_for(store.revision().await.unwrap())
        .await
        .unwrap();
    assert!(view.instances(&service).is_empty());
    assert!(!view.services().contains(&service));
    agrees(view).await;
}

keyplane_tests::on_every_backend!(
    the_live_registry_agrees_with_discover,
    register_discover_deregister,
    bad_input_writes_nothing,
    watch_sees_instances_come_and_go,
    a_restarted_instance_takes_over_its_address,
    discovery_reports_foreign_keys,
    example_dataset,
);
