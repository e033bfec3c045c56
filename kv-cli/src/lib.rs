//! `kvctl`: a schema-aware command line tool for etcd, Redis, embedded and in-memory stores, and
//! the library to build one's own over one's own schemas.
//!
//! Every key is read through a schema catalog: the five bundled schemas
//! (`keyplane-schemas`), the schemas a team gives [`Kvctl::schema`], and manifest files given
//! with `--schema FILE` (also `KVCTL_SCHEMA` and the config file). `parse` says which
//! template a raw key belongs to; `get`/`ls`/`put`/`rm`/`watch` take raw keys or typed
//! addresses (`tenant.meta id=1`); `put` refuses a key or value its schema refuses; `lint`
//! reports keys and values no schema accepts.
//!
//! A team's own `kvctl`, with its schema beside the bundled ones:
//!
//! ```no_run
//! use keyplane::keyspace::{Json, Key, Keyspace, Schema};
//!
//! #[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
//! struct Service { image: String }
//!
//! #[derive(Key, Debug, Clone, PartialEq)]
//! #[kv(template = "acme/apps/{app}/services/{id}", value = Json<Service>)]
//! struct ServiceKey { app: u64, id: u64 }
//!
//! #[derive(Keyspace, Debug, Clone, PartialEq)]
//! enum AcmeKeys { Service(ServiceKey) }
//!
//! fn main() -> std::process::ExitCode {
//!     keyplane_cli::Kvctl::new()
//!         .schema(Schema::of::<AcmeKeys>("acme").with_store("etcd"))
//!         .run()
//! }
//! ```
//!
//! `acme.service app=1 id=2` is then a typed address, `put` checks values by `Service`
//! (and by its JSON Schema when it derives `schemars::JsonSchema`), `ls -l` shows the type
//! of each key, and `lint` reports keys under `acme/` that match no template.

mod address;
mod catalog;
mod cli;
mod cmd;
mod config;
mod connect;
mod demo;
mod error;
mod interrupt;
mod keys;
mod manifest;
mod output;
mod params;
mod password;
mod secrets;
mod store;
mod tree;
mod ui;
mod values;

use clap::Parser;
use cli::{Cli, Command};
use cmd::Ctx;
use error::{CliError, CliResult};
use keyplane::keyspace::Schema;
use std::ffi::OsString;
use std::process::ExitCode;

/// `kvctl`, assembled: which schemas it knows. [`Kvctl::new`] knows the bundled five (and
/// their old layouts); add a team's own with [`Kvctl::schema`], or start from
/// [`Kvctl::without_bundled`]. Manifest files given on the command line are loaded on top.
#[derive(Clone)]
pub struct Kvctl {
    catalog: catalog::Catalog,
}

impl Default for Kvctl {
    fn default() -> Self {
        Kvctl::new()
    }
}

impl Kvctl {
    /// `kvctl` with the bundled schemas.
    pub fn new() -> Self {
        Kvctl {
            catalog: catalog::Catalog::bundled(),
        }
    }

    /// `kvctl` with no schema: only those given to [`schema`](Self::schema) and the manifest
    /// files.
    pub fn without_bundled() -> Self {
        Kvctl {
            catalog: catalog::Catalog::default(),
        }
    }

    /// Adds a schema (a derived one: `Schema::of::<MyKeyspace>(..)`). Schemas added here are
    /// tried before the bundled ones when a raw key is parsed; an old layout
    /// (`Schema::read_only`) is listed with `kvctl schema --all`. Two schemas of one name
    /// stop `kvctl` with exit code 2 when it runs.
    pub fn schema(mut self, schema: Schema) -> Self {
        let position = self
            .catalog
            .schemas
            .iter()
            .position(|l| !l.added)
            .unwrap_or(self.catalog.schemas.len());
        let mut listed = catalog::Listed::derived(schema, !schema.read_only);
        listed.added = true;
        self.catalog.schemas.insert(position, listed);
        self
    }

    /// Adds the schema of keyspace `K` named `name`: `.keyspace::<AcmeKeys>("acme")` is
    /// `.schema(Schema::of::<AcmeKeys>("acme"))`.
    pub fn keyspace<K: keyplane::keyspace::Keyspace>(self, name: &'static str) -> Self {
        self.schema(Schema::of::<K>(name))
    }

    /// Runs `kvctl` with the process's arguments and returns its exit code.
    pub fn run(self) -> ExitCode {
        self.run_from(std::env::args_os())
    }

    /// Runs `kvctl` with `args` (the first is the program's name) and returns its exit code.
    pub fn run_from<I, T>(self, args: I) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let cli = match Cli::try_parse_from(args) {
            Ok(cli) => cli,
            Err(e) => {
                // Help and version go to stdout with 0; usage errors to stderr with 2.
                let _ = e.print();
                return ExitCode::from(if e.use_stderr() {
                    error::code::INVALID
                } else {
                    0
                });
            }
        };
        init_tracing(cli.verbose, cli.trace);
        store::set_deadline(cli.timeout);
        keys::set_hex(cli.hex);
        if let Err(e) = self.install(&cli.schema) {
            eprintln!("kvctl: {e}");
            return ExitCode::from(e.code);
        }
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("kvctl: cannot start the runtime: {e}");
                return ExitCode::from(error::code::OTHER);
            }
        };
        let result = runtime.block_on(run(cli));
        if let Some(url) = store::implicit_writes() {
            // A forgotten --store (or KVCTL_STORE) must not look like a write to the store
            // that was meant.
            eprintln!("kvctl: wrote to the local store {url} (no --store given)");
        }
        // Background tasks (keep-alives, sweepers) end with the runtime.
        runtime.shutdown_timeout(std::time::Duration::from_millis(200));
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("kvctl: {e}");
                ExitCode::from(e.code)
            }
        }
    }

    /// Loads the manifest files (`--schema`, `KVCTL_SCHEMA`, the config file) on top of the
    /// schemas given, and makes the result the catalog every command reads.
    fn install(mut self, flags: &[String]) -> CliResult<()> {
        let mut loaded = Vec::new();
        for path in config::schema_files(flags)? {
            loaded.push(manifest::load(&path)?);
        }
        // Manifests first, then the schemas given in code, then the bundled ones.
        self.catalog.schemas.splice(0..0, loaded);
        let mut names = std::collections::BTreeSet::new();
        for listed in &self.catalog.schemas {
            if !names.insert(listed.schema.name) {
                return Err(CliError::invalid(format!(
                    "two schemas are named {:?}: rename one (a manifest's `name`)",
                    listed.schema.name
                )));
            }
        }
        catalog::install(self.catalog);
        Ok(())
    }
}

async fn run(mut cli: Cli) -> CliResult<()> {
    match &cli.command {
        Command::Completions { shell } => return cmd::help::completions(*shell),
        Command::Man => return cmd::help::man(),
        _ => {}
    }
    if let Command::Watch { address, exact, .. } = &mut cli.command {
        watched_key(address, exact, &mut cli.connect)?;
    }
    let url = connect::choose(cli.store.as_deref(), &cli.connect)?;
    let ctx = Ctx {
        url,
        format: cli.output,
        keyring: cli.keyring,
    };
    match cli.command {
        Command::Demo => demo::run(&ctx).await,
        Command::Schema { name, all } => cmd::schema::run(&ctx, name.as_deref(), all),
        Command::Parse { key } => cmd::parse::run(&ctx, &key),
        Command::Get { address, rev } => cmd::get::run(&ctx, &address, rev).await,
        Command::Ls {
            address,
            values,
            rev,
            shape,
        } => cmd::ls::run(&ctx, &address, values, rev, &shape).await,
        Command::Put { args, flags } => cmd::put::run(&ctx, &args, &flags).await,
        Command::Rm {
            address,
            prefix,
            if_mod_revision,
        } => cmd::rm::run(&ctx, &address, prefix, if_mod_revision).await,
        Command::Watch {
            address,
            from_revision,
            exact,
            prev_kv,
            no_follow,
        } => {
            let scope = cmd::watch::Scope {
                exact,
                prev_kv,
                no_follow,
            };
            cmd::watch::run(&ctx, &address, from_revision, scope).await
        }
        Command::Txn { file } => cmd::txn::run(&ctx, file.as_deref()).await,
        Command::Elect {
            name,
            value,
            ttl,
            listen,
        } => cmd::elect::run(&ctx, &name, value.as_deref(), ttl.as_deref(), listen).await,
        Command::Ui { listen, write } => ui::run(&ctx, listen, write).await,
        Command::Migrate { action } => cmd::migrate::run(&ctx, action).await,
        Command::Balancer { action } => cmd::balancer::run(&ctx, action).await,
        Command::Reencrypt {
            prefix,
            accept_unbound,
        } => cmd::reencrypt::run(&ctx, &prefix, accept_unbound).await,
        Command::Lint { prefix, fix } => cmd::lint::run(&ctx, prefix.as_deref(), fix).await,
        Command::Export { prefix, leases } => {
            cmd::dump::export(&ctx, prefix.as_deref(), leases).await
        }
        Command::Import { file, overwrite } => cmd::dump::import(&ctx, &file, overwrite).await,
        Command::Copy {
            from,
            to,
            prefix,
            overwrite,
            leases,
        } => cmd::dump::copy(&ctx, &from, &to, prefix.as_deref(), overwrite, leases).await,
        Command::Lease { action } => cmd::lease::run(&ctx, action).await,
        Command::Compact { revision } => cmd::status::compact(&ctx, revision).await,
        Command::Status => cmd::status::status(&ctx).await,
        Command::Lock { name, ttl, command } => {
            cmd::lock::run(&ctx, &name, ttl.as_deref(), &command).await
        }
        Command::Completions { .. } | Command::Man => Ok(()),
    }
}

/// `watch --key KEY` without an address: the key to watch exactly, as other tools' `watch
/// --key` takes it. `--key` is otherwise the TLS client key (etcdctl's name), which a watch
/// with no address cannot mean, so it is taken as the watched key and not as a TLS file.
///
/// # Errors
/// Exit code 2 for a watch with neither an address nor `--key`, or a `--key` that is not
/// UTF-8.
fn watched_key(
    address: &mut Vec<String>,
    exact: &mut bool,
    connect: &mut connect::ConnectFlags,
) -> CliResult<()> {
    if !address.is_empty() {
        return Ok(());
    }
    let Some(key) = connect.key.take() else {
        return Err(CliError::invalid(
            "watch needs an ADDRESS (a directory), or --key KEY for one exact key",
        ));
    };
    let key = key
        .into_os_string()
        .into_string()
        .map_err(|_| CliError::invalid("watch --key: the key is not UTF-8 (escape it: \\xNN)"))?;
    *address = vec![key];
    *exact = true;
    Ok(())
}

fn init_tracing(verbose: u8, trace: bool) {
    let mut directives = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    }
    .to_owned();
    if trace {
        // The spans of the store's tracing layer (and the retries' events).
        directives.push_str(",keyplane_core::layer=debug");
    }
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(directives));
    let span_events = if trace {
        tracing_subscriber::fmt::format::FmtSpan::CLOSE
    } else {
        tracing_subscriber::fmt::format::FmtSpan::NONE
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(span_events)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init()
        // A second run in one process keeps the first run's subscriber.
        .ok();
}
