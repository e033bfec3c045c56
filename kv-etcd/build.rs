//! Says what the build needs before `etcd-client`'s build script fails on it: `etcd-client`
//! compiles etcd's protobuf definitions, so building this crate needs `protoc`.

use std::path::{Path, PathBuf};

const HOW: &str = "keyplane-etcd needs `protoc` to build (etcd-client compiles etcd's \
protobufs): put it on PATH or name it with PROTOC, with protobuf's well-known types beside it \
(Debian/Ubuntu: `apt-get install protobuf-compiler libprotobuf-dev`; Homebrew: `brew install \
protobuf`; in this workspace: `cargo xtask setup`)";

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=PROTOC");
    let protoc = match std::env::var_os("PROTOC") {
        Some(named) => {
            let named = PathBuf::from(named);
            if !named.is_file() {
                println!(
                    "cargo::error=PROTOC names {}, which is not a file. {HOW}",
                    named.display()
                );
                return;
            }
            named
        }
        None => match on_path("protoc") {
            Some(found) => found,
            None => {
                println!("cargo::error=no `protoc` on PATH. {HOW}");
                return;
            }
        },
    };
    let include = protoc
        .canonicalize()
        .ok()
        .and_then(|real| real.parent().map(|bin| bin.join("../include")));
    let well_known = Path::new("google/protobuf/descriptor.proto");
    let beside = include.is_some_and(|dir| dir.join(well_known).is_file());
    let named = std::env::var_os("PROTOC_INCLUDE")
        .is_some_and(|dir| Path::new(&dir).join(well_known).is_file());
    if !beside && !named {
        println!(
            "cargo::warning=protobuf's well-known types are not beside {} (nor in \
             PROTOC_INCLUDE); if etcd-client's build fails on google/protobuf/*.proto: {HOW}",
            protoc.display()
        );
    }
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
