//! `cargo xtask test --kernel <6.1|6.12|all>`: the root integration tests inside
//! Debian's own kernels, booted under QEMU with software emulation.
//!
//! Per kernel: apt (with a private configuration under target/kernels) finds and
//! downloads the newest image package of the series; an initramfs of static busybox
//! and the 9p modules boots it with the host's root shared read-only; /init runs the
//! prebuilt test executable in a chroot of that root and reports on the console.

mod artifact;
mod debversion;
mod initramfs;
mod kernel_fetch;
mod markers;
mod modules;
mod qemu;
mod tools;

use std::{
    fs,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

pub use artifact::test_executable;
pub use tools::{apt_install, ensure as ensure_tools, which};

/// The kernel series of the matrix (`--kernel all`).
pub const SERIES: [&str; 2] = ["6.1", "6.12"];

/// Where `--kernel` runs the tests.
#[derive(Debug, PartialEq)]
pub enum Kernels {
    /// On the running kernel, as `cargo xtask test` always did.
    Native,
    /// In VMs with these kernel series.
    Series(Vec<&'static str>),
}

impl Kernels {
    pub fn parse(s: &str) -> Result<Kernels> {
        match s {
            "native" => Ok(Kernels::Native),
            "all" => Ok(Kernels::Series(SERIES.to_vec())),
            s => match SERIES.iter().find(|&&k| k == s) {
                Some(&k) => Ok(Kernels::Series(vec![k])),
                None => bail!(
                    "unknown kernel '{s}': use native, {}, or all",
                    SERIES.join(", ")
                ),
            },
        }
    }
}

/// The host's binaries the guest runs.
pub struct Binaries {
    pub rtrace: PathBuf,
    pub tests: PathBuf,
}

/// Until the guest has booted and mounted the host's root (about 4 s under TCG here).
const BOOT_LIMIT: Duration = Duration::from_secs(5 * 60);
/// Until the guest reports, from QEMU's start.
const TOTAL_LIMIT: Duration = Duration::from_secs(45 * 60);
/// One test, in the guest (the slowest takes about 20 s under TCG here).
const TEST_LIMIT: Duration = Duration::from_secs(3 * 60);

struct Row {
    series: &'static str,
    kernel: String,
    fetch: Duration,
    outcome: Result<qemu::Outcome>,
    log: PathBuf,
}

/// Runs the tests (with `filter`, libtest's name filters) in a VM per kernel series.
pub fn run_matrix(
    root: &Path,
    series: &[&'static str],
    bins: &Binaries,
    filter: &[String],
) -> Result<()> {
    let cache = root.join("target/kernels");
    // The guest reads these copies: a build running meanwhile cannot change them.
    let bin_dir = cache.join("bin");
    fs::create_dir_all(&bin_dir)?;
    let rtrace = bin_dir.join("rtrace");
    let tests = bin_dir.join("root-tests");
    for (from, to) in [(&bins.rtrace, &rtrace), (&bins.tests, &tests)] {
        let _ = fs::remove_file(to);
        fs::copy(from, to).with_context(|| format!("copy {}", from.display()))?;
    }

    let env = |k: &str, default: &str| std::env::var(k).unwrap_or_else(|_| default.to_string());
    let guest_env = vec![
        ("HOME".to_string(), env("HOME", "/root")),
        (
            "PATH".to_string(),
            env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        ),
        ("TERM".to_string(), "dumb".to_string()),
        ("TMPDIR".to_string(), initramfs::GUEST_TMPDIR.to_string()),
        ("RTRACE_BIN".to_string(), rtrace.display().to_string()),
        ("RTRACE_REQUIRE_BPF".to_string(), "1".to_string()),
    ];

    let mut rows = Vec::new();
    for &s in series {
        let dir = cache.join("run").join(s);
        fs::create_dir_all(&dir)?;
        let log = dir.join("console.log");
        let started = Instant::now();
        let kernel = match kernel_fetch::fetch(&cache, s) {
            Ok(k) => k,
            Err(e) => {
                rows.push(Row {
                    series: s,
                    kernel: "?".into(),
                    fetch: started.elapsed(),
                    outcome: Err(e.context("fetching the kernel")),
                    log,
                });
                continue;
            }
        };
        let fetch = started.elapsed();
        let name = format!("{} {}", kernel.package, kernel.version);
        let outcome = (|| {
            let dep = fs::read_to_string(kernel.modules.join("modules.dep"))?;
            let builtin =
                fs::read_to_string(kernel.modules.join("modules.builtin")).unwrap_or_default();
            let order = modules::load_order(
                &modules::parse_modules_dep(&dep),
                &builtin,
                &modules::WANTED,
            )?;
            let mut guest = initramfs::Guest {
                modules: Vec::new(),
                workdir: root.join("tests"),
                tests: tests.display().to_string(),
                filter: filter.to_vec(),
                test_limit_secs: TEST_LIMIT.as_secs(),
                env: guest_env.clone(),
            };
            let initrd = initramfs::build(&dir, &kernel.modules, &order, &mut guest)?;
            eprintln!("xtask: booting {name} (console log: {})", log.display());
            qemu::run(
                &kernel.vmlinuz,
                &initrd,
                &log,
                s,
                &qemu::Limits {
                    boot: BOOT_LIMIT,
                    total: TOTAL_LIMIT,
                },
            )
        })();
        if let Ok(o) = &outcome {
            let times: String = o
                .times
                .iter()
                .map(|(name, took)| format!("{:>8} {name}\n", secs(*took)))
                .collect();
            let _ = fs::write(dir.join("times.txt"), times);
        }
        if let Ok(o) = &outcome
            && let Some(booted) = &o.release
            && *booted != kernel.release
        {
            eprintln!(
                "xtask: warning: the guest runs {booted}, not {}",
                kernel.release
            );
        }
        rows.push(Row {
            series: s,
            kernel: name,
            fetch,
            outcome,
            log,
        });
    }

    let mut bad = Vec::new();
    eprintln!("\nxtask: kernel matrix");
    for r in &rows {
        eprintln!("  {}", summary(r));
        let ok = matches!(&r.outcome, Ok(o) if matches!(o.end, qemu::End::Reported(0)));
        if !ok {
            bad.push(r.series);
        }
    }
    if !bad.is_empty() {
        bail!(
            "the root tests did not pass on kernel {} (console logs under {})",
            bad.join(", "),
            cache.join("run").display()
        );
    }
    Ok(())
}

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

fn summary(r: &Row) -> String {
    let head = format!("{:<5} {}: fetch {}", r.series, r.kernel, secs(r.fetch));
    let o = match &r.outcome {
        Ok(o) => o,
        Err(e) => return format!("{head}; error: {e:#}"),
    };
    let boot = o.boot.map_or("-".into(), secs);
    let suite = o.suite.map_or("-".into(), secs);
    let end = match &o.end {
        qemu::End::Reported(0) => "tests passed".to_string(),
        qemu::End::Reported(n) => format!("{n} tests failed"),
        qemu::End::SetupFailed(w) => format!("guest set-up failed: {w}"),
        qemu::End::QemuExited(s) => format!(
            "QEMU ended ({}) before the guest reported",
            s.map_or("?".into(), |s| s.to_string())
        ),
        qemu::End::TimedOut(limit) => {
            format!(
                "no report from the guest within {}; QEMU killed",
                secs(*limit)
            )
        }
    };
    let mut s = format!(
        "{head}, boot {boot}, tests {suite}: {end}; {} passed, {} failed",
        o.passed.len(),
        o.failed.len()
    );
    for t in &o.kernel_trouble {
        s.push_str(&format!("\n        KERNEL {t}"));
    }
    for f in &o.failed {
        s.push_str(&format!("\n        FAILED {f}"));
    }
    s.push_str(&format!(
        "\n        log: {} (time per test: times.txt beside it)",
        r.log.display()
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_choices() {
        assert_eq!(Kernels::parse("native").unwrap(), Kernels::Native);
        assert_eq!(
            Kernels::parse("all").unwrap(),
            Kernels::Series(vec!["6.1", "6.12"])
        );
        assert_eq!(
            Kernels::parse("6.12").unwrap(),
            Kernels::Series(vec!["6.12"])
        );
        assert!(Kernels::parse("5.10").is_err());
    }
}
