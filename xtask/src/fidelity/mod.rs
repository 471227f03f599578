//! `cargo xtask fidelity`: real programs already on a Debian machine, each traced by
//! rtrace, perf trace and strace; per program, the calls rtrace and strace saw, the share
//! of rtrace's lines identical to perf's (times, tids, addresses and pids aside), and the
//! differing lines by class. A tool for the decoding work, not a gate: CI runs it on a
//! few programs so that it keeps working.

mod compare;

use std::{
    path::Path,
    process::{Command, Stdio},
};

use anyhow::{Context as _, Result, bail};

use crate::{
    paths::{release_rtrace, workspace_root},
    run::run_step,
};
use compare::{Class, Report};

/// (name, command): file walkers, archivers, compilers, interpreters, shells and
/// pipelines, a network client on loopback, signals and process groups, threads. Each
/// runs in a scratch directory of its own, which holds `file.txt`.
const CORPUS: &[(&str, &str)] = &[
    ("cat", "cat /etc/hostname"),
    ("ls", "ls -la /usr/share/doc/tar"),
    ("find", "find /usr/share/doc/tar /usr/share/doc/gzip"),
    ("tar", "tar -cf archive.tar file.txt"),
    ("gzip", "gzip -kf file.txt"),
    ("sort", "sort /etc/services"),
    ("head", "head -c 100 /etc/services"),
    ("stat", "stat /etc/hostname"),
    ("df", "df -h /"),
    ("du", "du -s /usr/share/doc/tar"),
    ("ps", "ps -p 1 -o comm="),
    ("id", "id"),
    ("date", "date"),
    ("uname", "uname -a"),
    ("getent", "getent hosts localhost"),
    (
        "cp-mv-rm",
        "sh -c 'cp file.txt b.txt && mv b.txt c.txt && rm c.txt'",
    ),
    ("mkdir", "sh -c 'mkdir -p d/e && rmdir d/e d'"),
    (
        "pipeline",
        "sh -c 'cat /etc/services | grep -c tcp | wc -l'",
    ),
    ("readlink", "readlink -f /proc/self/exe"),
    ("sleep", "sleep 0.01"),
    ("timeout", "timeout 5 sh -c 'kill -TERM $$'"),
    ("gcc", "gcc -c -x c -o empty.o /dev/null"),
    ("python", "python3 -S -c 'import os; os.listdir(\".\")'"),
    (
        "python-threads",
        "python3 -S -c 'import threading; t = threading.Thread(target=len, args=(\"a\",)); t.start(); t.join()'",
    ),
    (
        "python-socket",
        "python3 -S -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.send(b\"hi\"); a.recv(2)'",
    ),
];

/// How many programs `--quick` runs (CI's check that the tool keeps working).
const QUICK: usize = 3;

/// Runs `cmd` (through `/bin/sh`, found without a PATH search) under `tool`, whose trace
/// goes to stderr, written to `out`. Every tool's trace lands in the same file name,
/// `trace.out` in `dir` (moved to `out` after), so that the program sees the same fds
/// and paths under each: `perf trace -o` would leave its file open in the program as an
/// extra fd.
fn traced(tool: &[&str], cmd: &str, dir: &Path, out: &Path) -> Result<()> {
    let file = dir.join("trace.out");
    let trace = std::fs::File::create(&file)?;
    let status = Command::new(tool[0])
        .args(&tool[1..])
        .args(["--", "/bin/sh", "-c", &format!("exec {cmd}")])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(trace)
        .status()
        .with_context(|| format!("running {}", tool[0]))?;
    std::fs::rename(&file, out)?;
    // The program's own status does not matter; a tracer that could not start does.
    if status.code() == Some(127) {
        bail!("{} could not run `{cmd}`", tool[0]);
    }
    Ok(())
}

fn read(p: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned()
}

pub fn fidelity(quick: bool, only: &[String], verbose: bool) -> Result<()> {
    // Another build of rtrace (an older one, to compare): RTRACE_BIN.
    if let Some(bin) = std::env::var_os("RTRACE_BIN") {
        return fidelity_with(Path::new(&bin), quick, only, verbose);
    }
    run_step(
        "build rtrace (release)",
        Command::new("cargo").args(["build", "--release", "--package", "trace-cli"]),
    )?;
    fidelity_with(&release_rtrace(&workspace_root()), quick, only, verbose)
}

/// Runs the corpus (or its first few, `quick`) with this rtrace binary; fails when a
/// program gives no line to compare (the tool, or a tracer, is broken).
pub fn fidelity_with(rtrace: &Path, quick: bool, only: &[String], verbose: bool) -> Result<()> {
    let root = workspace_root();
    let rtrace = rtrace.to_str().context("non-UTF-8 path")?;
    let work = root.join("target/fidelity");
    let programs: Vec<&(&str, &str)> = CORPUS
        .iter()
        .filter(|(name, _)| only.is_empty() || only.iter().any(|o| o == name))
        .take(if quick { QUICK } else { usize::MAX })
        .collect();
    println!(
        "{:<15} {:>15} {:>9} {:>10} {:>7} {:>7} {:>6} {:>6} {:>7} {:>6} {:>6}",
        "program",
        "calls rt/strace",
        "paired",
        "identical",
        "shape",
        "BETTER",
        "FORMAT",
        "WRONG",
        "MISSING",
        "VARIES",
        "UNSURE"
    );
    let (mut lines, mut same, mut shaped) = (0, 0, 0);
    let mut causes: std::collections::HashMap<String, (usize, String, String)> = Default::default();
    for (name, cmd) in programs {
        let dir = work.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("file.txt"), "fidelity\n".repeat(100))?;
        // Kept beside the program's directory, so that each run sees the same files.
        let kept = work.join(format!("{name}.traces"));
        let _ = std::fs::remove_dir_all(&kept);
        std::fs::create_dir_all(&kept)?;
        let (p, r, s) = (
            kept.join("perf.out"),
            kept.join("rtrace.out"),
            kept.join("strace.out"),
        );
        traced(&["perf", "trace"], cmd, &dir, &p)?;
        traced(&[rtrace], cmd, &dir, &r)?;
        traced(&["strace", "-f", "-qq"], cmd, &dir, &s)?;
        let report = compare::compare(&read(&p), &read(&r), &read(&s));
        print_row(name, &report);
        if report.paired == 0 || report.strace_calls == 0 {
            bail!("{name}: nothing to compare (see {})", kept.display());
        }
        if verbose {
            for (class, perf, rt) in &report.examples {
                println!("    {class:?}\n      perf:   {perf}\n      rtrace: {rt}");
            }
        }
        lines += report.paired;
        same += report.identical;
        shaped += report.shaped();
        for (c, (n, p, r)) in &report.causes {
            causes
                .entry(c.clone())
                .or_insert_with(|| (0, p.clone(), r.clone()))
                .0 += n;
        }
    }
    let pct = |n: usize| 100.0 * n as f64 / lines.max(1) as f64;
    println!(
        "all: {lines} paired lines, {same} identical to perf's ({:.1} %), {shaped} in perf's shape \
         ({:.1} %: identical, or a value where perf shows a pointer)",
        pct(same),
        pct(shaped)
    );
    let mut top: Vec<(String, (usize, String, String))> = causes.into_iter().collect();
    top.sort_by(|a, b| b.1.0.cmp(&a.1.0).then_with(|| a.0.cmp(&b.0)));
    println!("what differs most (FORMAT and MISSING lines, by syscall.argument):");
    for (c, (n, p, r)) in top.iter().take(15) {
        println!("  {n:>6}  {c}");
        if verbose {
            println!("          perf:   {p}\n          rtrace: {r}");
        }
    }
    Ok(())
}

fn print_row(name: &str, r: &Report) {
    let n = |c: Class| r.classes.get(&c).copied().unwrap_or(0);
    let pct = |n: usize| 100.0 * n as f64 / r.paired.max(1) as f64;
    println!(
        "{:<15} {:>7}/{:<7} {:>9} {:>8.1} % {:>5.1} % {:>7} {:>6} {:>6} {:>7} {:>6} {:>6}",
        name,
        r.rtrace_calls,
        r.strace_calls,
        r.paired,
        pct(r.identical),
        pct(r.shaped()),
        n(Class::Better),
        n(Class::Format),
        n(Class::Wrong),
        n(Class::Missing),
        n(Class::Varies),
        n(Class::Unsure),
    );
}
