//! Property tests of the readers: after any sequence of writes, the tenant Provider and the
//! live registry answer every question exactly as the live-store lookups do on the same data
//! (the nxc resolver cache has its own in `nxc_cache.rs`).

mod tenant_common;

use keyplane_core::keyspace::TypedStore;
use keyplane_schemas::registry::*;
use keyplane_schemas::tenant::{
    Domains, FtpUsername, HostName, KNOWN_SERVICES, ServiceCode, Tenant, TenantCode, TenantName,
    TenantProvider, add_ftp_user, database_config, delete_tenant, load_tenant, publish_tenant,
    remove_ftp_user, tenant_by_code, tenant_by_ftp_user, tenant_by_host, tenant_by_name,
};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tenant_common::{ftp_user, unique_tenant};

const WAIT: Duration = Duration::from_secs(20);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn typed() -> TypedStore {
    TypedStore::new(Arc::new(keyplane_mem::MemStore::new()))
}

/// A write to the tenant configuration.
#[derive(Debug, Clone)]
enum TenantOp {
    /// Publish tenant `t` with `ftp` FTP users, with or without its domains.
    Publish {
        t: usize,
        ftp: usize,
        domains: bool,
    },
    AddFtpUser {
        t: usize,
        user: usize,
    },
    RemoveFtpUser {
        t: usize,
        user: usize,
    },
    Delete {
        t: usize,
    },
}

fn tenant_op() -> impl Strategy<Value = TenantOp> {
    prop_oneof![
        3 => (0..3usize, 0..3usize, any::<bool>())
            .prop_map(|(t, ftp, domains)| TenantOp::Publish { t, ftp, domains }),
        2 => (0..3usize, 0..4usize).prop_map(|(t, user)| TenantOp::AddFtpUser { t, user }),
        1 => (0..3usize, 0..4usize).prop_map(|(t, user)| TenantOp::RemoveFtpUser { t, user }),
        1 => (0..3usize).prop_map(|t| TenantOp::Delete { t }),
    ]
}

/// The pool's tenant `t` as op `Publish` writes it.
fn shaped(base: &Tenant, ftp: usize, domains: bool) -> Tenant {
    let mut t = base.clone();
    t.ftp_users.truncate(ftp);
    if !domains {
        t.domains = Domains::default();
        t.hosts.clear();
    }
    t
}

fn username(t: &Tenant, user: usize) -> String {
    format!("u{}.{user}-ftp", t.id())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random publishes, FTP user changes and deletes: after each, the Provider's view at the
    /// store's revision answers every lookup about every tenant of the pool as the live
    /// lookups do (§7.4 to §7.6 included).
    #[test]
    fn the_tenant_provider_answers_as_the_live_lookups(
        ops in proptest::collection::vec(tenant_op(), 1..12)
    ) {
        runtime().block_on(async {
            let typed = typed();
            let provider = TenantProvider::start(&typed).await.unwrap();
            let pool: Vec<Tenant> = (0..3).map(|_| unique_tenant(3)).collect();
            for op in &ops {
                // Refusals (an FTP user of a tenant that does not exist...) change nothing.
                let _ = match op {
                    TenantOp::Publish { t, ftp, domains } => {
                        publish_tenant(&typed, &shaped(&pool[*t], *ftp, *domains)).await.map(|_| ())
                    }
                    TenantOp::AddFtpUser { t, user } => {
                        let config = ftp_user(pool[*t].id(), &username(&pool[*t], *user));
                        add_ftp_user(&typed, &config).await.map(|_| ())
                    }
                    TenantOp::RemoveFtpUser { t, user } => {
                        remove_ftp_user(&typed, pool[*t].id(), &username(&pool[*t], *user))
                            .await
                            .map(|_| ())
                    }
                    TenantOp::Delete { t } => delete_tenant(&typed, pool[*t].id()).await.map(|_| ()),
                };
                let revision = typed.revision().await.unwrap();
                let view = tokio::time::timeout(WAIT, provider.wait_for(revision))
                    .await
                    .expect("the provider catching up")
                    .unwrap();
                for t in &pool {
                    let id = t.id();
                    assert_eq!(view.tenant(id), load_tenant(&typed, id).await.unwrap());
                    let code = TenantCode::new(t.meta.code.as_str()).unwrap();
                    assert_eq!(view.tenant_by_code(&code), tenant_by_code(&typed, &code).await.unwrap());
                    let name = TenantName::new(t.meta.name.as_str()).unwrap();
                    assert_eq!(view.tenant_by_name(&name), tenant_by_name(&typed, &name).await.unwrap());
                    for domain in t.domains.all() {
                        let host = HostName::new(domain).unwrap();
                        assert_eq!(view.tenant_by_host(&host), tenant_by_host(&typed, &host).await.unwrap());
                    }
                    for user in 0..4 {
                        let name = username(t, user);
                        let username = FtpUsername::new(name.as_str()).unwrap();
                        let live = tenant_by_ftp_user(&typed, &username).await.unwrap();
                        assert_eq!(view.is_ftp_username_taken(&name), live.is_some(), "§7.5 {name}");
                        assert_eq!(view.tenant_by_ftp_user(&username), live);
                    }
                    for service in KNOWN_SERVICES {
                        let service = ServiceCode::new(service).unwrap();
                        assert_eq!(
                            view.service_database_config(id, &service),
                            database_config(&typed, id, &service).await.unwrap(),
                            "§7.4 {service}"
                        );
                    }
                    let primary = load_tenant(&typed, id)
                        .await
                        .unwrap()
                        .and_then(|t| t.domains.primary)
                        .unwrap_or_default();
                    assert_eq!(view.primary_domain(id), primary, "§7.6");
                }
            }
        });
    }
}

/// A write to the registry.
#[derive(Debug, Clone)]
enum RegistryOp {
    Register {
        at: u8,
        version: u8,
        weight: Option<u32>,
    },
    Drain {
        at: u8,
    },
    Deregister {
        at: u8,
    },
}

fn registry_op() -> impl Strategy<Value = RegistryOp> {
    prop_oneof![
        3 => (0..4u8, 0..3u8, proptest::option::of(1..10u32))
            .prop_map(|(at, version, weight)| RegistryOp::Register { at, version, weight }),
        1 => (0..4u8).prop_map(|at| RegistryOp::Drain { at }),
        1 => (0..4u8).prop_map(|at| RegistryOp::Deregister { at }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random registrations, status changes and deregistrations of two services: after
    /// each, the live registry lists every service's instances (status and config
    /// included) as `discover` does.
    #[test]
    fn the_live_registry_answers_as_discover(
        ops in proptest::collection::vec((0..2usize, registry_op()), 1..12)
    ) {
        runtime().block_on(async {
            let typed = typed();
            let live = LiveRegistry::start(&typed).await.unwrap();
            let group = GroupName::new("g").unwrap();
            define_group(&typed, &group, &GroupInfo { description: "group".into() })
                .await
                .unwrap();
            let services: Vec<ServiceId> = ["Codes", "Orders"]
                .into_iter()
                .map(|name| ServiceId::new(group.clone(), ServiceName::new(name).unwrap()))
                .collect();
            for service in &services {
                let info = ServiceInfo { description: "svc".into(), grpc_service: None };
                define_service(&typed, service, &info).await.unwrap();
            }
            let mut held: BTreeMap<(usize, u8), Registration> = BTreeMap::new();
            for (s, op) in &ops {
                let id = |at: u8| {
                    services[*s].instance(format!("10.0.0.{at}:9000").parse().unwrap())
                };
                match op {
                    RegistryOp::Register { at, version, weight } => {
                        let new = NewInstance {
                            data: InstanceData {
                                version: format!("1.0.{version}"),
                                http_port: Some(8080),
                                secure_grpc_port: None,
                                started_at: 1,
                                metadata: BTreeMap::new(),
                            },
                            status: InstanceStatus { state: InstanceState::Serving, since: 1 },
                            config: weight.map(|weight| InstanceConfig {
                                weight,
                                settings: BTreeMap::new(),
                            }),
                        };
                        if let Ok(registration) =
                            register(&typed, &id(*at), &new, Duration::from_secs(600)).await
                        {
                            held.insert((*s, *at), registration);
                        }
                    }
                    RegistryOp::Drain { at } => {
                        if let Some(registration) = held.get(&(*s, *at)) {
                            let draining =
                                InstanceStatus { state: InstanceState::Draining, since: 2 };
                            registration.set_status(&draining).await.unwrap();
                        }
                    }
                    RegistryOp::Deregister { at } => {
                        if let Some(registration) = held.remove(&(*s, *at)) {
                            registration.deregister().await.unwrap();
                        }
                    }
                }
                let revision = typed.revision().await.unwrap();
                let view = tokio::time::timeout(WAIT, live.wait_for(revision))
                    .await
                    .expect("the live registry catching up")
                    .unwrap();
                for service in &services {
                    let found = discover(&typed, service).await.unwrap();
                    assert_eq!(view.instances(service), found.instances, "{service:?}");
                }
            }
        });
    }
}
