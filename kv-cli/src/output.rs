//! Output: the `--output` format, values as pretty JSON or text, entries as JSON objects,
//! and progress bars that appear only when stderr is a terminal.

use indicatif::{ProgressBar, ProgressStyle};
use keyplane::Entry;
use serde_json::{Value, json};
use std::io::IsTerminal;

/// The `--output` format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Human-readable text.
    Table,
    /// JSON, one document (or one line per event for `watch`).
    Json,
}

/// A value for display: pretty JSON when it parses as JSON, the text when it is UTF-8,
/// otherwise hex; every byte `\xNN` with `--hex`.
pub(crate) fn value_text(bytes: &[u8]) -> String {
    if crate::keys::hex() {
        return crate::keys::hex_text(bytes);
    }
    if let Ok(json) = serde_json::from_slice::<Value>(bytes) {
        return serde_json::to_string_pretty(&json).unwrap_or_default();
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => format!("0x{}", hex(bytes)),
    }
}

/// A value inside a JSON document: the JSON itself, else a string (hex for binary).
pub(crate) fn value_json(bytes: &[u8]) -> Value {
    if let Ok(json) = serde_json::from_slice::<Value>(bytes) {
        return json;
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Value::String(text.to_owned()),
        Err(_) => json!({ "hex": hex(bytes) }),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The typed reading of a raw key: `schema.name` and its fields, if some schema parses it.
pub(crate) fn typed(key: &str) -> Option<(String, Vec<(&'static str, String)>)> {
    let parsed = crate::catalog::parse_any(key).ok()?;
    let entry = crate::catalog::entry_of(&parsed)?;
    Some((entry.address(), parsed.fields))
}

/// Adds `type` and `fields` to a key's JSON object when the catalog parses the key.
pub(crate) fn add_typed_address(object: &mut Value, key: &str) {
    if let Some((address, fields)) = typed(key) {
        object["type"] = Value::String(address);
        object["fields"] = fields
            .into_iter()
            .map(|(name, value)| (name.to_owned(), Value::String(value)))
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
}

/// An entry as a JSON object: key, type, fields, revisions, lease and value.
pub(crate) fn entry_json(entry: &Entry, with_value: bool) -> Value {
    let key = crate::keys::text(&entry.key);
    let mut object = json!({
        "key": key,
        "create_revision": entry.create_revision,
        "mod_revision": entry.mod_revision,
        "version": entry.version,
        "lease": entry.lease.map(|l| l.0),
    });
    add_typed_address(&mut object, &key);
    if with_value {
        object["value"] = value_json(&entry.value);
    }
    object
}

/// Prints a JSON document.
pub(crate) fn print_json(value: &Value) {
    crate::output::outln!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

/// A spinner counting items, shown only when stderr is a terminal.
pub(crate) fn progress(what: &'static str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {pos} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(what);
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

/// A bar of `len` steps, shown only when stderr is a terminal.
pub(crate) fn steps(len: u64, what: &'static str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{bar:20} {pos}/{len} {prefix}: {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(what);
    bar
}

/// Writes to stdout; a closed stdout (`kvctl ls | head`) ends the process quietly, as
/// command line tools do, instead of panicking.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("kvctl: cannot write to stdout: {e}");
        std::process::exit(i32::from(crate::error::code::OTHER));
    }
}

/// `println!` through [`write_stdout`].
macro_rules! outln {
    () => { $crate::output::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` through [`write_stdout`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_stdout(format_args!($($arg)*)) };
}

pub(crate) use {out, outln};
