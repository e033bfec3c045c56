//! A team's own schema: `acme/apps/{app}/services/{name}` holding JSON, declared with the
//! derives, checked for ambiguity, written, and read through a live `Mirror` that follows
//! every change with a watch.
//!
//! ```sh
//! cargo run -p keyplane --example own_schema
//! ```

use keyplane::keyspace::{Json, Key, Keyspace, Prefix, TypedStore, check_keyspace};
use serde::{Deserialize, Serialize};

// Text segments: an app name of a fixed charset (refused otherwise), and a service name of
// any text (escaped in the key, reversibly).
keyplane::text_segment!(
    /// An application's name, such as `billing-api`.
    pub AppName, charset = "[a-z0-9-]", max_len = 40, policy = Reject
);
keyplane::text_segment!(
    /// A service's name: any text.
    pub ServiceName, max_len = 128, policy = Escape
);

/// A service's endpoint and owners.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Service {
    endpoint: String,
    owners: Vec<String>,
}

/// `acme/apps/{app}/services/{name}`.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "acme/apps/{app}/services/{name}", value = Json<Service>)]
struct ServiceKey {
    app: AppName,
    name: ServiceName,
}

/// `acme/apps/{app}/services/`: one app's services.
#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "acme/apps/{app}/services/", key = ServiceKey)]
struct AppServices {
    app: AppName,
}

/// Every key of the schema.
#[derive(Keyspace, Debug, Clone, PartialEq)]
enum Acme {
    Service(ServiceKey),
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The checker proves that no raw key parses as two templates.
    let findings = check_keyspace::<Acme>();
    println!("schema check: {} findings", findings.len());
    assert!(findings.is_empty(), "{findings:?}");

    let store = TypedStore::new(keyplane::open("mem://").await?);
    let billing = AppName::new("billing-api")?;
    let key = |name: &str| -> Result<ServiceKey, Box<dyn std::error::Error>> {
        Ok(ServiceKey {
            app: billing.clone(),
            name: ServiceName::new(name)?,
        })
    };

    // A mirror of the app's services: listed at one revision, then followed.
    let mirror = store
        .mirror(&AppServices {
            app: billing.clone(),
        })?
        .index("owner", |_, service: &Service| service.owners.clone())
        .start()
        .await?;

    let service = Service {
        endpoint: "10.0.0.7:8080".into(),
        owners: vec!["payments".into()],
    };
    store.put(&key("invoices/v2")?, &service).await?;
    let written = store.put(&key("refunds")?, &service).await?;

    // Read your own write: the mirror has caught up with `written`.
    let view = mirror.wait_for(written).await?;
    println!("services of billing-api: {}", view.len());
    for (key, service) in view.iter() {
        // The `/` in `invoices/v2` is escaped in the raw key and back in the typed one.
        println!(
            "  {} -> {} ({})",
            key.name,
            service.value.endpoint,
            key.encode()
        );
    }
    println!(
        "owned by payments: {}",
        view.lookup("owner", "payments").count()
    );
    assert_eq!(view.len(), 2);

    // A raw key of the schema parses back into the typed enum.
    let raw = key("invoices/v2")?.encode();
    println!("{raw} parses as {:?}", Acme::parse(&raw)?);
    Ok(())
}
