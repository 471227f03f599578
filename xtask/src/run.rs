//! Running steps: every failure names the step and the command to retry.

use std::process::Command;

use anyhow::{Result, bail};

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs `cmd` with inherited stdio; fails with the step's name and the command line.
pub fn run_step(step: &str, cmd: &mut Command) -> Result<()> {
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => bail!("step '{step}' could not start `{}`: {e}", describe(cmd)),
    };
    if !status.success() {
        bail!(
            "step '{step}' failed ({status}); retry with: {}",
            describe(cmd)
        );
    }
    Ok(())
}

/// Runs `cmd` and returns its stdout.
pub fn capture(step: &str, cmd: &mut Command) -> Result<String> {
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => bail!("step '{step}' could not start `{}`: {e}", describe(cmd)),
    };
    if !out.status.success() {
        bail!(
            "step '{step}' failed ({}): {}; retry with: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            describe(cmd)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
