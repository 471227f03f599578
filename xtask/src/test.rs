//! `cargo xtask test`: lint, unit tests, then the integration tests that run the real
//! `rtrace` binary as root, one at a time (they share kernel state: maps, tracepoints).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::Result;

use crate::run::run_step;

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

const USER_SIDE: [&str; 8] = [
    "-p",
    "trace-cli",
    "-p",
    "trace-common",
    "-p",
    "xtask",
    "-p",
    "rtrace-tests",
];

pub fn test(lint: bool) -> Result<()> {
    let root = workspace_root();
    let cargo = || {
        let mut c = Command::new("cargo");
        c.current_dir(&root);
        c
    };
    if lint {
        run_step(
            "check formatting",
            cargo().args(["fmt", "--all", "--check"]),
        )?;
        run_step(
            "clippy",
            cargo()
                .arg("clippy")
                .args(USER_SIDE)
                .args(["--all-targets", "--", "-D", "warnings"]),
        )?;
    }
    run_step(
        "build rtrace",
        cargo().args(["build", "--package", "trace-cli"]),
    )?;
    run_step(
        "unit tests",
        cargo().args([
            "test",
            "-p",
            "trace-cli",
            "-p",
            "trace-common",
            "-p",
            "xtask",
        ]),
    )?;
    run_step(
        "integration tests (root, one at a time)",
        cargo()
            .args(["test", "-p", "rtrace-tests", "--", "--test-threads=1"])
            .env("RTRACE_BIN", root.join("target/debug/rtrace")),
    )
}
