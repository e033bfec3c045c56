//! Derived keys, prefixes and keyspaces get proptest strategies (feature `proptest`), and the
//! derived example schemas pass the invariant harness; derived schemas with planted faults do
//! not. Run with `cargo test -p keyplane-core --features proptest --test derive_invariants`.
#![cfg(feature = "proptest")]

mod derive_schema;

use derive_schema::*;
use keyplane_core::keyspace::{
    Key, KeyStrategy, Keyspace, Text, assert_key_invariants, assert_keyspace_invariants,
    assert_prefix_invariants, segment, verify_key, verify_keyspace,
};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

keyplane_core::text_segment!(
    /// Text that may hold `@`: two of them around an `@` split two ways.
    pub Label, max_len = 32, policy = Escape
);

#[test]
fn derived_keys_pass_the_invariants() {
    assert_key_invariants::<TenantMetaKey>();
    assert_key_invariants::<TenantDatabaseKey>();
    assert_key_invariants::<FtpUserKey>();
    assert_key_invariants::<HostIndexKey>();
    assert_key_invariants::<PlatformConfigKey>();
    assert_key_invariants::<InstanceStatusKey>();
    assert_key_invariants::<InstanceConfigKey>();
    assert_key_invariants::<ProviderMapKey>();
    assert_key_invariants::<InstanceKey>();
}

#[test]
fn derived_prefixes_pass_the_invariants() {
    assert_prefix_invariants::<TenantDatabases>();
    assert_prefix_invariants::<ServiceInstances>();
    assert_prefix_invariants::<ProviderInstances>();
}

#[test]
fn derived_keyspaces_pass_the_invariants() {
    assert_keyspace_invariants::<TenantSchema>();
    assert_keyspace_invariants::<RegistrySchema>();
    assert_keyspace_invariants::<NxcSchema>();
}

#[test]
fn derived_strategies_reach_every_variant_and_build_valid_keys() {
    let mut runner = TestRunner::deterministic();
    let mut seen = [false; 5];
    for _ in 0..200 {
        let key = <TenantSchema as keyplane_core::keyspace::KeyspaceStrategy>::strategy()
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let index = match &key {
            TenantSchema::Meta(_) => 0,
            TenantSchema::Database(_) => 1,
            TenantSchema::Ftp(_) => 2,
            TenantSchema::HostIndex(_) => 3,
            TenantSchema::Platform(_) => 4,
        };
        seen[index] = true;
        assert_eq!(TenantSchema::parse(&key.encode()), Ok(key));
    }
    assert_eq!(seen, [true; 5]);
}

// Planted faults in derived schemas.

/// Two escaped labels around `@`: `x@y` + `z` encodes like `x` + `y@z` (the first label can
/// hold its delimiter).
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "/pair/{left}@{right}", value = Text)]
struct PairKey {
    left: Label,
    right: Label,
}

/// A hand-written strategy beside the derive (`no_strategy`).
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "a/{x}", value = Text, no_strategy)]
struct AnyA {
    x: Code,
}

impl KeyStrategy for AnyA {
    fn strategy() -> BoxedStrategy<Self> {
        prop_oneof![Just(code("b")), segment::<Code>()]
            .prop_map(|x| AnyA { x })
            .boxed()
    }
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "a/b", value = Text)]
struct FixedB {}

#[derive(Keyspace, Debug, Clone, PartialEq)]
enum Overlapping {
    Any(AnyA),
    Fixed(FixedB),
}

#[test]
fn the_harness_rejects_planted_faults_in_derived_schemas() {
    let err = verify_key::<PairKey>().unwrap_err();
    assert!(err.contains('@'), "{err}");

    assert!(verify_key::<AnyA>().is_ok());
    let err = verify_keyspace::<Overlapping>().unwrap_err();
    assert!(err.contains("a/{x}") && err.contains("a/b"), "{err}");
}

proptest! {
    /// The specialised `write` and `parse` of the derive agree with the generic runtime
    /// `Template::write` and `Template::captures_vec`.
    #[test]
    fn derived_code_agrees_with_the_runtime_template(
        status in <InstanceStatusKey as KeyStrategy>::strategy(),
        map in <ProviderMapKey as KeyStrategy>::strategy(),
    ) {
        let mut generic = String::new();
        InstanceStatusKey::template().write(
            &mut generic,
            &[&status.group, &status.service, &status.ip, &status.port],
        );
        prop_assert_eq!(&generic, &status.encode());
        let captures = InstanceStatusKey::template().captures_vec(&generic).unwrap();
        let fields: Vec<String> = status.fields().into_iter().map(|(_, v)| v).collect();
        prop_assert_eq!(captures, fields);

        let mut generic = String::new();
        ProviderMapKey::template().write(&mut generic, &[&map.realm, &map.provider]);
        prop_assert_eq!(&generic, &map.encode());
        prop_assert_eq!(ProviderMapKey::parse(&generic).unwrap(), map);
    }
}

/// A segment of the user's own with no proptest strategy.
#[derive(Debug, Clone, PartialEq)]
struct Region(String);

impl keyplane_core::keyspace::Segment for Region {
    fn encode(&self, _sep: keyplane_core::keyspace::Separator, out: &mut String) {
        out.push_str(&self.0);
    }
    fn decode(
        raw: &str,
        _sep: keyplane_core::keyspace::Separator,
    ) -> Result<Self, keyplane_core::keyspace::SegmentError> {
        match raw {
            "eu" | "us" => Ok(Region(raw.to_owned())),
            _ => Err(keyplane_core::keyspace::SegmentError::new(raw, "eu or us")),
        }
    }
    fn describe() -> String {
        "eu or us".into()
    }
}

/// A key, a prefix and a keyspace over it, derived with no `no_strategy`: with `proptest` on
/// (as in this test) they compile, without a strategy; their other variants keep theirs.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "geo/{region}/{id}", value = Text)]
struct RegionKey {
    region: Region,
    id: u64,
}

#[derive(keyplane_core::keyspace::Prefix, Debug, Clone, PartialEq)]
#[kv(template = "geo/{region}/", key = RegionKey)]
struct RegionDir {
    region: Region,
}

#[derive(Keyspace, Debug, Clone, PartialEq)]
enum Geo {
    Region(RegionKey),
}

#[test]
fn a_custom_segment_without_a_strategy_compiles_with_proptest_on() {
    let key = RegionKey {
        region: Region("eu".into()),
        id: 7,
    };
    assert_eq!(key.encode(), "geo/eu/7");
    assert_eq!(RegionKey::parse("geo/us/1").unwrap().id, 1);
    let dir = RegionDir {
        region: Region("us".into()),
    };
    assert_eq!(keyplane_core::keyspace::Prefix::encode(&dir), "geo/us/");
    assert_eq!(Geo::parse("geo/eu/7").unwrap(), Geo::Region(key));
}
