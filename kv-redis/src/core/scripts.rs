//! The Lua scripts, run two ways: as the functions of one library (`FUNCTION LOAD` once per
//! server, then `FCALL`), or each on its own (`EVALSHA`, loaded once per server by SHA and
//! reloaded on NOSCRIPT) when the server has no functions (before Redis 7), the user may not
//! run them, or [`RedisConfig::functions`](crate::RedisConfig::functions) is off.
//!
//! A script run by `EVALSHA` is compiled once but runs its whole text on every call: the
//! shared library (`lib.lua`, some forty local functions and tables) is built again each
//! time, about 9 µs of the server's time per call. A function library builds it once, when
//! it is loaded.

use redis::Script;
use std::sync::OnceLock;

/// Prepends the index (`index.lua`) and the shared library (layout, event encoding, plain puts
/// and deletes, commit, lease expiry) to a writing script, which starts by setting the call's
/// state from its arguments.
macro_rules! with_lib {
    ($file:literal) => {
        concat!(
            include_str!("scripts/index.lua"),
            "\n",
            include_str!("scripts/lib.lua"),
            "\nbegin(ARGV)\n",
            include_str!($file)
        )
    };
}

/// As `with_lib!`, with the runs of puts and rotations (`run.lua`) after the library.
macro_rules! with_runs {
    ($file:literal) => {
        concat!(
            include_str!("scripts/index.lua"),
            "\n",
            include_str!("scripts/lib.lua"),
            "\n",
            include_str!("scripts/run.lua"),
            "\nbegin(ARGV)\n",
            include_str!($file)
        )
    };
}

/// The text of every script of the function library, by function name: whether it writes,
/// whether it runs after the shared library, and its text. (The reconciler's two leader
/// scripts, which touch no store data, live with it in `crate::reconcile`.)
const SCRIPTS: &[(&str, bool, &str)] = &[
    ("txn", true, include_str!("scripts/txn.lua")),
    ("put", true, include_str!("scripts/put.lua")),
    ("delete", true, include_str!("scripts/delete.lua")),
    ("rotate", true, include_str!("scripts/rotate.lua")),
    ("range", false, include_str!("scripts/range.lua")),
    ("watch_from", false, include_str!("scripts/watch_from.lua")),
    ("compact", true, include_str!("scripts/compact.lua")),
    ("lease_grant", true, include_str!("scripts/lease_grant.lua")),
    (
        "lease_keep_alive",
        true,
        include_str!("scripts/lease_keep_alive.lua"),
    ),
    (
        "lease_revoke",
        true,
        include_str!("scripts/lease_revoke.lua"),
    ),
    (
        "lease_time_to_live",
        true,
        include_str!("scripts/lease_time_to_live.lua"),
    ),
    ("lease_list", true, include_str!("scripts/lease_list.lua")),
    ("lease_sweep", true, include_str!("scripts/lease_sweep.lua")),
    ("reconcile", true, include_str!("scripts/reconcile.lua")),
    (
        "index_upgrade",
        true,
        include_str!("scripts/index_upgrade.lua"),
    ),
];

/// The first line of a script that only reads, which a function gives as its flags instead.
const NO_WRITES: &str = "#!lua flags=no-writes\n";

/// The function library: its name, `keyplane_` and the first 12 hex digits of the SHA-1 of
/// its text with the name left out, so that stores of different versions of this crate
/// share a server, each with its own library; and the text `FUNCTION LOAD` takes.
pub(crate) struct Library {
    pub(crate) name: String,
    pub(crate) code: String,
}

/// The library, built once per process.
pub(crate) fn library() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        let mut body = String::from(include_str!("scripts/index.lua"));
        body.push('\n');
        body.push_str(include_str!("scripts/lib.lua"));
        body.push('\n');
        body.push_str(include_str!("scripts/run.lua"));
        body.push('\n');
        // A function that answers 1: a store asks for it when it connects, to learn whether
        // the library is there and whether its user may call it.
        body.push_str(
            "redis.register_function{function_name='@V@_hello', \
             callback=function() return 1 end, flags={'no-writes'}}\n",
        );
        for (name, writes, text) in SCRIPTS {
            let (flags, text) = match text.strip_prefix(NO_WRITES) {
                Some(text) => (", flags={'no-writes'}", text),
                None => ("", *text),
            };
            let start = if *writes { "begin(ARGV)\n" } else { "" };
            body.push_str(&format!(
                "local function f_{name}(KEYS, ARGV)\n{start}{text}\nend\n\
                 redis.register_function{{function_name='@V@_{name}', \
                 callback=f_{name}{flags}}}\n"
            ));
        }
        // The group commit's function, which calls the writing functions above.
        body.push_str(include_str!("scripts/batch.lua"));
        let version = sha1_smol::Sha1::from(body.as_bytes()).digest().to_string();
        let name = format!("keyplane_{}", &version[..12]);
        let code = format!(
            "#!lua name={name}\n{}",
            body.replace("@V@", &format!("kp_{}", &version[..12]))
        );
        Library { name, code }
    })
}

/// The text for `EVALSHA` of a read-only script that reads the index: its first line (which
/// flags it), the index's helpers (`index.lua`), then the rest.
fn read_only(text: &str) -> String {
    let body = text.strip_prefix(NO_WRITES).unwrap_or(text);
    format!("{NO_WRITES}{}\n{body}", include_str!("scripts/index.lua"))
}

/// One script: its text for `EVALSHA`, and its name in the function library.
pub(crate) struct Lua {
    pub(crate) script: Script,
    pub(crate) function: String,
}

impl Lua {
    fn new(name: &str, text: &str) -> Self {
        let library = library();
        Lua {
            script: Script::new(text),
            function: format!("kp_{}_{name}", &library.name["keyplane_".len()..]),
        }
    }
}

/// Every script the store runs.
pub(crate) struct Scripts {
    pub(crate) txn: Lua,
    pub(crate) put: Lua,
    pub(crate) delete: Lua,
    /// A transaction of one list rotation (the balancer's pick).
    pub(crate) rotate: Lua,
    pub(crate) range: Lua,
    pub(crate) watch_from: Lua,
    pub(crate) compact: Lua,
    pub(crate) lease_grant: Lua,
    pub(crate) lease_keep_alive: Lua,
    pub(crate) lease_revoke: Lua,
    pub(crate) lease_time_to_live: Lua,
    pub(crate) lease_list: Lua,
    pub(crate) lease_sweep: Lua,
    pub(crate) reconcile: Lua,
    /// One step of moving an index of the layout before buckets into buckets.
    pub(crate) index_upgrade: Lua,
    /// The function that answers 1 (there is no script of it).
    pub(crate) hello: String,
    /// The group commit's function (there is no script of it: batches need functions).
    pub(crate) batch: String,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        let hello = Lua::new("hello", "return 1").function;
        let batch = Lua::new("batch", "return {}").function;
        Scripts {
            txn: Lua::new("txn", with_lib!("scripts/txn.lua")),
            put: Lua::new("put", with_runs!("scripts/put.lua")),
            delete: Lua::new("delete", with_lib!("scripts/delete.lua")),
            rotate: Lua::new("rotate", with_runs!("scripts/rotate.lua")),
            range: Lua::new("range", &read_only(include_str!("scripts/range.lua"))),
            watch_from: Lua::new("watch_from", include_str!("scripts/watch_from.lua")),
            compact: Lua::new("compact", with_lib!("scripts/compact.lua")),
            lease_grant: Lua::new("lease_grant", with_lib!("scripts/lease_grant.lua")),
            lease_keep_alive: Lua::new(
                "lease_keep_alive",
                with_lib!("scripts/lease_keep_alive.lua"),
            ),
            lease_revoke: Lua::new("lease_revoke", with_lib!("scripts/lease_revoke.lua")),
            lease_time_to_live: Lua::new(
                "lease_time_to_live",
                with_lib!("scripts/lease_time_to_live.lua"),
            ),
            lease_list: Lua::new("lease_list", with_lib!("scripts/lease_list.lua")),
            lease_sweep: Lua::new("lease_sweep", with_lib!("scripts/lease_sweep.lua")),
            reconcile: Lua::new("reconcile", with_lib!("scripts/reconcile.lua")),
            index_upgrade: Lua::new("index_upgrade", with_lib!("scripts/index_upgrade.lua")),
            hello,
            batch,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{SCRIPTS, library};

    #[test]
    fn the_library_names_itself_by_its_text_and_registers_every_script() {
        let library = library();
        assert_eq!(library.name.len(), "keyplane_".len() + 12);
        let version = &library.name["keyplane_".len()..];
        assert!(
            library
                .code
                .starts_with(&format!("#!lua name={}\n", library.name))
        );
        assert!(!library.code.contains("@V@"));
        for (name, _, _) in SCRIPTS {
            assert!(
                library
                    .code
                    .contains(&format!("function_name='kp_{version}_{name}'")),
                "{name}"
            );
        }
        // Shebang lines of read-only scripts become flags.
        assert!(!library.code[1..].contains("#!lua"));
        assert_eq!(library.code.matches("flags={'no-writes'}").count(), 3);
    }
}
