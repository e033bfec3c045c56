use super::*;

/// Options as the flags give them.
fn flags(dir: &Path) -> ConnectFlags {
    ConnectFlags {
        cacert: Some(dir.join("my ca.pem")),
        cert: Some(dir.join("client.pem")),
        key: Some(dir.join("client-key.pem")),
        user: Some("app@acme".to_owned()),
        connect_timeout: Some(Duration::from_millis(1500)),
    }
}

/// A folder with the three files of [`flags`].
fn certificates() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in ["my ca.pem", "client.pem", "client-key.pem"] {
        std::fs::write(dir.path().join(file), "PEM").unwrap();
    }
    dir
}

fn built(url: &str, flags: &ConnectFlags) -> CliResult<Session> {
    let mut options = Options::default();
    overlay(&mut options, flags)?;
    build(url.to_owned(), options, false)
}

#[test]
fn flags_become_url_parameters() {
    let dir = certificates();
    let session = built("etcd://10.0.0.1:2379?namespace=a/", &flags(dir.path())).unwrap();
    let d = dir.path().to_str().unwrap();
    assert_eq!(
        session.url,
        format!(
            "etcd://10.0.0.1:2379?namespace=a/&ca={d}/my%20ca.pem&cert={d}/client.pem\
             &key={d}/client-key.pem&user=app%40acme&connect_timeout=1500ms"
        )
    );
    assert_eq!(session.user.as_deref(), Some("app@acme"));
    assert_eq!(session.connect_timeout, Duration::from_millis(1500));
    assert!(!session.implicit);
}

#[test]
fn no_flag_leaves_the_url_as_it_is() {
    let session = built(
        "rediss://h:6379/0?connect_timeout=9s",
        &ConnectFlags::default(),
    )
    .unwrap();
    assert_eq!(session.url, "rediss://h:6379/0?connect_timeout=9s");
    assert_eq!(session.user, None);
    // The URL's own timeout bounds the open as the flag's would.
    assert_eq!(session.connect_timeout, Duration::from_secs(9));
    let session = built("rediss://h:6379/0", &ConnectFlags::default()).unwrap();
    assert_eq!(session.connect_timeout, store::CONNECT_TIMEOUT);
}

#[test]
fn a_parameter_in_the_url_and_a_flag_is_refused() {
    let dir = certificates();
    let cases = [
        ("rediss://h:6379/0?ca=/x.pem", "--cacert"),
        ("rediss://h:6379/0?cert=/x.pem", "--cert"),
        ("etcd://h:2379?key=/x.pem", "--key"),
        ("etcd://h:2379?user=root", "--user"),
        ("etcd://root:pw@h:2379", "--user"),
        ("etcd://h:2379?password=pw", "--user"),
        ("redis://h:6379/0?connect_timeout=2s", "--connect-timeout"),
    ];
    for (url, flag) in cases {
        let err = built(url, &flags(dir.path())).err().expect(url);
        assert_eq!(err.code, crate::error::code::INVALID, "{url}");
        assert!(err.message.starts_with(flag), "{url}: {}", err.message);
        assert!(!err.message.contains("pw"), "{}", err.message);
    }
}

#[test]
fn a_certificate_needs_its_key() {
    let dir = certificates();
    let mut only_cert = flags(dir.path());
    only_cert.key = None;
    let err = built("etcd://h:2379", &only_cert).err().unwrap();
    assert!(err.message.contains("--key"), "{}", err.message);
    let mut only_key = flags(dir.path());
    only_key.cert = None;
    let err = built("etcd://h:2379", &only_key).err().unwrap();
    assert!(err.message.contains("--cert"), "{}", err.message);
}

#[test]
fn a_missing_file_is_named() {
    let dir = certificates();
    let mut missing = flags(dir.path());
    missing.cacert = Some(dir.path().join("absent.pem"));
    let err = built("etcd://h:2379", &missing).err().unwrap();
    assert!(
        err.message.starts_with("--cacert ") && err.message.contains("absent.pem"),
        "{}",
        err.message
    );
}

#[test]
fn local_stores_take_no_connection_option() {
    let user = ConnectFlags {
        user: Some("root".to_owned()),
        ..ConnectFlags::default()
    };
    for url in [
        "redb:///tmp/kvctl/store.redb",
        "sled:///tmp/kvctl",
        "mem://",
    ] {
        let err = built(url, &user).err().unwrap();
        assert!(
            err.message.contains("--user applies to etcd and Redis"),
            "{}",
            err.message
        );
    }
    let mut options = Options::default();
    overlay(&mut options, &user).unwrap();
    let err = build("redb:///tmp/kvctl/store.redb".to_owned(), options, true)
        .err()
        .unwrap();
    assert!(err.message.contains("no --store given"), "{}", err.message);
}

#[test]
fn the_flags_share_no_id_with_a_subcommands_argument() {
    use clap::{CommandFactory, Parser};
    crate::cli::Cli::command().debug_assert();
    let cli = crate::cli::Cli::try_parse_from([
        "kvctl",
        "parse",
        "jxt/tenants/1/meta",
        "--key",
        "k.pem",
        "--connect-timeout",
        "2s",
    ])
    .unwrap();
    assert_eq!(cli.connect.key, Some(PathBuf::from("k.pem")));
    assert_eq!(cli.connect.connect_timeout, Some(Duration::from_secs(2)));
}
