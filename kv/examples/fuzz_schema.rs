//! Fuzz your own schema with proptest: the derived strategies generate adversarial keys, the
//! harness proves the path invariants (round trip, canonical parsing, no ambiguity, prefixes
//! that never over-match...), and your own properties run over the same strategies.
//!
//! ```sh
//! cargo run -p keyplane --features proptest --example fuzz_schema
//! ```

use keyplane::keyspace::{
    Key, KeyStrategy, Keyspace, Prefix, PrefixStrategy, Text, assert_key_invariants,
    assert_keyspace_invariants, assert_prefix_invariants,
};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

keyplane::text_segment!(
    /// An application's name, such as `billing-api`.
    pub AppName, charset = "[a-z0-9-]", max_len = 40, policy = Reject
);
keyplane::text_segment!(
    /// A service's name: any text, escaped in the key.
    pub ServiceName, max_len = 128, policy = Escape
);

/// `acme/apps/{app}/services/{name}`.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "acme/apps/{app}/services/{name}", value = Text)]
struct ServiceKey {
    app: AppName,
    name: ServiceName,
}

/// `acme/apps/{app}/config`: a key beside the services directory.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "acme/apps/{app}/config", value = Text)]
struct AppConfigKey {
    app: AppName,
}

/// `acme/apps/{app}/services/`.
#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "acme/apps/{app}/services/", key = ServiceKey)]
struct AppServices {
    app: AppName,
}

/// The schema.
#[derive(Keyspace, Debug, Clone, PartialEq)]
enum Acme {
    Service(ServiceKey),
    Config(AppConfigKey),
}

fn main() {
    // Each runs hundreds of generated cases and panics with a shrunk counterexample.
    assert_key_invariants::<ServiceKey>();
    assert_key_invariants::<AppConfigKey>();
    assert_prefix_invariants::<AppServices>();
    assert_keyspace_invariants::<Acme>();
    println!("invariants hold for ServiceKey, AppConfigKey, AppServices and Acme");

    // A property of your own: a service key always lies in its app's directory, and in no
    // other app's (`app-1/` is not `app-10/`).
    let mut runner = TestRunner::default();
    runner
        .run(
            &(ServiceKey::strategy(), AppServices::strategy()),
            |(key, dir)| {
                let inside = key.encode().starts_with(&dir.encode());
                prop_assert_eq!(inside, key.app == dir.app);
                Ok(())
            },
        )
        .expect("a key lies in its own app's directory only");
    println!("a service key lies in its own app's directory only");
}
