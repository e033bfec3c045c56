//! `kvctl completions SHELL` and `kvctl man`: a shell completion script that knows the
//! schemas' typed addresses and field names, and the manual page.

use crate::error::{CliError, CliResult, code};
use clap::CommandFactory;
use clap::builder::{PossibleValue, PossibleValuesParser};

/// Completion words for an address: every `schema.template` and every `field=`.
fn address_words() -> Vec<&'static str> {
    let mut words = std::collections::BTreeSet::new();
    let mut fields = std::collections::BTreeSet::new();
    for schema in crate::catalog::every().into_iter() {
        for entry in crate::catalog::entries(schema) {
            words.insert(entry.address());
            for field in &entry.info.fields {
                fields.insert(format!("{}=", field.name));
            }
        }
    }
    // The script is printed once by a short-lived process: leaking the words is free.
    words
        .into_iter()
        .chain(fields)
        .map(|w| &*Box::leak(w.into_boxed_str()))
        .collect()
}

fn choices(words: &[&'static str]) -> PossibleValuesParser {
    PossibleValuesParser::new(words.iter().map(|w| PossibleValue::new(*w)))
}

/// Prints the completion script of `shell`.
pub(crate) fn completions(shell: clap_complete::Shell) -> CliResult<()> {
    let addresses = address_words();
    let schemas: Vec<&'static str> = crate::catalog::every()
        .into_iter()
        .map(|s| s.name)
        .collect();
    // Only the script's command gets the choices: the parser itself takes raw keys too.
    let mut command = crate::cli::Cli::command();
    for (sub, arg) in [
        ("get", "address"),
        ("ls", "address"),
        ("rm", "address"),
        ("watch", "address"),
        ("put", "args"),
    ] {
        let parser = choices(&addresses);
        command = command.mut_subcommand(sub, |c| c.mut_arg(arg, |a| a.value_parser(parser)));
    }
    let parser = choices(&schemas);
    command = command.mut_subcommand("schema", |c| c.mut_arg("name", |a| a.value_parser(parser)));
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "kvctl", &mut out);
    if shell == clap_complete::Shell::Fish {
        // clap's fish script completes options only: the positional words are added here.
        let words = addresses.join(" ");
        for sub in ["get", "ls", "rm", "watch", "put"] {
            out.extend(
                format!(
                    "complete -c kvctl -n \"__fish_kvctl_using_subcommand {sub}\" -f -a \"{words}\"\n"
                )
                .bytes(),
            );
        }
        out.extend(
            format!(
                "complete -c kvctl -n \"__fish_kvctl_using_subcommand schema\" -f -a \"{}\"\n",
                schemas.join(" ")
            )
            .bytes(),
        );
    }
    write(&out)
}

/// Prints the manual page.
pub(crate) fn man() -> CliResult<()> {
    let mut out = Vec::new();
    clap_mangen::Man::new(crate::cli::Cli::command())
        .render(&mut out)
        .map_err(|e| CliError::new(code::OTHER, format!("cannot render the manual: {e}")))?;
    write(&out)
}

fn write(bytes: &[u8]) -> CliResult<()> {
    crate::output::out!("{}", String::from_utf8_lossy(bytes));
    Ok(())
}
