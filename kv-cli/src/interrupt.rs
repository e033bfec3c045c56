//! Ctrl-C for the commands that run until it: the handler is installed when the command
//! starts waiting for it, before it prints anything an operator (or a script) may answer
//! with an interrupt.
//!
//! `tokio::signal::ctrl_c()` installs its handler only when first polled. A command that
//! printed a line and then polled it left a window in which SIGINT still had its default
//! action and killed the process with no exit code.

use crate::error::{CliError, CliResult, code};

/// An installed Ctrl-C (SIGINT) handler. While it lives, Ctrl-C no longer kills the process:
/// it wakes [`recv`](Self::recv).
pub(crate) struct Interrupt {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
    #[cfg(windows)]
    signal: tokio::signal::windows::CtrlC,
}

impl Interrupt {
    /// Installs the handler now.
    pub(crate) fn install() -> CliResult<Self> {
        #[cfg(unix)]
        let signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt());
        #[cfg(windows)]
        let signal = tokio::signal::windows::ctrl_c();
        let signal =
            signal.map_err(|e| CliError::new(code::OTHER, format!("cannot handle Ctrl-C: {e}")))?;
        Ok(Self { signal })
    }

    /// Waits for the next Ctrl-C. Cancel-safe: it can be a branch of `select!` in a loop.
    pub(crate) async fn recv(&mut self) {
        // `None` only when the runtime shuts down, which ends the command anyway.
        let _ = self.signal.recv().await;
    }
}

#[cfg(test)]
mod tests {
    use super::Interrupt;

    /// The handler is in place as soon as `install` returns, before anything polls it: a
    /// SIGINT sent at once wakes `recv` instead of killing this process.
    #[cfg(unix)]
    #[tokio::test]
    async fn installed_before_first_poll() {
        let mut interrupted = Interrupt::install().unwrap();
        let sent = std::process::Command::new("kill")
            .args(["-INT", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        tokio::time::timeout(std::time::Duration::from_secs(30), interrupted.recv())
            .await
            .expect("the interrupt is received");
    }
}
