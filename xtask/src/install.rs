//! Making the build's and the tests' external needs available.

use std::path::{Path, PathBuf};
use std::process::Command;

/// An external program the build or the tests need, with the Debian/Ubuntu package that
/// ships it.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// The binary looked for on `PATH`.
    pub bin: &'static str,
    /// The Debian/Ubuntu packages that ship it (and the files it needs).
    pub packages: &'static [&'static str],
    /// A file that must stand beside it, relative to the binary's directory.
    pub companion: Option<&'static str>,
    /// Who needs it.
    pub needed_by: &'static str,
}

impl Tool {
    /// Where the tool is, when it is there whole (binary and companion).
    fn locate(&self) -> Option<PathBuf> {
        let bin = find(self.bin)?;
        // Beside the real binary: a link on PATH points into another directory.
        let real = bin.canonicalize().ok()?;
        match self.companion {
            Some(rel) if !real.parent()?.join(rel).is_file() => None,
            _ => Some(bin),
        }
    }
}

/// `protoc`: `etcd-client` (keyplane-etcd) compiles etcd's protobufs when it is built; they import
/// protobuf's well-known types, which Debian ships apart from the compiler.
pub const PROTOC: Tool = Tool {
    bin: "protoc",
    packages: &["protobuf-compiler", "libprotobuf-dev"],
    // protoc looks for the well-known types in `include` beside its own directory.
    companion: Some("../include/google/protobuf/descriptor.proto"),
    needed_by: "building keyplane-etcd (etcd-client compiles protobufs)",
};

/// The servers the tests start.
pub const SERVERS: [Tool; 2] = [
    Tool {
        bin: "etcd",
        packages: &["etcd-server"],
        companion: None,
        needed_by: "the etcd tests",
    },
    Tool {
        bin: "redis-server",
        packages: &["redis-server"],
        companion: None,
        needed_by: "the Redis tests",
    },
];

/// The browser the web-page tests drive: Chromium, headless, through ChromeDriver's WebDriver
/// endpoint.
pub const BROWSER: [Tool; 2] = [
    Tool {
        bin: "chromium",
        packages: &["chromium"],
        companion: None,
        needed_by: "the browser tests",
    },
    Tool {
        bin: "chromedriver",
        packages: &["chromium-driver"],
        companion: None,
        needed_by: "the browser tests",
    },
];

/// The `PROTOC` to give the cargo commands xtask runs: `None` when the environment's
/// `PROTOC` or a `protoc` on `PATH` serves. A missing one is installed from the
/// distribution's packages where that is possible (root on Debian or Ubuntu), else linked from
/// the `protoc-bin-vendored` crate into cargo's own `bin` directory when that is on `PATH`;
/// failing both, the vendored one is handed to xtask's cargo commands only, with the command
/// that would serve plain cargo too.
pub fn protoc() -> Result<Option<String>, String> {
    if let Ok(path) = std::env::var("PROTOC")
        && Path::new(&path).is_file()
    {
        return Ok(None);
    }
    let usable = || on_path(PROTOC.bin).is_some_and(|p| Some(p) == PROTOC.locate());
    if usable() || (ensure(&[PROTOC]).is_ok() && usable()) {
        return Ok(None);
    }
    let vendored = protoc_bin_vendored::protoc_bin_path()
        .map_err(|e| format!("no vendored protoc for this platform: {e}; set PROTOC"))?;
    if link_into_cargo_bin(&vendored).is_some() && usable() {
        return Ok(None);
    }
    eprintln!(
        "xtask: no protoc on PATH; using the vendored one for this command only. Plain cargo \
         commands that build keyplane-etcd need one: {}",
        install_hint(&[PROTOC])
    );
    Ok(Some(vendored.display().to_string()))
}

/// Links `vendored` (whose `include` directory holds the well-known types, beside its own
/// `bin`) as `protoc` in `$CARGO_HOME/bin` when that directory is on `PATH` and has no
/// `protoc` yet; the link's path.
fn link_into_cargo_bin(vendored: &Path) -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let bin = home.join("bin");
    let path = std::env::var_os("PATH").unwrap_or_default();
    if !std::env::split_paths(&path).any(|dir| dir == bin) {
        return None;
    }
    let link = bin.join(PROTOC.bin);
    if link.exists() {
        return None;
    }
    #[cfg(unix)]
    std::os::unix::fs::symlink(vendored, &link).ok()?;
    #[cfg(not(unix))]
    return None;
    eprintln!(
        "xtask: linked {} to the protoc of the protoc-bin-vendored crate",
        link.display()
    );
    Some(link)
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn find(name: &str) -> Option<PathBuf> {
    on_path(name).or_else(|| {
        ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
            .map(PathBuf::from)
            .into_iter()
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
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

/// The exact command that installs `tools`.
fn install_hint(tools: &[Tool]) -> String {
    let packages: Vec<&str> = tools.iter().flat_map(|t| t.packages).copied().collect();
    format!(
        "`sudo apt-get update && sudo apt-get install -y {}` on Debian or Ubuntu \
         (elsewhere, the same programs from your package manager)",
        packages.join(" ")
    )
}

/// Makes every tool of `tools` available: installs the missing packages with apt-get when
/// running as root on Debian or Ubuntu, otherwise fails with the exact command to run.
pub fn ensure(tools: &[Tool]) -> Result<(), String> {
    let missing: Vec<Tool> = tools
        .iter()
        .filter(|t| t.locate().is_none())
        .copied()
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = missing
        .iter()
        .map(|t| format!("`{}` ({})", t.bin, t.needed_by))
        .collect();
    if !(is_root() && is_debian_like()) {
        return Err(format!(
            "missing {}; install with {}",
            names.join(" and "),
            install_hint(&missing)
        ));
    }
    let packages: Vec<&str> = missing.iter().flat_map(|t| t.packages).copied().collect();
    eprintln!("xtask: installing {}", packages.join(", "));
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
    install.extend(&packages);
    apt(&install)?;
    match missing.iter().find(|t| t.locate().is_none()) {
        None => Ok(()),
        Some(t) => Err(format!(
            "`{}` still missing after installing {}",
            t.bin,
            t.packages.join(" ")
        )),
    }
}

/// Where each tool is, for `cargo xtask setup`'s report.
pub fn report(tools: &[Tool]) {
    for tool in tools {
        match tool.locate() {
            Some(path) => eprintln!(
                "xtask: {:<13} {} ({})",
                tool.bin,
                path.display(),
                tool.needed_by
            ),
            None => eprintln!("xtask: {:<13} missing ({})", tool.bin, tool.needed_by),
        }
    }
}
