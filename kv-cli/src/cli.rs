//! The command line: `kvctl`'s arguments and subcommands, as clap parses them.

use crate::cmd;
use crate::output::Format;
use clap::{Parser, Subcommand};

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

/// A schema-aware command line tool for etcd, Redis, embedded and in-memory stores.
#[derive(Parser)]
#[command(name = "kvctl", version, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// Store URL, or the name of a store of the config file ([stores.NAME]): mem://, redb://FILE, sled://PATH, etcd://HOST:PORT[,HOST:PORT...], redis://HOST:PORT/DB,
    /// redis+cluster://HOST:PORT[,HOST:PORT...], redis+sentinel://HOST:PORT[,HOST:PORT...]/MASTER[/DB],
    /// rediss://..., rediss+cluster://..., rediss+sentinel://... (default: the config file's default_store, else the redb file store.redb in
    /// $XDG_DATA_HOME/kvctl or ~/.local/share/kvctl, and every write says so).
    /// Passwords in it are never printed.
    // The value may hold a password: `--help` names the variable without showing it.
    #[arg(long, env = "KVCTL_STORE", hide_env_values = true, global = true)]
    pub(crate) store: Option<String>,
    #[command(flatten)]
    pub(crate) connect: crate::connect::ConnectFlags,
    /// Output format.
    #[arg(long, short, value_enum, default_value = "table", global = true)]
    pub(crate) output: Format,
    /// A keyring file that opens encrypted values (`get` prints them decrypted): JSON,
    /// `{"current": ID, "keys": {ID: BASE64 of 32 bytes}}`. Keys are never printed.
    // The path tells where key material lies: hidden from `--help` like the store URL.
    #[arg(
        long,
        env = "KVCTL_KEYRING",
        hide_env_values = true,
        global = true,
        value_name = "FILE"
    )]
    pub(crate) keyring: Option<String>,
    /// Print keys (and the values of tables) as hex bytes, `\x6b\x65\x79`, as `etcdctl --hex`
    /// does. Without it a key is printed escaped: its plain UTF-8 as is, `\\`, `\n`, `\xNN`
    /// for other bytes. Either form is taken back as a raw key argument.
    #[arg(long, global = true)]
    pub(crate) hex: bool,
    /// More logging on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(long, short, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
    /// Trace every store operation on stderr: one line per operation with the backend, the
    /// operation, its key (escaped; values never), revision, outcome and time.
    #[arg(long, global = true)]
    pub(crate) trace: bool,
    /// Deadline of each store operation, in seconds (a watch: opening it). Reads, and writes
    /// that never reached the store, are retried within it when the store is unreachable.
    #[arg(
        long,
        env = "KVCTL_TIMEOUT",
        global = true,
        value_name = "SECONDS",
        default_value = "30",
        value_parser = parse_seconds
    )]
    pub(crate) timeout: std::time::Duration,
    /// A schema manifest to load beside the built-in schemas: a file as `kvctl schema NAME -o
    /// json` prints it (format keyplane-schema/1). Repeatable; also KVCTL_SCHEMA (files
    /// separated by `:`) and `schemas` in the config file ($KVCTL_CONFIG, else
    /// ~/.config/kvctl/config.toml).
    #[arg(long = "schema", global = true, value_name = "FILE")]
    pub(crate) schema: Vec<String>,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
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
        /// Read the value as it was at this revision (a snapshot read).
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        rev: Option<i64>,
    },
    /// List the keys of a directory (a typed address's directory, or a raw prefix).
    Ls {
        /// A raw prefix, or `schema.template field=value...`; nothing lists every key.
        address: Vec<String>,
        /// Print the values too.
        #[arg(long, short = 'l')]
        values: bool,
        /// List the directory as it was at this revision (a snapshot read).
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        rev: Option<i64>,
        #[command(flatten)]
        shape: cmd::ls::Shape,
    },
    /// Write one key, after checking the key and the value against the schema; guarded with
    /// --create or --if-mod-revision, leased with --lease-ttl.
    Put {
        /// The address, then the value (`-` reads it from stdin).
        #[arg(required = true, num_args = 2..)]
        args: Vec<String>,
        #[command(flatten)]
        flags: cmd::put::PutFlags,
    },
    /// Delete one key (only at a mod revision with --if-mod-revision), or a directory with
    /// --prefix.
    #[command(visible_alias = "del")]
    Rm {
        /// A raw key, or `schema.template field=value...`.
        #[arg(required = true, num_args = 1..)]
        address: Vec<String>,
        /// Delete every key of the directory.
        #[arg(long)]
        prefix: bool,
        /// Only delete the key at this mod revision; exit code 4, nothing deleted, otherwise.
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        if_mod_revision: Option<i64>,
    },
    /// Print typed events under a directory until interrupted (Ctrl-C): plain keys, and every
    /// set, map and list change (SADD, SREM, HSET, HDEL, RPUSH, LPUSH, LREM, LMOVE, DEL).
    Watch {
        /// A raw prefix, or `schema.template field=value...`. Without it, `--key KEY` names
        /// one exact key to watch, as `watch --key` does in other tools.
        #[arg(num_args = 0..)]
        address: Vec<String>,
        /// Replay the history from this revision (inclusive), then follow.
        #[arg(
            long = "rev",
            visible_alias = "from-revision",
            allow_negative_numbers = true
        )]
        from_revision: Option<i64>,
        /// Watch exactly one key (the address's key), not the directory under it. `watch
        /// --key KEY` (no address) does the same; with an address, `--key` is the TLS client
        /// key, as everywhere.
        #[arg(long)]
        exact: bool,
        /// Show each event's previous value too (the value a PUT replaced, the value a
        /// DELETE removed), as `etcdctl watch --prev-kv`.
        #[arg(long)]
        prev_kv: bool,
        /// On Redis, report only the writes made through keyplane (kvctl, the library):
        /// without it the watch also follows other programs' writes under the directory
        /// (`redis-cli SET`), for which it may turn keyspace notifications on (`CONFIG SET
        /// notify-keyspace-events`) and writes the store's index. For users who may not, or
        /// should not, change the server's config or write beside the watched keys.
        #[arg(long)]
        no_follow: bool,
    },
    /// Run one transaction, as `etcdctl txn`: compares, then the success or the failure
    /// requests, read from stdin (prompted when it is a terminal) or from --file.
    #[command(after_help = cmd::txn::FORMAT)]
    Txn {
        /// Read the transaction from this file (`-`: stdin).
        #[arg(long, short = 'f', value_name = "FILE")]
        file: Option<String>,
    },
    /// Campaign in an election, as `etcdctl elect`: once elected, print the election key
    /// and the proposal, and lead until Ctrl-C (then resign). Waits while another candidate
    /// leads. With --listen, print each leader as it changes instead.
    Elect {
        /// The election's name (a key prefix).
        name: String,
        /// The proposal to campaign with (required unless --listen).
        #[arg(required_unless_present = "listen", conflicts_with = "listen")]
        value: Option<String>,
        /// The TTL of the lease the candidacy is bound to, renewed while held (default 30s).
        #[arg(long, value_name = "TTL", conflicts_with = "listen")]
        ttl: Option<String>,
        /// Print the leader, and each new leader or proposal, until Ctrl-C.
        #[arg(long, short = 'l')]
        listen: bool,
    },
    /// Serve a schema-aware browser of the store on loopback: prints the URL to open, with
    /// its access token; read-only unless --write.
    Ui {
        /// The address to listen on (port 0: any free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// Allow edits, creation from a template's form, and deletes.
        #[arg(long)]
        write: bool,
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
    /// Seal every encrypted value under PREFIX again with the keyring's current key (after
    /// adding a new key as `current`), bound to its key. Only sealed values are written; a
    /// value changed meanwhile is read again; a second run writes nothing.
    Reencrypt {
        /// The raw prefix, such as `nxc:pool:`.
        prefix: String,
        /// Also open values of the first envelope format (not bound to their key) and seal
        /// them in the current one.
        #[arg(long)]
        accept_unbound: bool,
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
    /// Write every key under a prefix to stdout, one JSON object per line: key, typed
    /// address, kind, value (text or base64) or collection members.
    Export {
        /// Only keys under this raw prefix.
        prefix: Option<String>,
        /// Record each leased key's remaining TTL (`lease_ttl`), for import to re-lease it.
        #[arg(long)]
        leases: bool,
    },
    /// Write the keys of an export back, in batched transactions; refused, writing nothing,
    /// when a key exists (unless --overwrite).
    Import {
        /// The dump (`-` reads stdin).
        file: String,
        /// Replace keys that exist (a collection is replaced whole).
        #[arg(long)]
        overwrite: bool,
    },
    /// Copy every key under a prefix from one store to another (any two backends).
    Copy {
        /// The source store's URL.
        #[arg(long, value_name = "URL")]
        from: String,
        /// The target store's URL.
        #[arg(long, value_name = "URL")]
        to: String,
        /// Only keys under this raw prefix.
        prefix: Option<String>,
        /// Replace keys that exist in the target.
        #[arg(long)]
        overwrite: bool,
        /// Copy leased keys with a new lease of their remaining TTL.
        #[arg(long)]
        leases: bool,
    },
    /// Leases: grant, keep-alive, revoke, ttl, list (IDs in hex, as etcdctl prints them).
    Lease {
        #[command(subcommand)]
        action: cmd::lease::Action,
    },
    /// Discard the store's history before revision REV: watches and reads at earlier
    /// revisions then fail (etcd: old revisions of keys; Redis, redb, sled: the event log).
    Compact {
        /// The first revision to keep.
        #[arg(allow_negative_numbers = true)]
        revision: i64,
    },
    /// The store: backend, hosts, current revision, retained history, and the round-trip
    /// time of one read.
    Status,
    /// Hold a distributed lock: while `-- CMD ARGS...` runs (exiting with its exit code,
    /// releasing after), or, without a command, printing the lock key until Ctrl-C.
    /// Waits while another holder has it.
    Lock {
        /// The lock's name (a key prefix).
        name: String,
        /// The TTL of the lease the lock is bound to, renewed while held (default 30s).
        #[arg(long, value_name = "TTL")]
        ttl: Option<String>,
        /// The command to run while the lock is held, after `--`.
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Print a shell completion script: `kvctl completions bash > /etc/bash_completion.d/kvctl`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `kvctl man | man -l -`.
    Man,
}

/// A positive, finite number of seconds.
fn parse_seconds(arg: &str) -> Result<std::time::Duration, String> {
    match arg.parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs.is_finite() && secs < 1e9 => {
            Ok(std::time::Duration::from_secs_f64(secs))
        }
        _ => Err(format!("{arg:?} is not a positive number of seconds")),
    }
}
