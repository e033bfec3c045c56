keyplane::text_segment!(pub Name, charset = "[a-z0-9-]", max_len = 63, policy = Reject);
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Service {
    image: String,
    replicas: u32,
}
#[derive(keyplane::keyspace::Key, Debug, Clone, PartialEq)]
#[kv(template = "acme/apps/{app}/services/{name}", value = keyplane::keyspace::Json<Service>)]
struct ServiceKey {
    app: u64,
    name: Name,
}
#[derive(keyplane::keyspace::Keyspace, Debug, Clone, PartialEq)]
enum Acme {
    Service(ServiceKey),
}
fn main() -> std::process::ExitCode {
    keyplane_cli::Kvctl::new().keyspace::<Acme>("acme").run()
}
