//! The password of `--user`: from `KVCTL_PASSWORD`, else asked on the terminal without
//! echoing it. Never taken from a flag or the config file, where shell history and backups
//! would keep it; never printed.

use crate::error::{CliError, CliResult};

/// The password of `user`.
///
/// # Errors
/// Exit code 2 when `KVCTL_PASSWORD` is not set (or not UTF-8) and there is no terminal to
/// ask on.
pub(crate) fn ask(user: &str) -> CliResult<String> {
    match std::env::var("KVCTL_PASSWORD") {
        Ok(password) if !password.is_empty() => return Ok(password),
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(CliError::invalid("KVCTL_PASSWORD is not UTF-8"));
        }
        _ => {}
    }
    // rpassword reads the controlling terminal, not stdin: a value piped to `put -` stays
    // the value.
    rpassword::prompt_password(format!("Password for {user}: ")).map_err(|e| {
        CliError::invalid(format!(
            "--user {user}: no password: set KVCTL_PASSWORD, or run kvctl on a terminal to be \
             asked for it ({e})"
        ))
    })
}
