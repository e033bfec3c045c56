//! The text of `kvctl txn`, in `etcdctl txn`'s syntax: compares, a blank line, the success
//! requests, a blank line, the failure requests. A compare is `TARGET("KEY") OP "VALUE"`
//! with TARGET `value`/`val`, `version`/`ver`, `create`/`c`, `mod`/`m` or `lease` (a hex
//! lease ID, `0` for none) and OP `=`, `!=`, `>` or `<`; a request is `put [--lease=ID] KEY
//! VALUE`, `del [--prefix] KEY` or `get [--prefix] KEY`. Quoted strings take the escapes of
//! [`crate::keys`] (`\"`, `\\`, `\n`, `\xNN`); an unquoted key is unescaped the same way, an
//! unquoted value is taken as it is.

use crate::error::{CliError, CliResult};
use keyplane::{Compare, CompareOp, CompareTarget, TxnOp};

/// One request of a branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    /// A request the store's transaction runs.
    Op(TxnOp),
    /// `get --prefix`: read after the transaction, at its revision (the store's transaction
    /// reads one key at a time).
    GetPrefix(Vec<u8>),
}

/// A request and the line it was read from (for messages).
pub(crate) type Line<T> = (usize, T);

/// A parsed transaction.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub(crate) compares: Vec<Line<Compare>>,
    pub(crate) success: Vec<Line<Request>>,
    pub(crate) failure: Vec<Line<Request>>,
}

/// The prompts `etcdctl txn -i` prints before each section.
const PROMPTS: [&str; 3] = [
    "compares:",
    "success requests (get, put, del):",
    "failure requests (get, put, del):",
];

/// Reads the transaction from `lines`, printing each section's prompt on stderr when
/// `prompt` (a terminal on stdin); stops after the third section's blank line.
///
/// # Errors
/// Exit code 2 naming the line for a malformed one, for text after the failure requests,
/// or for an empty transaction; a read error.
pub(crate) fn parse(
    lines: impl Iterator<Item = std::io::Result<String>>,
    prompt: bool,
) -> CliResult<Parsed> {
    let mut parsed = Parsed::default();
    let mut section = 0;
    let mut any = false;
    if prompt {
        eprintln!("{}", PROMPTS[0]);
    }
    for (index, line) in lines.enumerate() {
        let number = index + 1;
        let line = line.map_err(|e| CliError::invalid(format!("cannot read the input: {e}")))?;
        let line = line.trim();
        if line.is_empty() {
            section += 1;
            if section == 3 && prompt {
                break;
            }
            if prompt && section < 3 {
                eprintln!("{}", PROMPTS[section]);
            }
            continue;
        }
        any = true;
        let at = |e: String| CliError::invalid(format!("line {number}: {e}"));
        match section {
            0 => parsed.compares.push((number, compare(line).map_err(at)?)),
            1 => parsed.success.push((number, request(line).map_err(at)?)),
            2 => parsed.failure.push((number, request(line).map_err(at)?)),
            _ => {
                return Err(at(format!(
                    "unexpected {line:?} after the failure requests (three sections: \
                     compares, success, failure, each ended by a blank line)"
                )));
            }
        }
    }
    if !any {
        return Err(CliError::invalid(
            "empty transaction: give compares, a blank line, the success requests, a blank \
             line and the failure requests (see `kvctl txn --help`)",
        ));
    }
    Ok(parsed)
}

/// A compare: `TARGET("KEY") OP "VALUE"`.
fn compare(line: &str) -> Result<Compare, String> {
    let malformed = || {
        format!(
            "malformed comparison {line:?}: expected TARGET(\"KEY\") OP \"VALUE\", such as \
             value(\"k\") = \"v\" or mod(\"k\") > \"0\""
        )
    };
    let (target, rest) = line.split_once('(').ok_or_else(malformed)?;
    let (key, rest) = quoted(rest.trim_start()).map_err(|e| format!("{e} in {line:?}"))?;
    let rest = rest.trim_start().strip_prefix(')').ok_or_else(malformed)?;
    let rest = rest.trim_start();
    let (op, rest) = [("!=", CompareOp::NotEqual), ("=", CompareOp::Equal)]
        .into_iter()
        .chain([(">", CompareOp::Greater), ("<", CompareOp::Less)])
        .find_map(|(text, op)| rest.strip_prefix(text).map(|r| (op, r)))
        .ok_or_else(|| format!("{line:?}: the operator is one of =, !=, >, <"))?;
    let (value, rest) = quoted(rest.trim_start()).map_err(|e| format!("{e} in {line:?}"))?;
    if !rest.trim().is_empty() {
        return Err(format!(
            "{line:?}: unexpected {:?} after the value",
            rest.trim()
        ));
    }
    if key.is_empty() {
        return Err(format!("{line:?}: empty key"));
    }
    let number = |what: &str| -> Result<i64, String> {
        std::str::from_utf8(&value)
            .ok()
            .and_then(|v| v.parse::<i64>().ok())
            .ok_or_else(|| format!("{line:?}: a {what} is a whole number"))
    };
    let target = match target.trim() {
        "value" | "val" => CompareTarget::Value(value.clone()),
        "version" | "ver" => CompareTarget::Version(number("version")?),
        "create" | "c" => CompareTarget::CreateRevision(number("create revision")?),
        "mod" | "m" => CompareTarget::ModRevision(number("mod revision")?),
        "lease" => {
            let id = std::str::from_utf8(&value).unwrap_or_default();
            let id = super::lease::read_id(id).map_err(|e| format!("{line:?}: {}", e.message))?;
            CompareTarget::Lease(id.0)
        }
        other => {
            return Err(format!(
                "{line:?}: unknown compare target {other:?} (value, version, create, mod, lease)"
            ));
        }
    };
    Ok(Compare::new(key, op, target))
}

/// A request: `put [--lease=ID] KEY VALUE`, `del [--prefix] KEY`, `get [--prefix] KEY`.
fn request(line: &str) -> Result<Request, String> {
    let words = words(line)?;
    let Some((verb, args)) = words.split_first() else {
        return Err("empty request".to_owned());
    };
    let mut prefix = false;
    let mut lease = None;
    let mut plain = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match (arg.quoted, arg.text.as_str()) {
            (false, "--prefix") if verb.text != "put" => prefix = true,
            (false, "--lease") if verb.text == "put" => {
                lease = Some(args.next().map(|a| a.text.clone()).unwrap_or_default())
            }
            (false, flag) if verb.text == "put" && flag.starts_with("--lease=") => {
                lease = Some(flag["--lease=".len()..].to_owned())
            }
            (false, flag) if flag.starts_with("--") => {
                return Err(format!("{line:?}: unknown flag {flag} for {}", verb.text));
            }
            _ => plain.push(arg),
        }
    }
    let key = |arg: &Word| -> Result<Vec<u8>, String> {
        let key = if arg.quoted {
            arg.bytes.clone()
        } else {
            crate::keys::unescape(&arg.text)?
        };
        if key.is_empty() {
            return Err(format!("{line:?}: empty key"));
        }
        Ok(key)
    };
    match (verb.text.as_str(), plain.as_slice()) {
        ("put", [k, v]) => {
            let (k, value) = (key(k)?, v.bytes.clone());
            Ok(Request::Op(match lease {
                Some(id) => {
                    let id = super::lease::read_id(&id)
                        .map_err(|e| format!("{line:?}: {}", e.message))?;
                    TxnOp::put_with_lease(k, value, id)
                }
                None => TxnOp::put(k, value),
            }))
        }
        ("get", [k]) if prefix => Ok(Request::GetPrefix(key(k)?)),
        ("get", [k]) => Ok(Request::Op(TxnOp::get(key(k)?))),
        ("del" | "delete", [k]) if prefix => Ok(Request::Op(TxnOp::delete_prefix(key(k)?))),
        ("del" | "delete", [k]) => Ok(Request::Op(TxnOp::delete(key(k)?))),
        ("put", _) => Err(format!("{line:?}: put takes a key and a value")),
        ("get" | "del" | "delete", _) => Err(format!("{line:?}: {} takes one key", verb.text)),
        (other, _) => Err(format!(
            "{line:?}: unknown request {other:?} (get, put, del)"
        )),
    }
}

/// A word of a request line: its text as written (unquoted) or its bytes (quoted).
struct Word {
    quoted: bool,
    text: String,
    bytes: Vec<u8>,
}

/// Splits a request line into words: quoted strings (escapes undone) and runs of
/// non-space characters.
fn words(line: &str) -> Result<Vec<Word>, String> {
    let mut out = Vec::new();
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        if rest.starts_with('"') {
            let (bytes, after) = quoted(rest).map_err(|e| format!("{e} in {line:?}"))?;
            out.push(Word {
                quoted: true,
                text: String::new(),
                bytes,
            });
            rest = after;
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let text = rest[..end].to_owned();
            out.push(Word {
                quoted: false,
                bytes: text.clone().into_bytes(),
                text,
            });
            rest = &rest[end..];
        }
        rest = rest.trim_start();
    }
    Ok(out)
}

/// A double-quoted string at the start of `text`: its bytes and the text after it.
fn quoted(text: &str) -> Result<(Vec<u8>, &str), String> {
    let body = text
        .strip_prefix('"')
        .ok_or_else(|| "expected a double-quoted string".to_owned())?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => {
                let bytes = crate::keys::unescape(&body[..i])?;
                return Ok((bytes, &body[i + 1..]));
            }
            _ => {}
        }
    }
    Err("an unclosed quote".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> impl Iterator<Item = std::io::Result<String>> + '_ {
        text.lines().map(|l| Ok(l.to_owned()))
    }

    #[test]
    fn reads_etcdctl_syntax() {
        let text = "mod(\"key1\") > \"0\"\nvalue(\"k\\x00\") != \"a \\\"b\\\"\"\n\n\
                    put key1 \"overwrote key1\"\nput --lease=1f k v\ndel --prefix a/\n\n\
                    get --prefix a/\nget \"b\\xff\"\n";
        let parsed = parse(lines(text), false).unwrap();
        assert_eq!(
            parsed.compares[1].1,
            Compare::new(
                b"k\0",
                CompareOp::NotEqual,
                CompareTarget::Value(b"a \"b\"".to_vec())
            )
        );
        assert_eq!(
            parsed.success[0].1,
            Request::Op(TxnOp::put("key1", "overwrote key1"))
        );
        assert_eq!(
            parsed.success[1].1,
            Request::Op(TxnOp::put_with_lease("k", "v", keyplane::LeaseId(0x1f)))
        );
        assert_eq!(parsed.failure[0], (8, Request::GetPrefix(b"a/".to_vec())));
        assert_eq!(parsed.failure[1].1, Request::Op(TxnOp::get(b"b\xff")));
    }

    #[test]
    fn malformed_lines_are_named() {
        for (text, line) in [
            ("mod(\"k\") >> \"0\"\n\n\n", 1),
            ("\nput k\n\n", 2),
            ("\n\n\nput k v\n", 4),
            ("\nfrob k\n", 2),
            ("version(\"k\") = \"x\"\n", 1),
            ("\nput \"k v\n", 2),
        ] {
            let err = parse(lines(text), false).unwrap_err();
            assert!(err.message.starts_with(&format!("line {line}:")), "{err}");
        }
        assert!(parse(lines(""), false).is_err());
        assert!(parse(lines("\n\n\n"), false).is_err());
    }
}
