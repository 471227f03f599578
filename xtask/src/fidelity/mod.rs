//! `cargo xtask fidelity`: real programs already on a Debian machine, each traced by
//! rtrace, perf trace and strace; per program, the calls rtrace and strace saw, the share
//! of rtrace's lines identical to perf's (times, tids, addresses and pids aside), and the
//! differing lines by class; and, against `strace -y -yy`, the values strace names that
//! rtrace shows as a number and the fds strace names that rtrace shows bare, by
//! `syscall.argument`. A tool for the decoding work, not a gate: CI runs it on a few
//! programs so that it keeps working.

mod compare;
mod corpus;
mod strace;

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
use corpus::{CORPUS, Program};
use strace::Naming;

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

/// The tools the chosen programs need, installed with apt when missing (as the bench
/// installs bpftrace); a program whose tools are still missing is left out, and the
/// run says so.
fn install_missing(programs: &[&Program]) {
    let mut packages: Vec<&str> = programs
        .iter()
        .flat_map(|p| p.needs.iter())
        .filter(|(tool, _)| !have(tool))
        .map(|(_, package)| *package)
        .collect();
    packages.sort();
    packages.dedup();
    if packages.is_empty() {
        return;
    }
    eprintln!("fidelity: installing {} with apt", packages.join(" "));
    let _ = Command::new("apt-get")
        .args(["install", "-y", "-q"])
        .args(&packages)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdout(Stdio::null())
        .status();
}

fn have(tool: &str) -> bool {
    Command::new("/bin/sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A syscall's argument names, from its tracefs format (mounted by the tracers by now).
fn tracefs_args(call: &str) -> Option<Vec<String>> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .find_map(|t| {
            std::fs::read_to_string(format!("{t}/events/syscalls/sys_enter_{call}/format")).ok()
        })
        .map(|f| strace::format_args(&f))
}

/// Runs the corpus (or its first few, `quick`) with this rtrace binary; fails when a
/// program gives no line to compare (the tool, or a tracer, is broken).
pub fn fidelity_with(rtrace: &Path, quick: bool, only: &[String], verbose: bool) -> Result<()> {
    let root = workspace_root();
    let rtrace = rtrace.to_str().context("non-UTF-8 path")?;
    let work = root.join("target/fidelity");
    let programs: Vec<&Program> = CORPUS
        .iter()
        .filter(|p| only.is_empty() || only.iter().any(|o| o == p.name))
        .take(if quick { QUICK } else { usize::MAX })
        .collect();
    install_missing(&programs);
    println!(
        "{:<15} {:>15} {:>9} {:>10} {:>7} {:>7} {:>6} {:>6} {:>7} {:>6} {:>6} {:>12} {:>11}",
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
        "UNSURE",
        "as number",
        "fd no path"
    );
    let (mut lines, mut same, mut shaped, mut wrong) = (0, 0, 0, 0);
    let mut causes: std::collections::HashMap<String, (usize, String, String)> = Default::default();
    let mut naming = Naming::default();
    let mut left_out = Vec::new();
    for program in programs {
        let name = program.name;
        if let Some((tool, _)) = program.needs.iter().find(|(tool, _)| !have(tool)) {
            println!("{name:<15} left out: {tool} is missing");
            left_out.push(name);
            continue;
        }
        let dir = work.join(name);
        // Kept beside the program's directory, so that each run sees the same files.
        let kept = work.join(format!("{name}.traces"));
        let _ = std::fs::remove_dir_all(&kept);
        std::fs::create_dir_all(&kept)?;
        let (p, r, s) = (
            kept.join("perf.out"),
            kept.join("rtrace.out"),
            kept.join("strace.out"),
        );
        let s_arg = s.to_str().context("non-UTF-8 path")?;
        // Each tracer runs on a directory as the setup left it.
        let runs: [(&[&str], &Path); 3] = [
            (&["perf", "trace"], &p),
            (&[rtrace], &r),
            // strace's own file (close-on-exec: the program does not see it), each line
            // with its tid, and fds with what they are.
            (
                &["strace", "-f", "-qq", "-y", "-yy", "-o", s_arg],
                &kept.join("strace.stderr"),
            ),
        ];
        let mut set_up = true;
        for (tool, out) in runs {
            set_up = prepare(program, &dir)?;
            if !set_up {
                break;
            }
            traced(tool, program.cmd, &dir, out)?;
        }
        if !set_up {
            println!(
                "{name:<15} left out: its setup failed (`{}`)",
                program.setup
            );
            left_out.push(name);
            continue;
        }
        let report = compare::compare(&read(&p), &read(&r), &read(&s));
        let strace_calls = strace::parse(&read(&s));
        let named = strace::compare(&read(&r), &strace_calls, &tracefs_args);
        print_row(name, &report, &named);
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
        wrong += report.classes.get(&Class::Wrong).copied().unwrap_or(0);
        naming.add(&named);
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
         ({:.1} %: identical, or a value where perf shows a pointer), {wrong} WRONG",
        pct(same),
        pct(shaped)
    );
    if !left_out.is_empty() {
        println!("left out: {}", left_out.join(" "));
    }
    let mut top: Vec<(String, (usize, String, String))> = causes.into_iter().collect();
    top.sort_by(|a, b| b.1.0.cmp(&a.1.0).then_with(|| a.0.cmp(&b.0)));
    println!("what differs most from perf (FORMAT and MISSING lines, by syscall.argument):");
    for (c, (n, p, r)) in top.iter().take(15) {
        println!("  {n:>6}  {c}");
        if verbose {
            println!("          perf:   {p}\n          rtrace: {r}");
        }
    }
    print_naming(&naming);
    Ok(())
}

/// Lays the program's directory anew (`file.txt`, its files, then its setup), before
/// each tracer, so that each finds what the first found; false when the setup failed.
fn prepare(program: &Program, dir: &Path) -> Result<bool> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("file.txt"), "fidelity\n".repeat(100))?;
    for (file, text) in program.files {
        std::fs::write(dir.join(file), text)?;
    }
    if program.setup.is_empty() {
        return Ok(true);
    }
    let status = Command::new("/bin/sh")
        .args(["-c", program.setup])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("running the setup of {}", program.name))?;
    Ok(status.success())
}

/// The corpus's counts against strace: values strace names that rtrace shows as a
/// number, and fds strace names that rtrace shows bare, each by `syscall.argument`.
fn print_naming(n: &Naming) {
    let pct = |a: usize, b: usize| 100.0 * a as f64 / b.max(1) as f64;
    println!(
        "against strace -y -yy: {} calls paired; of {} values strace names and rtrace shows, \
         {} a bare number ({:.1} %); {} more hidden by rtrace (zeros, as perf hides them); \
         of {} fds strace names (mmap's aside), {} without what they are ({:.1} %)",
        n.paired,
        n.named,
        n.numbers(),
        pct(n.numbers(), n.named),
        n.hidden(),
        n.fds,
        n.fds_bare(),
        pct(n.fds_bare(), n.fds)
    );
    for (title, map) in [
        ("strace names it, rtrace shows a number", &n.numbers),
        ("strace names the fd, rtrace shows it bare", &n.fds_bare),
        ("strace names it, rtrace hides it (a zero)", &n.hidden),
    ] {
        if map.is_empty() {
            continue;
        }
        println!("{title}:");
        let mut rows: Vec<_> = map.iter().collect();
        rows.sort_by(|a, b| b.1.count.cmp(&a.1.count).then_with(|| a.0.cmp(b.0)));
        for (key, seen) in rows {
            println!(
                "  {:>6}  {key:<32} strace: {:<28} rtrace: {}",
                seen.count, seen.strace, seen.rtrace
            );
        }
    }
}

fn print_row(name: &str, r: &Report, named: &Naming) {
    let n = |c: Class| r.classes.get(&c).copied().unwrap_or(0);
    let pct = |n: usize| 100.0 * n as f64 / r.paired.max(1) as f64;
    println!(
        "{:<15} {:>7}/{:<7} {:>9} {:>8.1} % {:>5.1} % {:>7} {:>6} {:>6} {:>7} {:>6} {:>6} {:>5}/{:<6} {:>4}/{:<6}",
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
        named.numbers(),
        named.named,
        named.fds_bare(),
        named.fds,
    );
}
