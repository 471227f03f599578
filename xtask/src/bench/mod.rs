//! `cargo xtask bench`: what tracing costs, measured on whole commands and written to
//! BENCHMARKS.md. Five workloads (a syscall storm; a getppid storm from one thread and
//! from four, each timing its own calls; a fork storm; a file walk) run untraced,
//! under the floors (hooks that do next to nothing, or only send each call to user
//! space: `rtrace-floor`), under rtrace (a
//! full trace to a file, `-s`, `-e` of a call the workload never makes, page faults
//! alone, syscalls with their call chains), under perf trace (the same but `-e`) and
//! strace (on a 10× smaller storm: they are that much slower, and their ratio is
//! flat), and the timed storms under a bpftrace latency script. Runs alternate
//! between the commands and repeat; each row gives the median and the spread, the
//! ratio to the untraced run with and without the tracer's start-up, the per-call
//! ratio by the workload's own clock, the events recorded and lost, peak RSS.

mod report;

use std::{
    fs,
    os::unix::process::CommandExt as _,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};
use report::{Row, Runs};

use crate::{
    benchmarks_md::{git_head, section_of},
    paths::{release_rtrace, workspace_root},
    run::run_step,
};

pub struct Options {
    /// Read and write calls each of the syscall storm (dd bs=1).
    pub calls: u64,
    pub runs: usize,
    /// Workload names to run (all when empty).
    pub only: Vec<String>,
}

/// How a tracer is put in front of a command, and how its output is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tracer {
    Untraced,
    Floor(&'static str),
    Rtrace(&'static [&'static str]),
    /// rtrace with a setting of its environment: `RTRACE_SYSCALL_HOOKS=raw` (`-e` on the
    /// raw syscall tracepoints), `RTRACE_RINGS=1` (one ring shared by every CPU).
    RtraceEnv(&'static str, &'static [&'static str]),
    /// The static (musl, mimalloc) rtrace `cargo xtask dist` ships.
    RtraceStatic(&'static [&'static str]),
    Perf(&'static [&'static str]),
    Strace(&'static [&'static str]),
    /// bpftrace with `BPFTRACE_LATENCY`, on the storms that time themselves.
    Bpftrace,
}

/// The least a bpftrace user writes for each call's latency, filtered to the command
/// bpftrace starts (`cpid`): a start time per thread at entry, a histogram per
/// syscall at exit.
const BPFTRACE_LATENCY: &str = "tracepoint:raw_syscalls:sys_enter /pid == cpid/ { @s[tid] = nsecs; } \
     tracepoint:raw_syscalls:sys_exit /pid == cpid/ { @h[args->id] = hist(nsecs - @s[tid]); }";

impl Tracer {
    fn name(self) -> String {
        let with = |tool: &str, args: &[&str]| {
            std::iter::once(tool)
                .chain(args.iter().copied())
                .collect::<Vec<_>>()
                .join(" ")
        };
        match self {
            Tracer::Untraced => "untraced".into(),
            Tracer::Floor(kind) => format!("floor: {kind}"),
            Tracer::Rtrace(a) => with("rtrace", a),
            Tracer::RtraceEnv(var, a) => format!("{}, {var}", with("rtrace", a)),
            Tracer::RtraceStatic(a) => format!("{} (static build)", with("rtrace", a)),
            Tracer::Perf(a) => with("perf trace", a),
            Tracer::Strace(a) => with("strace -f", a),
            Tracer::Bpftrace => "bpftrace latency script".into(),
        }
    }

    /// Runs on the small workload (perf trace and strace).
    fn slow(self) -> bool {
        matches!(self, Tracer::Perf(_) | Tracer::Strace(_))
    }

    /// The command line of `load` under this tracer, writing the trace to `out`.
    fn argv(self, bins: &Bins, out: &Path, load: &[String]) -> Vec<String> {
        let out = out.display().to_string();
        let mut v: Vec<String> = Vec::new();
        match self {
            Tracer::Bpftrace => {
                // bpftrace takes the command as one string, split as a shell would.
                v.extend(
                    ["bpftrace", "-q", "-o", &out, "-e", BPFTRACE_LATENCY, "-c"].map(String::from),
                );
                v.push(load.join(" "));
                return v;
            }
            Tracer::Untraced => {}
            Tracer::Floor(kind) => {
                v.push(bins.floor.display().to_string());
                v.push(kind.into());
                v.push("--".into());
            }
            Tracer::Rtrace(a) | Tracer::RtraceEnv(_, a) | Tracer::RtraceStatic(a) => {
                if let Tracer::RtraceEnv(var, _) = self {
                    v.extend(["env".into(), var.into()]);
                }
                let bin = match self {
                    Tracer::RtraceStatic(_) => &bins.rtrace_static,
                    _ => &bins.rtrace,
                };
                v.push(bin.display().to_string());
                v.extend(a.iter().map(|s| s.to_string()));
                v.extend(["-o".into(), out, "--".into()]);
            }
            Tracer::Perf(a) => {
                v.extend(["perf".into(), "trace".into()]);
                v.extend(a.iter().map(|s| s.to_string()));
                v.extend(["-o".into(), out, "--".into()]);
            }
            Tracer::Strace(a) => {
                v.extend(["strace".into(), "-f".into()]);
                v.extend(a.iter().map(|s| s.to_string()));
                v.extend(["-o".into(), out]);
            }
        }
        v.extend(load.iter().cloned());
        v
    }

    /// Runs only on the workloads that time themselves: its filter sees the command's
    /// own process, not the children of the others.
    fn timed_only(self) -> bool {
        self == Tracer::Bpftrace
    }
}

/// The page faults alone, and the syscalls with their call chains.
const FAULTS: &[&str] = &["-F", "all", "--no-syscalls"];
const CHAINS: &[&str] = &["--call-graph", "fp"];

const TRACERS: [Tracer; 22] = [
    Tracer::Untraced,
    Tracer::Floor("count"),
    Tracer::Floor("duration"),
    Tracer::Floor("ring"),
    Tracer::Floor("openat"),
    Tracer::Rtrace(&[]),
    Tracer::RtraceEnv("RTRACE_RINGS=1", &[]),
    Tracer::Rtrace(&["-s"]),
    Tracer::Rtrace(&["-s", "--hist"]),
    Tracer::Rtrace(&["-e", "openat"]),
    Tracer::RtraceEnv("RTRACE_SYSCALL_HOOKS=raw", &["-e", "openat"]),
    Tracer::Rtrace(FAULTS),
    Tracer::Rtrace(CHAINS),
    Tracer::RtraceStatic(&[]),
    Tracer::RtraceStatic(&["-s"]),
    Tracer::Perf(&[]),
    Tracer::Perf(&["-s"]),
    Tracer::Perf(FAULTS),
    Tracer::Perf(CHAINS),
    Tracer::Strace(&[]),
    Tracer::Strace(&["-c"]),
    Tracer::Bpftrace,
];

/// Where `rtrace -e openat` runs its programs on this machine, as its `-v` says (the
/// calls' functions, or their events where the kernel refuses the functions).
fn e_hooks_said(rtrace: &Path) -> String {
    let said = Command::new(rtrace)
        .args(["-v", "-e", "openat", "-o", "/dev/null", "--", "/bin/true"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default();
    said.lines()
        .find(|l| l.contains("the syscall programs run on the chosen calls' own"))
        .map_or_else(
            || "nothing".to_string(),
            |l| l.trim_start_matches("rtrace: ").replace('`', "'"),
        )
}

struct Bins {
    rtrace: PathBuf,
    /// `cargo xtask dist`'s binary for this machine's architecture.
    rtrace_static: PathBuf,
    floor: PathBuf,
    storm_threads: PathBuf,
    peak_rss: PathBuf,
}

struct Workload {
    name: &'static str,
    /// What it is, for the page.
    what: String,
    full: Vec<String>,
    /// For perf trace and strace (the same as `full` where that is quick enough).
    small: Vec<String>,
    /// It says its own ns per call (`storm_threads.c`).
    timed: bool,
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn workloads(o: &Options, bins: &Bins) -> Vec<Workload> {
    let dd = |n: u64| words(&format!("dd if=/dev/zero of=/dev/null bs=1 count={n}"));
    let storm = |n: u64, threads: u32| {
        vec![
            bins.storm_threads.display().to_string(),
            n.to_string(),
            threads.to_string(),
        ]
    };
    // Each thread makes calls/2 getppid: as many syscalls in all as the storm.
    let per_thread = o.calls / 2;
    let forks = |n: u64| {
        vec![
            "/bin/sh".into(),
            "-c".into(),
            format!("i=0; while [ $i -lt {n} ]; do /bin/true; i=$((i+1)); done"),
        ]
    };
    let walk = words("find /usr -xdev");
    vec![
        Workload {
            name: "storm",
            what: format!(
                "`dd if=/dev/zero of=/dev/null bs=1 count={}`: {} syscalls (perf trace and strace: a tenth)",
                o.calls,
                2 * o.calls
            ),
            full: dd(o.calls),
            small: dd(o.calls / 10),
            timed: false,
        },
        Workload {
            name: "getppid",
            what: format!(
                "1 thread × {} getppid (`storm_threads.c`, timing itself; perf trace and strace: a tenth)",
                2 * o.calls
            ),
            full: storm(2 * o.calls, 1),
            small: storm(2 * o.calls / 10, 1),
            timed: true,
        },
        Workload {
            name: "threads",
            what: format!(
                "4 threads × {per_thread} getppid (`storm_threads.c`, timing itself; perf trace and strace: a tenth)"
            ),
            full: storm(per_thread, 4),
            small: storm(per_thread / 10, 4),
            timed: true,
        },
        Workload {
            name: "forks",
            what: "300 × `/bin/true` from `sh` (perf trace and strace: the same)".into(),
            full: forks(300),
            small: forks(300),
            timed: false,
        },
        Workload {
            name: "walk",
            what: "`find /usr -xdev` (perf trace and strace: the same)"
                .into(),
            full: walk.clone(),
            small: walk,
            timed: false,
        },
    ]
    .into_iter()
    .filter(|w| o.only.is_empty() || o.only.iter().any(|n| n == w.name))
    .collect()
}

/// bpftrace, installed with apt when missing (as `cargo xtask setup` installs its
/// tools); without it the page has no bpftrace row, and says so.
fn have_bpftrace() -> bool {
    if have("bpftrace") {
        return true;
    }
    eprintln!("bench: bpftrace is missing; installing it with apt");
    let installed = Command::new("apt-get")
        .args(["install", "-y", "-q", "bpftrace"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        eprintln!("bench: bpftrace could not be installed: its row is left out");
    }
    installed && have("bpftrace")
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// One run, through `peak_rss`: wall time, and the peak RSS of the command's process
/// tree (the tracer and the children it waited for).
fn run_once(bins: &Bins, argv: &[String], stderr_to: &Path) -> Result<(Duration, u64)> {
    let err = fs::File::create(stderr_to)?;
    let start = Instant::now();
    let status = Command::new(&bins.peak_rss)
        .args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .process_group(0)
        .status()
        .with_context(|| format!("starting {}", argv[0]))?;
    let wall = start.elapsed();
    let said = fs::read_to_string(stderr_to).unwrap_or_default();
    if !status.success() {
        bail!("`{}` failed ({status}): {}", argv.join(" "), said.trim());
    }
    let rss = said
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("peak_rss_kib "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    Ok((wall, rss))
}

/// Events a tracer wrote or counted, and those it lost.
fn events(tracer: Tracer, out: &Path, stderr: &Path) -> (Option<u64>, Option<u64>) {
    // A call chain's frames are indented below their line: not events.
    let lines = || -> Option<(u64, String)> {
        let text = fs::read_to_string(out).ok()?;
        let n = text.lines().filter(|l| !l.starts_with("      ")).count() as u64;
        Some((n, text))
    };
    match tracer {
        Tracer::Floor(kind) => {
            let said = fs::read_to_string(stderr).unwrap_or_default();
            let lost = (kind == "ring")
                .then(|| report::floor_not_sent(&said))
                .flatten();
            (report::floor_events(&said), lost)
        }
        Tracer::Rtrace(a) | Tracer::RtraceEnv(_, a) | Tracer::RtraceStatic(a) | Tracer::Perf(a)
            if a.is_empty() || a == FAULTS || a == CHAINS =>
        {
            match lines() {
                Some((n, text)) => {
                    let lost = report::lost_events(&text);
                    (Some(n - lost.min(n)), Some(lost))
                }
                None => (None, None),
            }
        }
        Tracer::Strace([]) => (lines().map(|(n, _)| n), None),
        _ => (None, None),
    }
}

fn machine() -> String {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = kernel_release();
    format!("{cores} × {cpu}, Linux {kernel}")
}

fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

fn tool_version(tool: &str) -> String {
    Command::new(tool)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| "not installed".into())
}

fn build(root: &Path) -> Result<Bins> {
    run_step(
        "build rtrace (release)",
        Command::new("cargo").current_dir(root).args([
            "build",
            "--release",
            "--package",
            "trace-cli",
            "--bins",
        ]),
    )?;
    let dir = root.join("target/bench");
    fs::create_dir_all(&dir)?;
    let helper = |name: &str, flags: &[&str]| -> Result<PathBuf> {
        let bin = dir.join(name);
        run_step(
            &format!("build {name}"),
            Command::new("gcc")
                .args(["-O2", "-o"])
                .arg(&bin)
                .args(flags)
                .arg(root.join(format!("xtask/src/bench/{name}.c"))),
        )?;
        Ok(bin)
    };
    let triple = format!("{}-unknown-linux-musl", std::env::consts::ARCH);
    let cross = crate::dist::toolchain::ensure(&[&triple])?;
    let rtrace_static = crate::dist::toolchain::build(&cross, root, &triple)?;
    let storm_threads = helper("storm_threads", &["-pthread"])?;
    let peak_rss = helper("peak_rss", &[])?;
    Ok(Bins {
        rtrace: release_rtrace(root),
        rtrace_static,
        floor: root.join("target/release/rtrace-floor"),
        storm_threads,
        peak_rss,
    })
}

pub fn bench(o: Options) -> Result<()> {
    let root = workspace_root();
    let bins = build(&root)?;
    let scratch = root.join("target/bench");
    let out = scratch.join("trace.out");
    let err = scratch.join("stderr.txt");
    let tracers: Vec<Tracer> = TRACERS
        .into_iter()
        .filter(|t| match t {
            Tracer::Perf(_) => have("perf"),
            Tracer::Strace(_) => have("strace"),
            Tracer::Bpftrace => have_bpftrace(),
            _ => true,
        })
        .collect();
    let loads = workloads(&o, &bins);

    // (workload, tracer) -> runs; untraced also at the small size; start-ups on `true`.
    let mut runs: Vec<Vec<Runs>> = vec![vec![Runs::default(); tracers.len()]; loads.len()];
    let mut small_untraced = vec![Runs::default(); loads.len()];
    let mut startups = vec![Runs::default(); tracers.len()];
    let record = |runs: &mut Runs, argv: &[String], tracer: Tracer| -> Result<()> {
        let _ = fs::remove_file(&out);
        let (wall, rss) = run_once(&bins, argv, &err)?;
        runs.walls.push(wall);
        runs.max_rss_kib = runs.max_rss_kib.max(rss);
        let (events, lost) = events(tracer, &out, &err);
        runs.events = events;
        runs.lost = lost;
        if let Some(ns) = report::loop_ns_per_call(&fs::read_to_string(&err).unwrap_or_default()) {
            runs.per_call_ns.push(ns);
        }
        let _ = fs::remove_file(&out);
        Ok(())
    };
    // One untraced run of each first, for warm caches (the walk reads directories).
    for w in &loads {
        run_once(&bins, &w.full, &err)?;
    }
    for round in 0..o.runs {
        eprintln!("bench: round {} of {}", round + 1, o.runs);
        for (ti, &t) in tracers.iter().enumerate() {
            if t != Tracer::Untraced {
                let argv = t.argv(&bins, &out, &["/bin/true".into()]);
                record(&mut startups[ti], &argv, t)?;
            }
        }
        for (wi, w) in loads.iter().enumerate() {
            if w.small != w.full {
                record(&mut small_untraced[wi], &w.small, Tracer::Untraced)?;
            }
            for (ti, &t) in tracers.iter().enumerate() {
                if t.timed_only() && !w.timed {
                    continue;
                }
                let load = if t.slow() { &w.small } else { &w.full };
                let argv = t.argv(&bins, &out, load);
                record(&mut runs[wi][ti], &argv, t)?;
            }
        }
    }

    let mut rows = Vec::new();
    for (wi, w) in loads.iter().enumerate() {
        let untraced = runs[wi][0].median();
        for (ti, &t) in tracers.iter().enumerate() {
            if runs[wi][ti].walls.is_empty() {
                continue;
            }
            let small = t.slow() && w.small != w.full;
            rows.push(Row {
                workload: w.name.into(),
                tracer: if small {
                    format!("{} (a tenth)", t.name())
                } else {
                    t.name()
                },
                runs: runs[wi][ti].clone(),
                untraced: if small {
                    small_untraced[wi].median()
                } else {
                    untraced
                },
                startup: (t != Tracer::Untraced).then(|| startups[ti].median()),
                untraced_per_call: if small {
                    small_untraced[wi].per_call()
                } else {
                    runs[wi][0].per_call()
                },
            });
        }
    }
    let startup_rows: Vec<Row> = tracers
        .iter()
        .enumerate()
        .filter(|(_, t)| **t != Tracer::Untraced)
        .map(|(ti, &t)| Row {
            workload: "`-- true`".into(),
            tracer: t.name(),
            runs: startups[ti].clone(),
            untraced: Duration::ZERO,
            startup: None,
            untraced_per_call: None,
        })
        .collect();

    let mut page = String::from("# Benchmarks\n\n");
    page.push_str(&format!(
        "Written by `cargo xtask bench --calls {} --runs {}` on {} (rtrace {}; {}; {}).\n\n",
        o.calls,
        o.runs,
        machine(),
        git_head(&root),
        tool_version("perf"),
        tool_version("strace"),
    ));
    page.push_str("Workloads:\n\n");
    for w in &loads {
        page.push_str(&format!("- **{}**: {}\n", w.name, w.what));
    }
    page.push_str(&format!(
        "\nEvery command ran {} times, the commands taking turns. Wall time of the whole \
         command; \"× untraced\" divides the median by the untraced median at the same \
         size; \"start-up out\" first takes away the tracer's own median on `/bin/true` \
         (loading, attaching, detaching), leaving the cost per syscall. Events: lines \
         written (rtrace, perf trace, strace) or hook runs counted (floors); lost: \
         `LOST N events!` (the ring floor: records that found a ring full). The ring \
         floor is the duration floor plus a record of rtrace's size through rtrace's \
         rings (one per CPU, as rtrace has them) at each exit, which a thread of \
         `rtrace-floor` takes every millisecond and throws away: what any tracer that \
         shows every call pays before it merges, decodes or prints one. Peak RSS: the largest process of the tracer's tree. \
         \"Per call × untraced, its own clock\": the storms that time themselves say \
         how long each call took as the program felt it (vDSO clock around its loop, \
         median of the runs), traced over untraced: no tracer's start-up, exit or \
         final read is in it. The bpftrace row runs `{BPFTRACE_LATENCY}` ({}), \
         on those storms only: its filter sees the command's own process.\n\n",
        o.runs,
        tool_version("bpftrace"),
    ));
    if !tracers.contains(&Tracer::Bpftrace) {
        page.push_str("bpftrace was missing and could not be installed: no row for it.\n\n");
    }
    page.push_str(&format!(
        "`-e openat` ran where rtrace's `-v` said: \"{}\".\n\n",
        e_hooks_said(&bins.rtrace)
    ));
    page.push_str(&report::table(&rows));
    page.push_str("\nStart-up and exit, on `/bin/true`:\n\n");
    page.push_str(&report::table(&startup_rows));
    page.push_str(
        "\nThe reader alone (`cargo bench -p trace-cli --bench reader`: records through the \
         session's `Printer` into a sink, one core, divan; items are records): `lines` and \
         `json`, a `dd bs=1` storm's read and write of one byte; `threads`, a 4-thread getppid \
         storm's; `blocked`, the `dd` storm's while 512 other threads are blocked in a call; \
         `churn_beside_many`, a fork and an exit_group in turn while 2000 processes hold 20 fds \
         each:\n\n```\n",
    );
    page.push_str(&reader_bench(&root)?);
    page.push_str("```\n");
    print!("{page}");
    let path = root.join("BENCHMARKS.md");
    // The soak's section (cargo xtask soak) stays as it was.
    let old = fs::read_to_string(&path).unwrap_or_default();
    if let Some(soak) = section_of(&old) {
        page.push('\n');
        page.push_str(soak);
        page.push('\n');
    }
    fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("bench: written to {}", path.display());
    Ok(())
}

/// divan's table for the reader's microbenchmark.
fn reader_bench(root: &Path) -> Result<String> {
    let out = crate::run::capture(
        "the reader's microbenchmark",
        Command::new("cargo").current_dir(root).args([
            "bench",
            "--quiet",
            "-p",
            "trace-cli",
            "--bench",
            "reader",
        ]),
    )?;
    Ok(out
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect())
}
