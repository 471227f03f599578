//! `cargo xtask soak` (as root, minutes long, not in CI): whether rtrace stays flat over
//! a long system-wide trace. Each mode (`-a`, `-a -s`, `-a -F all`, `-a --call-graph
//! fp`) runs the release build for a while beside a churn of short processes, threads
//! that come and go, and a file written through a shared mapping (what a linker does),
//! sampling rtrace's RSS, its open descriptors and the entries of its BPF hash maps;
//! the curves go to BENCHMARKS.md's soak section.

mod bpf_maps;

use std::{
    fmt::Write as _,
    fs,
    path::Path,
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};

use crate::{
    benchmarks_md::{SECTION_END, SECTION_START, git_head, with_section},
    paths::{release_rtrace, workspace_root},
    run::run_step,
};

pub struct Options {
    /// How long each mode runs.
    pub seconds: u64,
    /// How often rtrace is sampled.
    pub every: u64,
}

const MODES: [&[&str]; 4] = [
    &["-a"],
    &["-a", "-s"],
    &["-a", "-F", "all"],
    &["-a", "--call-graph", "fp"],
];

/// A process of the churn, killed with its process group when dropped.
struct Churn(Child);

impl Churn {
    fn spawn(cmd: &mut Command) -> Result<Self> {
        use std::os::unix::process::CommandExt as _;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context("starting the churn")?;
        Ok(Self(child))
    }
}

impl Drop for Churn {
    fn drop(&mut self) {
        // SAFETY: signalling the process group this churn leads.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// One sample of rtrace.
struct Sample {
    rss_kib: u64,
    fds: usize,
    map_entries: usize,
}

fn sample(pid: u32) -> Option<Sample> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())?;
    let fds = fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count();
    Some(Sample {
        rss_kib,
        fds,
        map_entries: bpf_maps::hash_entries(pid),
    })
}

fn compile(src: &str, out: &Path) -> Result<()> {
    run_step(
        "compile the soak's churn",
        Command::new("gcc")
            .args(["-O2", "-pthread", "-o"])
            .arg(out)
            .arg(src),
    )
}

pub fn soak(o: Options) -> Result<()> {
    if !nix_is_root() {
        bail!("the soak traces system-wide: run it as root");
    }
    let root = workspace_root();
    run_step(
        "build rtrace (release)",
        Command::new("cargo").current_dir(&root).args([
            "build",
            "--release",
            "--package",
            "trace-cli",
        ]),
    )?;
    let rtrace = release_rtrace(&root);
    let dir = root.join("target/soak");
    fs::create_dir_all(&dir)?;
    let here = root.join("xtask/src/soak");
    let threads = dir.join("thread_churn");
    let writer = dir.join("shared_writer");
    compile(here.join("thread_churn.c").to_str().unwrap(), &threads)?;
    compile(here.join("shared_writer.c").to_str().unwrap(), &writer)?;
    let files = dir.join("files");
    fs::create_dir_all(&files)?;

    let mut curves = Vec::new();
    for mode in MODES {
        eprintln!("soak: rtrace {} for {} s", mode.join(" "), o.seconds);
        let churn = [
            Churn::spawn(Command::new("sh").args(["-c", "while :; do /bin/true; done"]))?,
            Churn::spawn(&mut Command::new(&threads))?,
            Churn::spawn(Command::new(&writer).arg(&files))?,
        ];
        let mut tracer = Command::new(&rtrace)
            .args(mode)
            .args(["-o", "/dev/null"])
            .env("PERF_CONFIG", "/dev/null")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting rtrace")?;
        let pid = tracer.id();
        let start = Instant::now();
        let mut samples = Vec::new();
        while start.elapsed() < Duration::from_secs(o.seconds) {
            thread::sleep(Duration::from_secs(o.every));
            if let Ok(Some(status)) = tracer.try_wait() {
                bail!("rtrace {} ended by itself: {status}", mode.join(" "));
            }
            if let Some(s) = sample(pid) {
                samples.push(s);
            }
        }
        // SAFETY: signalling our own child, as a user's Ctrl-C.
        unsafe { libc::kill(pid as i32, libc::SIGINT) };
        let out = tracer.wait_with_output()?;
        drop(churn);
        let said: Vec<String> = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.starts_with("rtrace: "))
            .map(str::to_string)
            .collect();
        curves.push((mode.join(" "), samples, said));
    }
    let _ = fs::remove_dir_all(&files);
    let section = report(&o, &curves);
    print!("{section}");
    let path = root.join("BENCHMARKS.md");
    let page = fs::read_to_string(&path).unwrap_or_default();
    fs::write(&path, with_section(&page, &section))
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("soak: written to {}", path.display());
    Ok(())
}

fn nix_is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Growth from the first sample after warm-up (a quarter of the run) to the last.
fn growth(values: &[f64]) -> Option<f64> {
    let warm = *values.get(values.len() / 4)?;
    let last = *values.last()?;
    (warm > 0.0).then(|| 100.0 * (last - warm) / warm)
}

fn curve(values: &[f64], precision: usize) -> String {
    values
        .iter()
        .map(|v| format!("{v:.precision$}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn report(o: &Options, curves: &[(String, Vec<Sample>, Vec<String>)]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{SECTION_START}\n## Soak\n");
    let _ = writeln!(
        s,
        "Written by `cargo xtask soak --seconds {} --every {}` (rtrace {}): each mode of the release build traced the whole machine for {} s beside a churn of `/bin/true` from a shell loop, threads that come and go four at a time, and an 8 MiB file written through a shared mapping then replaced (a linker's output), sampled every {} s. Growth: from the sample at a quarter of the run (after warm-up) to the last.\n",
        o.seconds,
        o.every,
        git_head(&workspace_root()),
        o.seconds,
        o.every
    );
    let _ = writeln!(
        s,
        "| mode | RSS MiB over time | open fds over time | BPF hash-map entries over time | growth RSS / fds / entries | rtrace said |\n|---|---|---|---|---|---|"
    );
    for (mode, samples, said) in curves {
        let rss: Vec<f64> = samples.iter().map(|x| x.rss_kib as f64 / 1024.0).collect();
        let fds: Vec<f64> = samples.iter().map(|x| x.fds as f64).collect();
        let maps: Vec<f64> = samples.iter().map(|x| x.map_entries as f64).collect();
        let pct = |v: &[f64]| growth(v).map_or("—".into(), |g| format!("{g:+.0}%"));
        let _ = writeln!(
            s,
            "| `rtrace {mode}` | {} | {} | {} | {} / {} / {} | {} |",
            curve(&rss, 1),
            curve(&fds, 0),
            curve(&maps, 0),
            pct(&rss),
            pct(&fds),
            pct(&maps),
            if said.is_empty() {
                "—".to_string()
            } else {
                said.join("<br>").replace('|', "\\|")
            }
        );
    }
    let _ = writeln!(s, "\n{SECTION_END}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_from_after_warm_up() {
        assert_eq!(growth(&[1.0, 10.0, 10.0, 10.0, 10.0]), Some(0.0));
        assert_eq!(growth(&[1.0, 10.0, 12.0, 15.0]), Some(50.0));
        assert_eq!(growth(&[]), None);
    }
}
