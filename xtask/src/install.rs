//! Making the build's and the tests' external needs available.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The path of a `protoc` binary: `$PROTOC` when set, else the one shipped by the
/// `protoc-bin-vendored` crate.
pub fn protoc() -> Result<String, String> {
    if let Ok(path) = std::env::var("PROTOC")
        && Path::new(&path).is_file()
    {
        return Ok(path);
    }
    let path = protoc_bin_vendored::protoc_bin_path()
        .map_err(|e| format!("no vendored protoc for this platform: {e}; set PROTOC"))?;
    Ok(path.display().to_string())
}

/// The server binaries the tests start, with the Debian/Ubuntu package that ships each.
const SERVERS: [(&str, &str); 2] = [("etcd", "etcd-server"), ("redis-server", "redis-server")];

fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin", "/usr/sbin", "/usr/local/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn is_debian_like() -> bool {
    Path::new("/etc/debian_version").exists() && find("apt-get").is_some()
}

/// Makes `etcd` and `redis-server` available: installs the missing packages with apt-get when
/// running as root on Debian or Ubuntu, otherwise fails with the exact command to run.
pub fn servers() -> Result<(), String> {
    let missing: Vec<&str> = SERVERS
        .iter()
        .filter(|(bin, _)| find(bin).is_none())
        .map(|(_, pkg)| *pkg)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let command = format!("apt-get install -y {}", missing.join(" "));
    if !(is_root() && is_debian_like()) {
        return Err(format!(
            "the tests need {}; install them, e.g. `sudo apt-get update && sudo {command}`",
            missing.join(" and ")
        ));
    }
    eprintln!("xtask: installing {}", missing.join(", "));
    let apt = |args: &[&str]| -> Result<(), String> {
        let status = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map_err(|e| format!("apt-get: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("apt-get {} failed", args.join(" ")))
        }
    };
    apt(&["update", "-qq"])?;
    let mut install = vec!["install", "-y", "-qq", "--no-install-recommends"];
    install.extend(&missing);
    apt(&install)?;
    match SERVERS.iter().find(|(bin, _)| find(bin).is_none()) {
        None => Ok(()),
        Some((bin, pkg)) => Err(format!("`{bin}` still missing after installing {pkg}")),
    }
}
