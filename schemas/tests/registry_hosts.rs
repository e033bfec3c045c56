//! Registry instances on IPv6 and DNS hosts as well as IPv4, with their exact key bytes, and
//! an instance config that outlives the lease only when asked; on every backend.

use keyplane_core::keyspace::{Host, HostPort, Key, Prefix, TypedStore};
use keyplane_core::recipes::LeaseHeld;
use keyplane_core::{PutOptions, RangeOptions, Store};
use keyplane_schemas::registry::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const LONG_TTL: Duration = Duration::from_secs(30);

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
            description: "test".into(),
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

fn new_instance(weight: Option<u32>) -> NewInstance {
    NewInstance {
        data: InstanceData {
            version: "1.0.0".into(),
            http_port: None,
            secure_grpc_port: None,
            started_at: 1,
            metadata: BTreeMap::new(),
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

async fn keys(store: &TypedStore, service: &ServiceId) -> Vec<String> {
    let prefix = service.dir().encode();
    let mut keys: Vec<String> = store
        .store()
        .range(RangeOptions::prefix(&prefix).keys_only())
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|e| String::from_utf8(e.key[prefix.len()..].to_vec()).unwrap())
        .collect();
    keys.sort();
    keys
}

async fn ipv6_and_dns_hosts(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let service = service(&store).await;
    let v4 = service.instance("192.168.0.1:11080".parse().unwrap());
    let v6 =
        service.instance(HostPort::new(Host::Ipv6("2001:db8::1".parse().unwrap()), 11080).unwrap());
    let dns = service.instance(HostPort::new(Host::Dns("api.internal".into()), 11080).unwrap());
    let mut held = Vec::new();
    for id in [&v4, &v6, &dns] {
        held.push(
            register(&store, id, &new_instance(None), LONG_TTL)
                .await
                .unwrap(),
        );
    }
    assert_eq!(
        keys(&store, &service).await,
        [
            "192.168.0.1:11080/data",
            "192.168.0.1:11080/status",
            "[2001:db8::1]:11080/data",
            "[2001:db8::1]:11080/status",
            "api.internal:11080/data",
            "api.internal:11080/status",
            "info",
        ]
    );
    assert_eq!(
        v6.data_key().encode(),
        format!(
            "/registry/{}/VerifyCodeService/[2001:db8::1]:11080/data",
            service.group
        )
    );
    let found = discover(&store, &service).await.unwrap();
    let mut addrs: Vec<HostPort> = found.instances.iter().map(|i| i.id.addr.clone()).collect();
    addrs.sort();
    let mut expected = vec![v4.addr.clone(), v6.addr.clone(), dns.addr.clone()];
    expected.sort();
    assert_eq!(addrs, expected);
    assert!(found.skipped.is_empty());

    // Another program's non-canonical spellings are not instances: reported, not listed.
    let dir = service.dir().encode();
    for odd in [
        "[2001:DB8::1]:11080/data",
        "[2001:db8:0::1]:11080/data",
        "API.internal:11080/data",
    ] {
        store
            .store()
            .put(
                format!("{dir}{odd}").as_bytes(),
                b"{}",
                PutOptions::default(),
            )
            .await
            .unwrap();
    }
    let found = discover(&store, &service).await.unwrap();
    assert_eq!(found.instances.len(), 3);
    assert_eq!(found.skipped.len(), 3, "{:?}", found.skipped);

    for registration in held {
        registration.deregister().await.unwrap();
    }
    assert!(
        discover(&store, &service)
            .await
            .unwrap()
            .instances
            .is_empty()
    );
    for bad in [
        "[2001:DB8::1]:11080",
        "2001:db8::1:11080",
        "api.internal:0",
        "Api.internal:1",
    ] {
        assert!(bad.parse::<HostPort>().is_err(), "{bad}");
    }
}

async fn config_outlives_the_lease_only_when_asked(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let service = service(&store).await;
    let kept = service.instance("[2001:db8::2]:9000".parse().unwrap());
    let leased = service.instance("10.0.0.2:9000".parse().unwrap());
    let options = RegisterOptions { keep_config: true };
    let a = register_with(&store, &kept, &new_instance(Some(7)), LONG_TTL, options)
        .await
        .unwrap();
    let b = register(&store, &leased, &new_instance(Some(3)), LONG_TTL)
        .await
        .unwrap();
    let raw = store
        .store()
        .get(kept.config_key().encode().as_bytes())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(raw.lease, None, "the kept config is on no lease");
    let raw = store
        .store()
        .get(leased.config_key().encode().as_bytes())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(raw.lease, Some(b.lease()));

    // The leases end (revoked, as an expiry would).
    store.store().lease_revoke(a.lease()).await.unwrap();
    store.store().lease_revoke(b.lease()).await.unwrap();
    assert_eq!(
        store
            .get(&kept.config_key())
            .await
            .unwrap()
            .map(|c| c.weight),
        Some(7),
        "the kept config outlives the lease"
    );
    assert!(store.get(&leased.config_key()).await.unwrap().is_none());
    assert!(
        discover(&store, &service)
            .await
            .unwrap()
            .instances
            .is_empty(),
        "a kept config is not an instance"
    );
    // The next registration at the address replaces it; an eviction removes it.
    let again = register_with(&store, &kept, &new_instance(Some(9)), LONG_TTL, options)
        .await
        .unwrap();
    let found = discover(&store, &service).await.unwrap();
    assert_eq!(
        found.instances[0].config.as_ref().map(|c| c.weight),
        Some(9)
    );
    again.deregister().await.unwrap();
    assert!(store.get(&kept.config_key()).await.unwrap().is_some());
    assert!(evict_instance(&store, &kept).await.unwrap());
    assert!(store.get(&kept.config_key()).await.unwrap().is_none());
}

keyplane_tests::on_every_backend!(
    ipv6_and_dns_hosts,
    config_outlives_the_lease_only_when_asked
);
