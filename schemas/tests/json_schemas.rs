//! The JSON Schemas of the bundled schemas' JSON values: every JSON template has one, the
//! values the schemas write match it, and the schema refuses what the key's codec refuses
//! (a field of the wrong type, a missing field, a word that is no variant) and accepts what
//! it accepts.
//!
//! What JSON Schema cannot say is left out of the probes: an integer written as `1.0` or
//! `1e3` is an integer to JSON Schema and a float to the codec; a member given twice, a
//! struct as the array of its fields and a variant as `{"word": null}` are serde's
//! business.

use keyplane_core::ErrorKind;
use keyplane_core::keyspace::{Codec, Json, Key, TemplateInfo, TypedStore, ValueFormat};
use keyplane_core::{RangeOptions, Store};
use keyplane_mem::MemStore;
use keyplane_schemas::{cronix, registry, tenant};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// A raw key no template matches: the check decodes with the codec and asks no key.
const NO_KEY: &str = "\u{0}";

/// Every JSON template of every schema that is no collection, with its schema's name.
fn json_templates() -> Vec<(&'static str, TemplateInfo)> {
    keyplane_schemas::every()
        .into_iter()
        .flat_map(|schema| {
            schema
                .templates()
                .into_iter()
                .map(move |info| (schema.name, info))
        })
        .filter(|(_, info)| info.value.format == ValueFormat::Json && info.kind.is_none())
        .collect()
}

/// The template's JSON Schema, compiled; panics naming the template without one.
fn validator(info: &TemplateInfo) -> jsonschema::Validator {
    let schema = info
        .value
        .json_schema
        .as_ref()
        .unwrap_or_else(|| panic!("{} ({}) has no JSON Schema", info.template, info.type_name));
    jsonschema::validator_for(schema)
        .unwrap_or_else(|e| panic!("{}: the JSON Schema does not compile: {e}", info.template))
}

/// Panics unless `bytes` are valid against the template's schema.
fn assert_matches(info: &TemplateInfo, bytes: &[u8]) {
    let value: Value = serde_json::from_slice(bytes).expect("JSON");
    let errors: Vec<String> = validator(info)
        .iter_errors(&value)
        .map(|e| format!("at {}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{}: {value} does not match its JSON Schema: {errors:?}\nschema: {}",
        info.template,
        info.value.json_schema.as_deref().unwrap_or(&Value::Null)
    );
}

#[test]
fn every_json_value_has_a_json_schema() {
    let templates = json_templates();
    assert!(templates.len() >= 30, "{} JSON templates", templates.len());
    let missing: Vec<String> = templates
        .iter()
        .filter(|(_, info)| info.value.json_schema.is_none())
        .map(|(schema, info)| format!("{schema}: {} ({})", info.template, info.type_name))
        .collect();
    assert!(missing.is_empty(), "without a JSON Schema: {missing:#?}");
    for (_, info) in &templates {
        validator(info);
    }
}

#[tokio::test]
async fn the_examples_values_match_their_schemas() {
    let store: Arc<dyn Store> = Arc::new(MemStore::new());
    let typed = TypedStore::new(Arc::clone(&store));
    tenant::publish_tenant(&typed, &tenant::example_tenant())
        .await
        .expect("publish the example tenant");
    let group = registry::GroupName::new("common").expect("a group name");
    let _registry = registry::write_example(&typed, &group, Duration::from_secs(60))
        .await
        .expect("the registry example");
    let node = Uuid::from_u128(0x67e5504410b1426f9247bb680e5fe0c8);
    let _cronix = cronix::write_example(&typed, node, Duration::from_secs(60))
        .await
        .expect("the cronix example");

    let templates = json_templates();
    let entries = store
        .range(RangeOptions::prefix(b""))
        .await
        .expect("range")
        .entries;
    let mut checked = BTreeMap::<&str, usize>::new();
    for entry in &entries {
        let raw = std::str::from_utf8(&entry.key).expect("a UTF-8 key");
        let Ok(parsed) = keyplane_schemas::parse_any(raw) else {
            continue;
        };
        let Some((_, info)) = templates.iter().find(|(schema, info)| {
            *schema == parsed.schema && info.template.source() == parsed.template
        }) else {
            continue;
        };
        info.value
            .check(raw, &entry.value)
            .expect("a value of its template");
        assert_matches(info, &entry.value);
        *checked.entry(parsed.template).or_default() += 1;
    }
    for template in [
        "jxt/tenants/{id}/meta",
        "jxt/tenants/{id}/domain/aliases",
        "jxt/tenants/{id}/database/{service}",
        "jxt/tenants/{id}/ftp/{username}",
        "jxt/tenants/{id}/storage",
        "jxt/tenants/_index/by-code/{code}",
        "jxt/tenants/_index/by-name/{name}",
        "jxt/tenants/_index/ftp-user/{username}",
        "jxt/tenants/_index/host/{host}",
        "/registry/{group}/info",
        "/registry/{group}/{service}/info",
        "/registry/{group}/{service}/{addr}/data",
        "/registry/{group}/{service}/{addr}/status",
        "/registry/{group}/{service}/{addr}/config",
        "/Cronix/node/{node}",
        "/Cronix/job/{node}/{job}",
    ] {
        assert!(
            checked.contains_key(template),
            "no example value of {template}: {checked:?}"
        );
    }
}

/// One value of a JSON template, encoded by its codec.
struct Sample {
    info: TemplateInfo,
    bytes: Vec<u8>,
}

fn sample<K, T>(value: T) -> Sample
where
    K: Key<Value = Json<T>>,
    T: Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    Sample {
        info: K::info(),
        bytes: Json::<T>::new().encode(&value).expect("encode"),
    }
}

fn meta(id: u64, code: &str, name: &str, status: &str) -> tenant::TenantMeta {
    tenant::TenantMeta {
        id,
        code: code.into(),
        name: name.into(),
        status: status.into(),
        billing_plan: "enterprise".into(),
    }
}

fn node(ip: IpAddr, status: cronix::NodeStatus) -> cronix::NodeInfo {
    cronix::NodeInfo {
        uuid: Uuid::from_u128(0x67e5504410b1426f9247bb680e5fe0c8),
        ip,
        port: 9527,
        status,
        hostname: "cron-worker-1".into(),
        started_at: 1_767_225_600_000,
    }
}

fn job(cron: &str, max_retries: u32) -> cronix::JobConfig {
    cronix::JobConfig {
        name: "Nightly database backup".into(),
        cron: cron.into(),
        command: "/opt/backup/run.sh --full".into(),
        timeout_seconds: 0,
        retry: cronix::RetryPolicy {
            max_retries,
            interval_seconds: 300,
        },
    }
}

fn instance_data(
    http: Option<u16>,
    secure: Option<u16>,
    zone: Option<&str>,
) -> registry::InstanceData {
    registry::InstanceData {
        version: "1.4.2".into(),
        http_port: http,
        secure_grpc_port: secure,
        started_at: u64::MAX,
        metadata: zone
            .map(|z| BTreeMap::from([("zone".to_owned(), z.to_owned())]))
            .unwrap_or_default(),
    }
}

/// Values of every JSON value type of the schemas, a few of each, edges included.
fn samples() -> Vec<Sample> {
    use cronix::*;
    use registry::*;
    use tenant::*;
    let example = example_tenant();
    let mut out = vec![
        sample::<TenantMetaKey, _>(example.meta.clone()),
        sample::<TenantMetaKey, _>(meta(u64::MAX, "x_1", "", "deleting")),
        sample::<DomainAliasesKey, _>(vec![]),
        sample::<DomainAliasesKey, _>(vec!["a.example.com".to_owned(), "b.example.com".to_owned()]),
        sample::<StorageConfigKey, _>(StorageConfig {
            tenant_id: 1,
            upload_quota_gb: 0,
            max_file_size_mb: 512,
            max_concurrent_uploads: u32::MAX,
        }),
        sample::<CodeIndexKey, _>(CodeIndex {
            id: 1,
            code: "default".into(),
            name: "默认租户".into(),
        }),
        sample::<NameIndexKey, _>(NameIndex {
            id: 1,
            code: "default".into(),
            primary_domain: String::new(),
        }),
        sample::<FtpUserIndexKey, _>(FtpUserIndex {
            tenant_id: 1,
            code: "default".into(),
            name: "默认租户".into(),
        }),
        sample::<HostIndexKey, _>(HostIndex {
            tenant_id: 1,
            code: "default".into(),
            host_type: "frontend".into(),
        }),
        sample::<ResolverConfigKey, _>(json!({"nameservers": ["10.0.0.2"], "ttl": 30})),
        sample::<StorageDirectoryConfigKey, _>(json!(["any", 1, null])),
        sample::<PlatformConfigKey, _>(json!("a string is a document too")),
        sample::<GroupInfoKey, _>(GroupInfo {
            description: "services every product uses".into(),
        }),
        sample::<ServiceInfoKey, _>(ServiceInfo {
            description: "sends and checks verification codes".into(),
            grpc_service: Some("common.VerifyCode".into()),
        }),
        sample::<ServiceInfoKey, _>(ServiceInfo {
            description: String::new(),
            grpc_service: None,
        }),
        sample::<InstanceDataKey, _>(instance_data(Some(8080), Some(65535), Some("zone-1"))),
        sample::<InstanceDataKey, _>(instance_data(None, None, None)),
        sample::<InstanceConfigKey, _>(InstanceConfig {
            weight: 1,
            settings: BTreeMap::new(),
        }),
        sample::<InstanceConfigKey, _>(InstanceConfig {
            weight: MAX_WEIGHT,
            settings: BTreeMap::from([("timeout".to_owned(), "5s".to_owned())]),
        }),
        sample::<NodeKey, _>(node(
            IpAddr::V4(Ipv4Addr::new(10, 0, 3, 21)),
            NodeStatus::Online,
        )),
        sample::<NodeKey, _>(node(IpAddr::V6(Ipv6Addr::LOCALHOST), NodeStatus::Paused)),
        sample::<NodeKey, _>(node(
            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0xff00, 0x42, 0x8329)),
            NodeStatus::Online,
        )),
        sample::<NodeKey, _>(node(
            IpAddr::V6(Ipv4Addr::new(192, 0, 2, 1).to_ipv6_mapped()),
            NodeStatus::Online,
        )),
        sample::<ProcKey, _>(ProcInfo {
            pid: 4242,
            job_id: "nightly-backup".into(),
            killed: false,
            started_at: 1_767_225_600_000,
        }),
        sample::<JobKey, _>(job("0 30 2 * * *", 2)),
        sample::<JobKey, _>(job("@every 5m", 0)),
        sample::<SystemInfoKey, _>(SystemInfo {
            cpu: CpuInfo {
                cores: 8,
                usage_percent: 12.5,
            },
            memory: Usage {
                total_bytes: 16 << 30,
                used_bytes: 3 << 30,
            },
            disk: Usage {
                total_bytes: 0,
                used_bytes: 0,
            },
            collected_at: 1_767_225_600_000,
        }),
    ];
    for database in example.databases {
        out.push(sample::<DatabaseConfigKey, _>(database));
    }
    for ftp in example.ftp_users {
        out.push(sample::<FtpConfigKey, _>(ftp));
    }
    for state in [
        InstanceState::Serving,
        InstanceState::Draining,
        InstanceState::Unhealthy,
    ] {
        out.push(sample::<InstanceStatusKey, _>(InstanceStatus {
            state,
            since: 0,
        }));
    }
    out
}

#[test]
fn the_values_the_codecs_encode_match_their_schemas() {
    let samples = samples();
    for s in &samples {
        s.info
            .value
            .check(NO_KEY, &s.bytes)
            .expect("the codec reads its own bytes");
        assert_matches(&s.info, &s.bytes);
    }
    // Every JSON template of the current layouts has a sample.
    for (schema, info) in json_templates() {
        if keyplane_schemas::all().iter().any(|s| s.name == schema) {
            assert!(
                samples
                    .iter()
                    .any(|s| s.info.template.source() == info.template.source()),
                "no sample of {}",
                info.template
            );
        }
    }
}

/// What a field may hold instead of its value: other types, numbers at and past the
/// integer types' ends, and strings of the shapes the value types parse.
const PROBES: &[&str] = &[
    "null",
    "true",
    "0",
    "-1",
    "1.5",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "18446744073709551616",
    "18446744073709551615",
    r#""""#,
    r#""x""#,
    r#""active""#,
    r#""online""#,
    r#""Online""#,
    r#""paused""#,
    r#""serving""#,
    r#""draining""#,
    r#""unhealthy""#,
    r#""Serving""#,
    r#""10.0.0.1""#,
    r#""255.255.255.255""#,
    r#""256.0.0.1""#,
    r#""01.2.3.4""#,
    r#""1.2.3""#,
    r#""::""#,
    r#""::1""#,
    r#""1::""#,
    r#""1:2:3:4:5:6:7::""#,
    r#""1:2:3:4:5:6:7:8""#,
    r#""1:2:3:4:5:6:7:8:9""#,
    r#""1::2::3""#,
    r#""::ffff:192.0.2.1""#,
    r#""1:2:3:4:5:6:1.2.3.4""#,
    r#""1:2:3:4:5:6:7:1.2.3.4""#,
    r#""12345::""#,
    r#""fe80::1%eth0""#,
    r#""67e55044-10b1-426f-9247-bb680e5fe0c8""#,
    r#""67E55044-10B1-426F-9247-BB680E5FE0C8""#,
    r#""67e5504410b1426f9247bb680e5fe0c8""#,
    r#""{67e55044-10b1-426f-9247-bb680e5fe0c8}""#,
    r#""urn:uuid:67e55044-10b1-426f-9247-bb680e5fe0c8""#,
    r#""67e55044-10b1-426f-9247-bb680e5fe0c""#,
    r#""67e55044_10b1_426f_9247_bb680e5fe0c8""#,
    "[]",
    r#"["x"]"#,
    "[1]",
    "{}",
    r#"{"a":"b"}"#,
    r#"{"a":1}"#,
];

/// Every path to an object member of `value`, nested objects included.
fn member_paths(value: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    if let Value::Object(map) = value {
        for (name, member) in map {
            at.push(name.clone());
            out.push(at.clone());
            member_paths(member, at, out);
            at.pop();
        }
    }
}

/// `value` with the member at `path` replaced by `with`, or removed when `with` is `None`.
fn mutated(value: &Value, path: &[String], with: Option<&Value>) -> Value {
    let mut out = value.clone();
    let mut at = &mut out;
    for name in &path[..path.len() - 1] {
        at = &mut at[name.as_str()];
    }
    let map = at.as_object_mut().expect("an object");
    let last = &path[path.len() - 1];
    match with {
        Some(with) => {
            map.insert(last.clone(), with.clone());
        }
        None => {
            map.remove(last);
        }
    }
    out
}

/// Whether the codec reads `value`: `Err` only of kind Codec.
fn codec_reads(info: &TemplateInfo, value: &Value) -> bool {
    let bytes = serde_json::to_vec(value).expect("JSON");
    match info.value.check(NO_KEY, &bytes) {
        Ok(()) => true,
        Err(e) => {
            assert_eq!(
                e.kind(),
                ErrorKind::Codec,
                "{}: {value}: {e}",
                info.template
            );
            false
        }
    }
}

#[test]
fn the_schemas_accept_what_the_codecs_read_of_every_mutation() {
    let mut refused = BTreeMap::<String, usize>::new();
    for s in samples() {
        let validator = validator(&s.info);
        let value: Value = serde_json::from_slice(&s.bytes).expect("JSON");
        let mut paths = Vec::new();
        member_paths(&value, &mut Vec::new(), &mut paths);
        let probes: Vec<Value> = PROBES
            .iter()
            .map(|p| serde_json::from_str(p).expect("a probe"))
            .collect();
        let mut cases = vec![Value::Null, json!(1), json!("x"), json!([])];
        for path in &paths {
            cases.push(mutated(&value, path, None));
            for probe in &probes {
                cases.push(mutated(&value, path, Some(probe)));
            }
        }
        for case in cases {
            let codec = codec_reads(&s.info, &case);
            let schema = validator.is_valid(&case);
            assert_eq!(
                codec,
                schema,
                "{}: the codec {} {case} but the JSON Schema {} it\nschema: {}",
                s.info.template,
                if codec { "reads" } else { "refuses" },
                if schema { "accepts" } else { "refuses" },
                s.info.value.json_schema.as_deref().unwrap_or(&Value::Null)
            );
            if !codec {
                *refused
                    .entry(s.info.template.source().to_owned())
                    .or_default() += 1;
            }
        }
    }
    for template in [
        "jxt/tenants/{id}/meta",
        "/registry/{group}/{service}/{addr}/data",
        "/registry/{group}/{service}/{addr}/status",
        "/Cronix/job/{node}/{job}",
        "/Cronix/node/{node}",
        "/Cronix/system/get/{node}",
    ] {
        assert!(
            refused.get(template).is_some_and(|n| *n > 10),
            "{template}: {refused:?}"
        );
    }
}

#[test]
fn wrong_types_missing_fields_and_unknown_words_are_refused_by_both() {
    let meta =
        json!({"id": 1, "code": "default", "name": "n", "status": "active", "billingPlan": "p"});
    let data = json!({"version": "1.4.2", "httpPort": 8080, "startedAt": 1});
    let job = json!({
        "name": "backup",
        "cron": "@daily",
        "command": "/opt/backup/run.sh",
        "timeoutSeconds": 0,
        "retry": {"maxRetries": 2, "intervalSeconds": 30},
    });
    let node = json!({
        "uuid": "67e55044-10b1-426f-9247-bb680e5fe0c8",
        "ip": "10.0.3.21",
        "port": 9527,
        "status": "online",
        "hostname": "cron-worker-1",
        "startedAt": 1,
    });
    let with = |value: &Value, path: &[&str], member: Option<Value>| {
        let path: Vec<String> = path.iter().map(|p| (*p).to_owned()).collect();
        mutated(value, &path, member.as_ref())
    };
    let cases = [
        // The tenant meta: an id as a string, a negative id, a missing code.
        (
            tenant::TenantMetaKey::info(),
            with(&meta, &["id"], Some(json!("1"))),
        ),
        (
            tenant::TenantMetaKey::info(),
            with(&meta, &["id"], Some(json!(-1))),
        ),
        (tenant::TenantMetaKey::info(), with(&meta, &["code"], None)),
        // A registry instance: a port past 65535, metadata that is not text, no start time,
        // a state that is no word of the enum, a fractional weight.
        (
            registry::InstanceDataKey::info(),
            with(&data, &["httpPort"], Some(json!(65536))),
        ),
        (
            registry::InstanceDataKey::info(),
            with(&data, &["metadata"], Some(json!({"zone": 1}))),
        ),
        (
            registry::InstanceDataKey::info(),
            with(&data, &["startedAt"], None),
        ),
        (
            registry::InstanceStatusKey::info(),
            json!({"state": "stopped", "since": 1}),
        ),
        (registry::InstanceConfigKey::info(), json!({"weight": 1.5})),
        // A cronix job: retries as a string, no retry policy, a fractional timeout.
        (
            cronix::JobKey::info(),
            with(&job, &["retry", "maxRetries"], Some(json!("2"))),
        ),
        (cronix::JobKey::info(), with(&job, &["retry"], None)),
        (
            cronix::JobKey::info(),
            with(&job, &["timeoutSeconds"], Some(json!(0.5))),
        ),
        // A cronix node: no IP address, no UUID, a status that is no word of the enum.
        (
            cronix::NodeKey::info(),
            with(&node, &["ip"], Some(json!("10.0.3.256"))),
        ),
        (
            cronix::NodeKey::info(),
            with(&node, &["uuid"], Some(json!("67e55044"))),
        ),
        (
            cronix::NodeKey::info(),
            with(&node, &["status"], Some(json!("Online"))),
        ),
    ];
    for (info, good) in [
        (tenant::TenantMetaKey::info(), &meta),
        (registry::InstanceDataKey::info(), &data),
        (cronix::JobKey::info(), &job),
        (cronix::NodeKey::info(), &node),
    ] {
        assert!(codec_reads(&info, good), "{good}");
        assert!(validator(&info).is_valid(good), "{}: {good}", info.template);
    }
    for (info, value) in cases {
        let bytes = serde_json::to_vec(&value).expect("JSON");
        let err = info
            .value
            .check(NO_KEY, &bytes)
            .expect_err(&value.to_string());
        assert_eq!(err.kind(), ErrorKind::Codec, "{value}: {err}");
        assert!(
            !validator(&info).is_valid(&value),
            "{}: the JSON Schema accepts {value}",
            info.template
        );
    }
}
