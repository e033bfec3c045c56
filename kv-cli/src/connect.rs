//! Which store a command uses, and how it is reached: `--store URL` or `--store NAME` (also
//! `KVCTL_STORE`), else the config file's `default_store`, else the local redb store. The
//! connection flags (`--cacert`, `--cert`, `--key`, `--user`, `--connect-timeout`, etcdctl's
//! names) and a named store's options become the URL's query parameters (`ca`, `cert`,
//! `key`, `user`, `connect_timeout`; the password is added when the store is opened), the
//! grammar every backend's URL parser takes.

use crate::config::{Loaded, StoreEntry};
use crate::error::{CliError, CliResult};
use crate::params;
use crate::store::{self, Session};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The connection flags, global to every command. Their ids are prefixed so that no
/// subcommand's argument (`parse KEY`) shares one.
#[derive(clap::Args, Default, Clone)]
pub(crate) struct ConnectFlags {
    /// Verify the store's certificate with this CA certificate file (PEM), for etcd over TLS
    /// and rediss://.
    #[arg(
        long = "cacert",
        id = "connect_cacert",
        global = true,
        value_name = "FILE"
    )]
    pub(crate) cacert: Option<PathBuf>,
    /// Present this client certificate file (PEM) to the store; with --key.
    #[arg(long = "cert", id = "connect_cert", global = true, value_name = "FILE")]
    pub(crate) cert: Option<PathBuf>,
    /// The client certificate's private key file (PEM); with --cert.
    #[arg(long = "key", id = "connect_key", global = true, value_name = "FILE")]
    pub(crate) key: Option<PathBuf>,
    /// Authenticate as this user. The password comes from KVCTL_PASSWORD, else it is asked
    /// on the terminal (not echoed); it is never printed.
    #[arg(long = "user", id = "connect_user", global = true, value_name = "NAME")]
    pub(crate) user: Option<String>,
    /// How long connecting to the store may take, with its unit: 3s (the default), 500ms, 1m.
    #[arg(
        long = "connect-timeout",
        id = "connect_timeout",
        global = true,
        value_name = "DURATION",
        value_parser = params::parse_duration
    )]
    pub(crate) connect_timeout: Option<Duration>,
}

/// A connection option with where it came from, for messages.
struct Given<T> {
    value: T,
    /// The flag (`--cacert`) or the config file's key that gave it.
    from: String,
}

/// The options of one store, flags over the named store's entry.
#[derive(Default)]
struct Options {
    cacert: Option<Given<PathBuf>>,
    cert: Option<Given<PathBuf>>,
    key: Option<Given<PathBuf>>,
    user: Option<Given<String>>,
    connect_timeout: Option<Given<Duration>>,
}

impl Options {
    /// The first option given, if any: for the refusal of options on a local store.
    fn first(&self) -> Option<&str> {
        [
            self.cacert.as_ref().map(|g| &g.from),
            self.cert.as_ref().map(|g| &g.from),
            self.key.as_ref().map(|g| &g.from),
            self.user.as_ref().map(|g| &g.from),
            self.connect_timeout.as_ref().map(|g| &g.from),
        ]
        .into_iter()
        .flatten()
        .next()
        .map(String::as_str)
    }
}

/// Chooses the store of this run from `--store` (`store`) and the connection flags, makes
/// it the session's store, and returns its URL (without the password: see
/// [`Session::user`]).
///
/// # Errors
/// Exit code 2 for a store name the config file does not list, an option a local store
/// cannot take, a parameter given both in the URL and as an option, a certificate file that
/// cannot be read, `--cert` without `--key` or the reverse.
pub(crate) fn choose(store: Option<&str>, flags: &ConnectFlags) -> CliResult<String> {
    let session = session(store, flags)?;
    let url = session.url.clone();
    store::set_session(session);
    Ok(url)
}

/// The session of `store` with `flags` (see [`choose`]).
fn session(store: Option<&str>, flags: &ConnectFlags) -> CliResult<Session> {
    let store = store.filter(|s| !s.is_empty());
    let (url, mut options, implicit) = match store {
        Some(url) if is_url(url) => (url.to_owned(), Options::default(), false),
        Some(name) => {
            let loaded = crate::config::load()?;
            let (url, options) = named(name, loaded.as_ref())?;
            (url, options, false)
        }
        None => {
            let loaded = crate::config::load()?;
            match loaded
                .as_ref()
                .and_then(|l| l.config.default_store.as_deref())
            {
                Some(url) if is_url(url) => (url.to_owned(), Options::default(), false),
                Some(name) => {
                    let (url, options) = named(name, loaded.as_ref())?;
                    (url, options, false)
                }
                None => (store::default_url()?, Options::default(), true),
            }
        }
    };
    overlay(&mut options, flags)?;
    build(url, options, implicit)
}

/// Whether `store` is a URL rather than the name of a configured store.
fn is_url(store: &str) -> bool {
    store.contains("://")
}

/// Whether `store` can be the name of a configured store: a word of letters, digits, `-`,
/// `_` and `.`. Anything else is a mistyped URL, which may hold a password: messages do not
/// repeat it.
fn is_name(store: &str) -> bool {
    !store.is_empty()
        && store
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The URL and options of the store named `name` in the config file.
fn named(name: &str, loaded: Option<&Loaded>) -> CliResult<(String, Options)> {
    if !is_name(name) {
        return Err(CliError::invalid(
            "--store (or KVCTL_STORE) is neither a URL (such as etcd://HOST:2379 or \
             redis://HOST:6379) nor a store name of the config file (letters, digits, `-`, `_`, \
             `.`); it is not repeated here, as it may hold a password",
        ));
    }
    let Some(loaded) = loaded else {
        return Err(CliError::invalid(format!(
            "store {name:?}: not a URL (such as etcd://HOST:2379), and there is no config file \
             to name it (see `[stores.NAME]` in kvctl's README)"
        )));
    };
    let file = loaded.path.display();
    let Some(entry) = loaded.config.stores.get(name) else {
        let known: Vec<&str> = loaded.config.stores.keys().map(String::as_str).collect();
        return Err(CliError::invalid(format!(
            "store {name:?}: not a URL (such as etcd://HOST:2379), and config file {file} \
             names no such store (it names: {})",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )));
    };
    let StoreEntry {
        url,
        cacert,
        cert,
        key,
        user,
        connect_timeout,
    } = entry;
    let from = |field: &str| format!("`{field}` of [stores.{name}] in {file}");
    let path = |p: &Option<PathBuf>, field: &str| {
        p.as_ref().map(|p| Given {
            value: loaded.resolve(p),
            from: from(field),
        })
    };
    let connect_timeout = match connect_timeout {
        Some(text) => Some(Given {
            value: params::parse_duration(text)
                .map_err(|e| CliError::invalid(format!("{}: {e}", from("connect_timeout"))))?,
            from: from("connect_timeout"),
        }),
        None => None,
    };
    Ok((
        url.clone(),
        Options {
            cacert: path(cacert, "cacert"),
            cert: path(cert, "cert"),
            key: path(key, "key"),
            user: user.clone().map(|value| Given {
                value,
                from: from("user"),
            }),
            connect_timeout,
        },
    ))
}

/// Puts the flags given over `options`.
fn overlay(options: &mut Options, flags: &ConnectFlags) -> CliResult<()> {
    let path = |p: &Option<PathBuf>, flag: &str| -> CliResult<Option<Given<PathBuf>>> {
        p.as_ref()
            .map(|p| {
                let value = std::path::absolute(p)
                    .map_err(|e| CliError::invalid(format!("{flag} {}: {e}", p.display())))?;
                Ok(Given {
                    value,
                    from: flag.to_owned(),
                })
            })
            .transpose()
    };
    if let Some(given) = path(&flags.cacert, "--cacert")? {
        options.cacert = Some(given);
    }
    if let Some(given) = path(&flags.cert, "--cert")? {
        options.cert = Some(given);
    }
    if let Some(given) = path(&flags.key, "--key")? {
        options.key = Some(given);
    }
    if let Some(user) = &flags.user {
        options.user = Some(Given {
            value: user.clone(),
            from: "--user".to_owned(),
        });
    }
    if let Some(timeout) = flags.connect_timeout {
        options.connect_timeout = Some(Given {
            value: timeout,
            from: "--connect-timeout".to_owned(),
        });
    }
    Ok(())
}

/// The session of `url` with `options` applied as query parameters.
fn build(mut url: String, options: Options, implicit: bool) -> CliResult<Session> {
    if (store::is_embedded(&url) || url.starts_with("mem://"))
        && let Some(from) = options.first()
    {
        let why = if implicit {
            " (no --store given: the local store)"
        } else {
            ""
        };
        return Err(CliError::invalid(format!(
            "{from} applies to etcd and Redis stores, not to {}{why}",
            keyplane::raw::redact_url(&url)
        )));
    }
    match (&options.cert, &options.key) {
        (Some(cert), None) => {
            return Err(CliError::invalid(format!(
                "{} needs the certificate's private key too (--key)",
                cert.from
            )));
        }
        (None, Some(key)) => {
            return Err(CliError::invalid(format!(
                "{} needs its certificate too (--cert)",
                key.from
            )));
        }
        _ => {}
    }
    for (given, name) in [
        (&options.cacert, "ca"),
        (&options.cert, "cert"),
        (&options.key, "key"),
    ] {
        if let Some(given) = given {
            params::append(
                &mut url,
                name,
                &readable(&given.value, &given.from)?,
                &given.from,
            )?;
        }
    }
    if let Some(user) = &options.user {
        if has_userinfo(&url) {
            return Err(CliError::invalid(format!(
                "{}: the store URL has credentials already (user@host); give them once",
                user.from
            )));
        }
        if params::value(&url, "password").is_some() {
            return Err(CliError::invalid(format!(
                "{}: the store URL has `password=` already; the password of {} comes from \
                 KVCTL_PASSWORD or the terminal",
                user.from, user.from
            )));
        }
        params::append(&mut url, "user", &user.value, &user.from)?;
    }
    let connect_timeout = match &options.connect_timeout {
        Some(given) => {
            let text = params::format_duration(given.value);
            params::append(&mut url, "connect_timeout", &text, &given.from)?;
            given.value
        }
        None => store::url_connect_timeout(&url).unwrap_or(store::CONNECT_TIMEOUT),
    };
    Ok(Session {
        url,
        user: options.user.map(|u| u.value),
        implicit,
        connect_timeout,
    })
}

/// `path` as text, once checked to be a readable file.
fn readable(path: &Path, from: &str) -> CliResult<String> {
    if let Err(e) = std::fs::File::open(path) {
        return Err(CliError::invalid(format!(
            "{from} {}: cannot read it: {e}",
            path.display()
        )));
    }
    path.to_str().map(str::to_owned).ok_or_else(|| {
        CliError::invalid(format!("{from} {}: the path is not UTF-8", path.display()))
    })
}

/// Whether the network URL `url` has a user info (`user:password@host`).
fn has_userinfo(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['?', '#']).next().unwrap_or(rest);
    authority.contains('@')
}

#[cfg(test)]
#[path = "connect_tests.rs"]
mod tests;
