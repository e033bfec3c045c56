//! The cronix keyspace: byte-identical to the document's table (`/Cronix/`, capitalised),
//! judged by the schema checker and the invariant harness.

use keyplane_core::keyspace::{
    Codec, Keyspace, Prefix, assert_key_invariants, assert_keyspace_invariants,
    assert_prefix_invariants, check_keyspace,
};
use keyplane_schemas::cronix::*;
use uuid::Uuid;

const NODE: &str = "67e55044-10b1-426f-9247-bb680e5fe0c8";

fn node() -> Uuid {
    NODE.parse().unwrap()
}

fn job() -> JobId {
    JobId::new("nightly-backup").unwrap()
}

#[test]
fn keys_are_the_documents_layout() {
    let n = node();
    let cases: Vec<(CronixKeyspace, String)> = vec![
        (NodeKey { node: n }.into(), format!("/Cronix/node/{NODE}")),
        (
            ProcKey {
                node: n,
                job: job(),
                pid: 4242,
            }
            .into(),
            format!("/Cronix/proc/{NODE}/nightly-backup/4242"),
        ),
        (
            JobKey {
                node: n,
                job: job(),
            }
            .into(),
            format!("/Cronix/job/{NODE}/nightly-backup"),
        ),
        (
            OnceKey { job: job() }.into(),
            "/Cronix/once/nightly-backup".into(),
        ),
        (
            LockKey {
                name: LockName::new("scheduler.dispatch").unwrap(),
            }
            .into(),
            "/Cronix/lock/scheduler.dispatch".into(),
        ),
        (
            SystemSwitchKey { node: n }.into(),
            format!("/Cronix/system/switch/{NODE}"),
        ),
        (
            SystemInfoKey { node: n }.into(),
            format!("/Cronix/system/get/{NODE}"),
        ),
    ];
    for (key, raw) in &cases {
        assert_eq!(&key.encode(), raw);
        assert_eq!(CronixKeyspace::parse(raw).as_ref(), Ok(key));
    }
    assert_eq!(CronixKeyspace::templates().len(), cases.len());
    assert_eq!(NodesDir {}.encode(), "/Cronix/node/");
    assert_eq!(
        NodeProcsDir { node: n }.encode(),
        format!("/Cronix/proc/{NODE}/")
    );
    assert_eq!(
        JobProcsDir {
            node: n,
            job: job()
        }
        .encode(),
        format!("/Cronix/proc/{NODE}/nightly-backup/")
    );
    assert_eq!(
        NodeJobsDir { node: n }.encode(),
        format!("/Cronix/job/{NODE}/")
    );
    assert_eq!(OncesDir {}.encode(), "/Cronix/once/");
    assert_eq!(LocksDir {}.encode(), "/Cronix/lock/");
    assert_eq!(SwitchesDir {}.encode(), "/Cronix/system/switch/");
    assert_eq!(SystemInfosDir {}.encode(), "/Cronix/system/get/");
}

#[test]
fn segments_follow_the_rules() {
    for bad in [
        format!("/cronix/node/{NODE}"), // the root is capitalised
        format!("Cronix/node/{NODE}"),  // leading `/`
        format!("/Cronix/node/{}", NODE.to_uppercase()), // UUIDs are lowercase
        "/Cronix/node/67e5504410b1426f9247bb680e5fe0c8".into(), // and hyphenated
        format!("/Cronix/proc/{NODE}/nightly-backup/0042"), // pid not canonical
        format!("/Cronix/proc/{NODE}/nightly-backup/-1"), // pid is unsigned
        format!("/Cronix/job/{NODE}/nightly backup"), // job id charset
        format!("/Cronix/job/{NODE}/a.b"), // job id charset
        "/Cronix/lock/a:b".into(),      // lock name charset
        "/Cronix/lock/..".into(),       // dot segment
        "/Cronix/once/".into(),         // empty segment
        format!("/Cronix/system/put/{NODE}"), // not a key of the document
        format!("/Cronix/node/{NODE}/"), // a file has no trailing `/`
    ] {
        assert!(CronixKeyspace::parse(&bad).is_err(), "{bad:?} parsed");
    }
    assert!(JobId::new("a".repeat(65)).is_err());
    assert!(LockName::new("a".repeat(129)).is_err());
}

#[test]
fn values_have_the_documents_shapes() {
    // A one-shot trigger holds a node UUID, or the empty string for every node.
    assert_eq!(
        OnceTargetCodec.encode(&OnceTarget::Node(node())).unwrap(),
        NODE.as_bytes()
    );
    assert_eq!(OnceTargetCodec.encode(&OnceTarget::AllNodes).unwrap(), b"");
    let info = NodeInfo {
        uuid: node(),
        ip: "10.0.3.21".parse().unwrap(),
        port: 9527,
        status: NodeStatus::Online,
        hostname: "w1".into(),
        started_at: 7,
    };
    assert_eq!(
        serde_json::to_string(&info).unwrap(),
        format!(
            r#"{{"uuid":"{NODE}","ip":"10.0.3.21","port":9527,"status":"online","hostname":"w1","startedAt":7}}"#
        )
    );
    let proc = ProcInfo {
        pid: 1,
        job_id: "j".into(),
        killed: false,
        started_at: 2,
    };
    assert_eq!(
        serde_json::to_string(&proc).unwrap(),
        r#"{"pid":1,"jobId":"j","killed":false,"startedAt":2}"#
    );
}

#[test]
fn the_checker_finds_nothing_and_no_exception_is_declared() {
    let findings = check_keyspace::<CronixKeyspace>();
    assert!(findings.is_empty(), "{findings:#?}");
    for template in CronixKeyspace::templates() {
        assert!(
            template.directory_of.is_empty(),
            "{}",
            template.template.source()
        );
    }
    // The document's capitalised root is why the naming rule admits uppercase.
    assert_eq!(
        CronixKeyspace::naming_rule().unwrap().describe(),
        "[a-zA-Z]"
    );
}

#[test]
fn the_invariant_harness_passes() {
    assert_keyspace_invariants::<CronixKeyspace>();
    assert_key_invariants::<NodeKey>();
    assert_key_invariants::<ProcKey>();
    assert_key_invariants::<JobKey>();
    assert_key_invariants::<OnceKey>();
    assert_key_invariants::<LockKey>();
    assert_key_invariants::<SystemSwitchKey>();
    assert_key_invariants::<SystemInfoKey>();
    assert_prefix_invariants::<NodesDir>();
    assert_prefix_invariants::<NodeProcsDir>();
    assert_prefix_invariants::<JobProcsDir>();
    assert_prefix_invariants::<NodeJobsDir>();
    assert_prefix_invariants::<OncesDir>();
    assert_prefix_invariants::<LocksDir>();
    assert_prefix_invariants::<SwitchesDir>();
    assert_prefix_invariants::<SystemInfosDir>();
}

#[test]
fn the_catalog_lists_and_parses_cronix() {
    let schema = keyplane_schemas::find("cronix").expect("in the catalog");
    assert_eq!(schema.store, "etcd");
    let parsed = schema
        .parse(&format!("/Cronix/job/{NODE}/nightly-backup"))
        .unwrap();
    assert_eq!(parsed.template, "/Cronix/job/{node}/{job}");
    assert_eq!(
        parsed.fields,
        vec![
            ("node", NODE.to_string()),
            ("job", "nightly-backup".to_string())
        ]
    );
}
