//! `cargo xtask fuzz`: the record-file fuzz target (fuzz/, cargo-fuzz, nightly) for a
//! while, with libFuzzer's memory limits: a record file is untrusted input, and no
//! length in one may make `rtrace -i` allocate past one header and one record.

use std::{fs, path::Path, process::Command};

use anyhow::{Context, Result};

use crate::{paths::workspace_root, run::run_step, setup::NIGHTLY};

pub const CARGO_FUZZ_VERSION: &str = "0.13.2";
const TARGET: &str = "record_file";

/// Runs the fuzz target for `seconds`. It starts from the committed seeds, copied to a
/// scratch corpus under target/ (what it finds stays there, and so does any crash),
/// so that a run leaves the source tree as it was.
pub fn fuzz(seconds: u64) -> Result<()> {
    let root = workspace_root();
    ensure_cargo_fuzz()?;
    let scratch = root.join("target/fuzz-corpus").join(TARGET);
    copy_seeds(&root.join("fuzz/corpus").join(TARGET), &scratch)?;
    let artifacts = root.join("target/fuzz-artifacts").join(TARGET);
    fs::create_dir_all(&artifacts).with_context(|| format!("create {}", artifacts.display()))?;
    // libFuzzer wants the prefix to end with the separator.
    let prefix = format!("-artifact_prefix={}/", artifacts.display());
    run_step(
        &format!("fuzz the record reader ({seconds} s)"),
        Command::new("cargo")
            .current_dir(&root)
            .args([&format!("+{NIGHTLY}"), "fuzz", "run", TARGET])
            .arg(&scratch)
            .args([
                "--",
                &format!("-max_total_time={seconds}"),
                // Past these a run is a failure: what proves memory stays bounded.
                "-rss_limit_mb=1024",
                "-malloc_limit_mb=256",
                // An input that takes seconds is a bug too (a length read as a count).
                "-timeout=10",
                &prefix,
            ]),
    )
}

/// cargo-fuzz, installed from crates.io when `cargo fuzz` does not run.
fn ensure_cargo_fuzz() -> Result<()> {
    let present = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if present {
        return Ok(());
    }
    eprintln!("xtask: installing cargo-fuzz {CARGO_FUZZ_VERSION}");
    run_step(
        "install cargo-fuzz",
        Command::new("cargo").args([
            "install",
            "cargo-fuzz",
            "--locked",
            "--version",
            CARGO_FUZZ_VERSION,
        ]),
    )
}

/// Copies every seed into `scratch` (created when missing; what is there is kept).
fn copy_seeds(seeds: &Path, scratch: &Path) -> Result<()> {
    fs::create_dir_all(scratch).with_context(|| format!("create {}", scratch.display()))?;
    for entry in fs::read_dir(seeds).with_context(|| format!("read {}", seeds.display()))? {
        let entry = entry?;
        fs::copy(entry.path(), scratch.join(entry.file_name())).with_context(|| {
            format!("copy {} into {}", entry.path().display(), scratch.display())
        })?;
    }
    Ok(())
}
