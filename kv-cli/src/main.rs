//! `kvctl`: a schema-aware command line tool for etcd, Redis, sled and in-memory stores.
//!
//! Every key is read through the schema catalog (`keyplane-schemas`): `parse` says which
//! template a raw key belongs to, `get`/`ls`/`put`/`rm`/`watch` take raw keys or typed addresses
//! (`tenant.meta id=1`), and `put` refuses a key or value its schema refuses.

mod address;
mod catalog;
mod cmd;
mod demo;
mod error;
mod output;
mod store;
mod tree;
mod values;

use clap::{Parser, Subcommand};
use cmd::Ctx;
use error::CliResult;
use output::Format;
use std::process::ExitCode;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  not found (get or rm of an absent key)
  2  usage error or invalid input: store URL, key, segment, value
  3  store unreachable (connection refused, timeout, credentials refused)
  4  conflict (key exists, condition failed, lock held)
  5  any other error
  6  a check found something (lint, migrate verify)

Addresses: a raw key (jxt/tenants/1/meta) or a typed address, `schema.template` and
field=value pairs (tenant.meta id=1). `kvctl schema NAME` lists a schema's templates.";

/// A schema-aware command line tool for etcd, Redis, sled and in-memory stores.
#[derive(Parser)]
#[command(name = "kvctl", version, after_help = EXIT_CODES)]
struct Cli {
    /// Store URL: mem://, sled://PATH, etcd://HOST:PORT[,HOST:PORT...], redis://HOST:PORT/DB,
    /// rediss://... (default: sled in $XDG_DATA_HOME/kvctl or ~/.local/share/kvctl).
    #[arg(long, env = "KVCTL_STORE", global = true)]
    store: Option<String>,
    /// Output format.
    #[arg(long, short, value_enum, default_value = "table", global = true)]
    output: Format,
    /// More logging on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(long, short, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write the example dataset of every schema (idempotent), then print the key tree.
    Demo,
    /// List the schemas, or show one as a tree of templates.
    Schema {
        /// The schema's name (an old layout's too: `tenant-legacy`, `nxc-legacy`).
        name: Option<String>,
        /// List the old layouts the schemas replace as well (read-only; each migrates with
        /// `kvctl migrate`).
        #[arg(long)]
        all: bool,
    },
    /// Say which schema and template a raw key belongs to, with its fields.
    Parse {
        /// The raw key.
        key: String,
    },
    /// Print one key's value.
    Get {
        /// A raw key, or `schema.template field=value...`.
        #[arg(required = true, num_args = 1..)]
        address: Vec<String>,
    },
    /// List the keys of a directory (a typed address's directory, or a raw prefix).
    Ls {
        /// A raw prefix, or `schema.template field=value...`; nothing lists every key.
        address: Vec<String>,
        /// Print the values too.
        #[arg(long, short = 'l')]
        values: bool,
    },
    /// Write one key, after checking the key and the value against the schema.
    Put {
        /// The address, then the value (`-` reads it from stdin).
        #[arg(required = true, num_args = 2..)]
        args: Vec<String>,
        /// Write a key that belongs to no schema, unchecked.
        #[arg(long)]
        raw: bool,
    },
    /// Delete one key, or a directory with --prefix.
    Rm {
        /// A raw key, or `schema.template field=value...`.
        #[arg(required = true, num_args = 1..)]
        address: Vec<String>,
        /// Delete every key of the directory.
        #[arg(long)]
        prefix: bool,
    },
    /// Print typed events under a directory until interrupted (Ctrl-C): plain keys, and every
    /// set, map and list change (SADD, SREM, HSET, HDEL, RPUSH, LPUSH, LREM, LMOVE, DEL).
    Watch {
        /// A raw prefix, or `schema.template field=value...`.
        #[arg(required = true, num_args = 1..)]
        address: Vec<String>,
        /// Replay from this revision (inclusive), then follow.
        #[arg(long = "rev", visible_alias = "from-revision")]
        from_revision: Option<i64>,
    },
    /// Scan the store against the schemas: unknown keys, values that do not decode,
    /// collections of the wrong kind, key/value disagreements, dangling references.
    Lint {
        /// Only keys under this raw prefix.
        prefix: Option<String>,
        /// Repair what is safe to repair (dangling index entries, missing reverse-index
        /// members) and say what was done.
        #[arg(long)]
        fix: bool,
    },
    /// The balancer's cache: `load FILE` rebuilds it from the database tables as JSON.
    Balancer {
        #[command(subcommand)]
        action: cmd::balancer::Action,
    },
    /// Migrate data from a document's old layout: list, plan, apply, verify, finalize,
    /// rollback.
    Migrate {
        #[command(subcommand)]
        action: cmd::migrate::Action,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
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

async fn run(cli: Cli) -> CliResult<()> {
    let url = match cli.store {
        Some(url) => url,
        None => store::default_url()?,
    };
    let ctx = Ctx {
        url,
        format: cli.output,
    };
    match cli.command {
        Command::Demo => demo::run(&ctx).await,
        Command::Schema { name, all } => cmd::schema::run(&ctx, name.as_deref(), all),
        Command::Parse { key } => cmd::parse::run(&ctx, &key),
        Command::Get { address } => cmd::get::run(&ctx, &address).await,
        Command::Ls { address, values } => cmd::ls::run(&ctx, &address, values).await,
        Command::Put { args, raw } => cmd::put::run(&ctx, &args, raw).await,
        Command::Rm { address, prefix } => cmd::rm::run(&ctx, &address, prefix).await,
        Command::Watch {
            address,
            from_revision,
        } => cmd::watch::run(&ctx, &address, from_revision).await,
        Command::Migrate { action } => cmd::migrate::run(&ctx, action).await,
        Command::Balancer { action } => cmd::balancer::run(&ctx, action).await,
        Command::Lint { prefix, fix } => cmd::lint::run(&ctx, prefix.as_deref(), fix).await,
    }
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
