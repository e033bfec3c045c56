//! Running one step of a command.

use std::process::Command;

/// Runs a command, turning a failure into a message that names the step.
pub fn run(step: &str, cmd: &mut Command) -> Result<(), String> {
    eprintln!("xtask: {step}");
    let status = cmd
        .status()
        .map_err(|e| format!("{step}: cannot start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{step} failed ({status})"))
    }
}
