//! `kvctl`: a schema-aware command line tool for etcd, Redis, sled and in-memory stores.
//!
//! Every key is read through the schema catalog (`keyplane-schemas`): `parse` says which
//! template a raw key belongs to, `get`/`ls`/`put`/`rm`/`watch` take raw keys or typed addresses
//! (`tenant.meta id=1`), and `put` refuses a key or value its schema refuses.

mod address;
mod catalog;
mod cli;
mod cmd;
mod demo;
mod error;
mod output;
mod secrets;
mod store;
mod tree;
mod ui;
mod values;

use clap::Parser;
use cli::{Cli, Command};
use cmd::Ctx;
use error::CliResult;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose, cli.trace);
    store::set_deadline(cli.timeout);
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
    match &cli.command {
        Command::Completions { shell } => return cmd::help::completions(*shell),
        Command::Man => return cmd::help::man(),
        _ => {}
    }
    let url = match cli.store {
        Some(url) => url,
        None => store::default_url()?,
    };
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
        } => cmd::ls::run(&ctx, &address, values, rev).await,
        Command::Put { args, flags } => cmd::put::run(&ctx, &args, &flags).await,
        Command::Rm {
            address,
            prefix,
            if_mod_revision,
        } => cmd::rm::run(&ctx, &address, prefix, if_mod_revision).await,
        Command::Watch {
            address,
            from_revision,
        } => cmd::watch::run(&ctx, &address, from_revision).await,
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
        Command::Completions { .. } | Command::Man => Ok(()),
    }
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
        .init();
}
