//! `cargo xtask bench`: how much tracing slows a syscall-heavy command, for rtrace
//! (trace, summary, a small -e selection) against perf trace and strace when installed.
//! Wall-clock medians over a few runs; the ratio to the untraced run is what matters.

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Result, bail};

use crate::{run::run_step, test::workspace_root};

const RUNS: usize = 3;

fn median_time(cmd: &[String]) -> Result<Duration> {
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let status = Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !status.success() {
            bail!("`{}` failed: {status}", cmd.join(" "));
        }
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times[RUNS / 2])
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

pub fn bench(calls: u64) -> Result<()> {
    run_step(
        "build rtrace (release)",
        Command::new("cargo").args(["build", "--release", "--package", "trace-cli"]),
    )?;
    let rtrace = workspace_root()
        .join("target/release/rtrace")
        .display()
        .to_string();
    let workload: Vec<String> = [
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=1",
        &format!("count={calls}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let with = |prefix: &[&str]| -> Vec<String> {
        prefix
            .iter()
            .map(|s| s.to_string())
            .chain(workload.iter().cloned())
            .collect()
    };
    let mut cases: Vec<(&str, Vec<String>)> = vec![
        ("untraced", workload.clone()),
        (
            "rtrace (trace to /dev/null)",
            with(&[&rtrace, "-o", "/dev/null", "--"]),
        ),
        (
            "rtrace -s (summary only)",
            with(&[&rtrace, "-s", "-o", "/dev/null", "--"]),
        ),
        (
            "rtrace -e openat",
            with(&[&rtrace, "-e", "openat", "-o", "/dev/null", "--"]),
        ),
    ];
    if have("perf") {
        cases.push((
            "perf trace",
            with(&["perf", "trace", "-o", "/dev/null", "--"]),
        ));
        cases.push((
            "perf trace -s",
            with(&["perf", "trace", "-s", "-o", "/dev/null", "--"]),
        ));
    }
    if have("strace") {
        cases.push(("strace -f", with(&["strace", "-f", "-o", "/dev/null"])));
    }
    println!(
        "workload: {} ({calls} reads and {calls} writes), median of {RUNS}",
        workload.join(" ")
    );
    let mut base = None;
    for (name, cmd) in cases {
        let t = median_time(&cmd)?;
        let b = *base.get_or_insert(t);
        println!(
            "{name:<30} {:>9.3} s  {:>7.2}x",
            t.as_secs_f64(),
            t.as_secs_f64() / b.as_secs_f64()
        );
    }
    Ok(())
}
