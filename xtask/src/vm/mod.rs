//! `cargo xtask test --kernel <6.1|6.12|arm64|all>`: the root integration tests inside
//! Debian's own kernels, booted under QEMU with software emulation.
//!
//! Per kernel: apt (with a private configuration under target/kernels) finds and
//! downloads the newest image package of the series; an initramfs of static busybox
//! and the 9p modules boots it with a root shared read-only (the host's for x86_64, a
//! Debian arm64 root made under target/kernels for arm64); /init runs the prebuilt test
//! executable in a chroot of that root and reports on the console.

pub mod arch;
mod artifact;
mod debversion;
mod initramfs;
mod kernel_fetch;
mod markers;
mod modules;
mod qemu;
mod rootfs;
mod tools;

use std::{
    fs,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

use arch::{Arch, Root};
pub use artifact::test_executable;
pub use tools::{apt_install, ensure as ensure_tools, which};

/// One VM of the matrix: a kernel series on an architecture.
#[derive(Debug, PartialEq)]
pub struct Target {
    /// What `--kernel` calls it.
    pub name: &'static str,
    /// Debian's kernel series (`linux-image-<series>.*`).
    pub series: &'static str,
    pub arch: &'static Arch,
    /// Whether this kernel attaches BPF programs to kernel functions (fentry): the
    /// root tests check that `-e` runs there, or on the events where it cannot
    /// (`RTRACE_TEST_FUNCTIONS`). Debian's amd64 kernels have ftrace's direct calls;
    /// arm64 gained them in Linux 6.4.
    pub functions: bool,
}

/// The matrix (`--kernel all`), in the order it runs.
pub const TARGETS: [Target; 3] = [
    Target {
        name: "6.1",
        series: "6.1",
        arch: &arch::X86_64,
        functions: true,
    },
    Target {
        name: "6.12",
        series: "6.12",
        arch: &arch::X86_64,
        functions: true,
    },
    Target {
        name: "arm64",
        series: "6.1",
        arch: &arch::ARM64,
        functions: false,
    },
];

/// The root tests run on arm64 when no filter is given: a subset, chosen for what
/// differs on arm64: registers and arguments, the syscall table and its names (the
/// generic table: no open, stat, access, poll or vfork), exec, the pid maps' upkeep at
/// fork and exit, a leader's exit and a non-leader's exec, the task name loaded from
/// the task, one ring per CPU, fd paths, the summary, page faults, call chains and
/// tracepoint events, and what arm64 does otherwise (vfork as a clone, rt_sigreturn's
/// frame, the legacy path calls, event names, the arm32 program).
/// The whole suite passes too, but takes about 8.5 minutes under arm64 emulation on CI's
/// two cores (the x86_64 kernels about 17 each, side by side); this takes about 2.5.
pub const ARM64_SUBSET: [&str; 61] = [
    "command::traces_a_command_with_its_syscalls_and_nothing_of_rtrace",
    "command::children_of_the_command_are_followed",
    "command::same_syscalls_as_strace_for_ls",
    "command::exit_status_is_the_commands",
    "command::a_blocked_call_is_shown_unfinished_then_continued",
    "command::e_runs_on_the_chosen_calls_own_events_and_follows_children",
    "decode::a_32_bit_program_is_decoded_with_its_own_table",
    "decode::a_path_on_a_page_never_touched_before_the_call_still_shows",
    "decode::event_selection_keeps_exactly_the_chosen_calls",
    "decode::perfs_open_filename_check",
    "decode::arguments_are_shown_as_their_call_uses_them",
    "decode::what_a_call_writes_is_shown_when_it_succeeded",
    "decode::addresses_limits_and_names_the_kernel_wrote",
    "decode::prctl_timers_file_systems_and_clone3_show_their_values",
    "decode::an_unfinished_call_shows_what_it_read",
    "decode::poll_shows_what_was_asked_and_what_was_answered",
    "decode::failed_and_successful_execs_show_path_and_argv",
    "decode::envp_shows_the_environment_the_program_received",
    "decode::an_exec_forgets_the_close_on_exec_fds",
    "decode::fd_paths_are_never_read_from_the_future",
    "decode::fds_closed_without_close_or_reused_by_a_pipe_keep_no_old_path",
    "decode::relative_opens_show_the_whole_path",
    "lifecycle::exited_children_leave_the_map_and_their_reused_pid_is_not_traced",
    "lifecycle::many_short_lived_children_all_leave_the_map",
    "lifecycle::a_system_wide_workload_shows_nothing_before_its_exec",
    "lifecycle::rtrace_ends_when_its_targets_have_exited",
    "targets::pid_follows_the_children_it_forks",
    "threads::threads_that_outlive_their_leader_stay_traced",
    "threads::an_exec_from_a_thread_keeps_the_process_traced",
    "threads::in_a_summary_a_thread_that_execs_joins_its_leaders_block",
    "threads::each_line_has_the_name_its_thread_had_then",
    "threads::at_vv_the_programs_say_which_thread_took_its_leaders_number",
    "threads::p_of_a_process_whose_leader_exited_is_traced_until_its_last_thread",
    "threads::p_of_a_thread_id_traces_its_whole_process",
    "threads::t_of_a_thread_that_execs_follows_it_and_ends",
    "threads::a_thread_moving_between_cpus_has_its_calls_in_order",
    "summary::counts_equal_strace_c_for_a_forking_program",
    "summary::errno_summary_names_the_errors",
    "summary::json_mode_prints_only_json_with_the_summary",
    "faults::faults_name_the_code_and_the_memory_as_perf_does",
    "faults::the_summary_counts_the_faults_the_lines_show",
    "callchains::a_syscalls_frames_are_named_below_its_line",
    "callchains::a_page_faults_frames_are_its_code",
    "events::events_are_printed_in_perfs_shape",
    "events::a_commands_events_start_with_its_exec",
    "events::globs_mix_with_syscalls_and_filter_applies_to_the_events",
    "record::a_record_replays_as_the_live_trace",
    "record::a_replay_shows_unfinished_calls_only_where_the_live_trace_does",
    "decode::a_vfork_parent_is_unfinished_while_its_child_runs",
    "decode::a_vfork_child_has_its_parents_fds_and_directory_before_the_parent_returns",
    "decode::a_copys_fds_and_ficlone_are_named",
    "decode::a_clone_with_clone_vfork_is_unfinished_while_its_child_runs",
    "decode::rt_sigreturn_shows_the_mask_it_restores",
    "decode::values_strace_names_are_named",
    "decode::every_path_argument_is_shown",
    "decode::new_pipes_sockets_and_anonymous_fds_are_named",
    "decode::every_process_resolves_paths_the_same_way_however_short_it_lives",
    "trust::the_fd_limit_is_named_as_such",
    "events::syscall_entry_events_are_decoded_as_their_call",
    "decode::numbers_no_call_has_are_shown_as_numbers",
    "summary::hist_counts_every_call_in_its_bucket",
];

/// libtest's arguments for the arm64 subset.
pub fn arm64_subset_filter() -> Vec<String> {
    let mut f: Vec<String> = ARM64_SUBSET.iter().map(|s| s.to_string()).collect();
    f.push("--exact".into());
    f
}

/// Where `--kernel` runs the tests.
#[derive(Debug, PartialEq)]
pub enum Kernels {
    /// On the running kernel, as `cargo xtask test` always did.
    Native,
    /// In these VMs.
    Vms(Vec<&'static Target>),
}

impl Kernels {
    pub fn parse(s: &str) -> Result<Kernels> {
        match s {
            "native" => Ok(Kernels::Native),
            "all" => Ok(Kernels::Vms(TARGETS.iter().collect())),
            s => match TARGETS.iter().find(|k| k.name == s) {
                Some(k) => Ok(Kernels::Vms(vec![k])),
                None => {
                    let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
                    bail!(
                        "unknown kernel '{s}': use native, {}, or all",
                        names.join(", ")
                    )
                }
            },
        }
    }
}

/// The binaries one architecture's guests run (built on the host).
pub struct Binaries {
    pub arch: &'static Arch,
    pub rtrace: PathBuf,
    pub tests: PathBuf,
    /// libtest's arguments choosing the tests.
    pub filter: Vec<String>,
    /// How many tests the filter names exactly (the arm64 subset): fewer run is a
    /// failure, so that a renamed test cannot drop out of the subset unseen.
    pub expected: Option<usize>,
    /// The 32-bit program the 32-bit decoding test runs, built on the host for a guest
    /// that cannot build one (its `Arch::compat_program`); the test finds it through
    /// `RTRACE_COMPAT_PROGRAM`.
    pub compat_program: Option<PathBuf>,
}

/// Until the guest has booted and mounted the host's root (about 4 s under TCG here).
const BOOT_LIMIT: Duration = Duration::from_secs(5 * 60);
/// Until the guest reports, from QEMU's start (6.1's whole suite took 42 minutes
/// beside 6.12's on a busy day of the 2-core CI host, 23 on a quiet one).
const TOTAL_LIMIT: Duration = Duration::from_secs(60 * 60);
/// One test, in the guest: a guard against a hang. The slowest,
/// `lifecycle::a_p_session_never_ends_while_a_child_is_on_its_way_in` (ten rtrace
/// sessions), took 96 s beside 6.12 on a quiet day, and on a busy one passed 3
/// minutes beside it and took 185 s alone.
const TEST_LIMIT: Duration = Duration::from_secs(8 * 60);

struct Row {
    series: &'static str,
    expected: Option<usize>,
    kernel: String,
    fetch: Duration,
    outcome: Result<qemu::Outcome>,
    log: PathBuf,
}

/// The guest's view of one architecture's binaries: the root shared with it, the
/// test executable's and rtrace's paths there, and the tests' working directory.
struct Shared {
    root: PathBuf,
    tests: PathBuf,
    workdir: PathBuf,
    env: Vec<(String, String)>,
}

/// Copies `bins` where the guest reads them (a build running meanwhile cannot change
/// them): under target/kernels for a guest on the host's root, into the Debian root
/// for one with its own.
fn share(root: &Path, cache: &Path, bins: &Binaries) -> Result<Shared> {
    let copy = |dir: &Path| -> Result<(PathBuf, PathBuf)> {
        fs::create_dir_all(dir)?;
        let rtrace = dir.join("rtrace");
        let tests = dir.join("root-tests");
        for (from, to) in [(&bins.rtrace, &rtrace), (&bins.tests, &tests)] {
            let _ = fs::remove_file(to);
            fs::copy(from, to).with_context(|| format!("copy {}", from.display()))?;
        }
        Ok((rtrace, tests))
    };
    let env = |k: &str, default: &str| std::env::var(k).unwrap_or_else(|_| default.to_string());
    let base_env = |home: String, path: String, rtrace: &Path| {
        vec![
            ("HOME".to_string(), home),
            ("PATH".to_string(), path),
            ("TERM".to_string(), "dumb".to_string()),
            ("TMPDIR".to_string(), initramfs::GUEST_TMPDIR.to_string()),
            ("RTRACE_BIN".to_string(), rtrace.display().to_string()),
            ("RTRACE_REQUIRE_BPF".to_string(), "1".to_string()),
        ]
    };
    match bins.arch.root {
        Root::Host => {
            let (rtrace, tests) = copy(&cache.join("bin"))?;
            Ok(Shared {
                root: "/".into(),
                env: base_env(
                    env("HOME", "/root"),
                    env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
                    &rtrace,
                ),
                tests,
                workdir: root.join("tests"),
            })
        }
        Root::Debian => {
            let fs_root = rootfs::ensure(cache, bins.arch)?;
            let inside = Path::new("/opt/rtrace");
            copy(&fs_root.join("opt/rtrace"))?;
            let rtrace = inside.join("rtrace");
            let mut env = base_env(
                "/root".into(),
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
                &rtrace,
            );
            if let Some(program) = &bins.compat_program {
                let name = "compat-program";
                let to = fs_root.join("opt/rtrace").join(name);
                let _ = fs::remove_file(&to);
                fs::copy(program, &to).with_context(|| format!("copy {}", program.display()))?;
                let guest = inside.join(name).display().to_string();
                env.push(("RTRACE_COMPAT_PROGRAM".to_string(), guest));
            }
            Ok(Shared {
                root: fs_root,
                env,
                tests: inside.join("root-tests"),
                workdir: inside.into(),
            })
        }
    }
}

/// A guest ready to boot: its kernel, initramfs and shared root.
struct Job {
    target: &'static Target,
    expected: Option<usize>,
    dir: PathBuf,
    log: PathBuf,
    /// The kernel's package and version, as the matrix names it.
    name: String,
    release: String,
    vmlinuz: PathBuf,
    initrd: PathBuf,
    root: PathBuf,
}

/// Fetches `t`'s kernel, shares its architecture's binaries and builds its initramfs;
/// on failure, the console log's path with the error (for the matrix's row).
fn prepare(
    root: &Path,
    cache: &Path,
    t: &'static Target,
    bins: &[Binaries],
) -> std::result::Result<Job, (PathBuf, anyhow::Error)> {
    let dir = cache.join("run").join(t.name);
    let log = dir.join("console.log");
    let job = (|| {
        fs::create_dir_all(&dir)?;
        let b = bins
            .iter()
            .find(|b| b.arch == t.arch)
            .with_context(|| format!("no binaries built for {}", t.arch.name))?;
        let shared = share(root, cache, b)?;
        let kernel = kernel_fetch::fetch(cache, t.series, t.arch)?;
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
            workdir: shared.workdir.clone(),
            tests: shared.tests.display().to_string(),
            filter: b.filter.clone(),
            test_limit_secs: TEST_LIMIT.as_secs(),
            env: shared.env.clone(),
        };
        let functions = if t.functions { "1" } else { "0" };
        guest
            .env
            .push(("RTRACE_TEST_FUNCTIONS".to_string(), functions.to_string()));
        let busybox = tools::busybox(cache, t.arch)?;
        let initrd = initramfs::build(&dir, &busybox, &kernel.modules, &order, &mut guest)?;
        Ok::<_, anyhow::Error>(Job {
            target: t,
            expected: b.expected,
            dir: dir.clone(),
            log: log.clone(),
            name: format!("{} {}", kernel.package, kernel.version),
            release: kernel.release,
            vmlinuz: kernel.vmlinuz,
            initrd,
            root: shared.root,
        })
    })();
    job.map_err(|e| (log, e))
}

impl Job {
    /// Boots the guest and reads its report; `fetch` is how long its set-up took.
    fn run(self, fetch: Duration) -> Row {
        let started = Instant::now();
        let t = self.target;
        eprintln!(
            "xtask: booting {} (console log: {})",
            self.name,
            self.log.display()
        );
        let outcome = qemu::run(
            t.arch,
            &self.vmlinuz,
            &self.initrd,
            &self.root,
            &self.log,
            t.name,
            &qemu::Limits {
                boot: BOOT_LIMIT,
                total: TOTAL_LIMIT,
            },
        );
        if let Ok(o) = &outcome {
            let times: String = o
                .times
                .iter()
                .map(|(name, took)| format!("{:>8} {name}\n", secs(*took)))
                .collect();
            let _ = fs::write(self.dir.join("times.txt"), times);
        }
        if let Ok(o) = &outcome
            && let Some(booted) = &o.release
            && *booted != self.release
        {
            eprintln!(
                "xtask: warning: the guest runs {booted}, not {}",
                self.release
            );
        }
        eprintln!(
            "xtask: {} took {} in all ({} to set up, {} in QEMU)",
            t.name,
            secs(fetch + started.elapsed()),
            secs(fetch),
            secs(started.elapsed())
        );
        Row {
            series: t.name,
            expected: self.expected,
            kernel: self.name,
            fetch,
            outcome,
            log: self.log,
        }
    }
}

/// Runs the tests in a VM per target, each with its architecture's binaries. The guests
/// are set up one after the other (apt's cache and the binaries shared with them are
/// the same for several), then run side by side in `TARGETS`' order, as many at once as
/// the host has cores (each emulates its vCPUs on one host thread, see qemu.rs): on CI's
/// two cores 6.1 and 6.12 run together and arm64 takes the first core they free.
pub fn run_matrix(root: &Path, targets: &[&'static Target], bins: &[Binaries]) -> Result<()> {
    let cache = root.join("target/kernels");
    let mut rows: Vec<Option<Row>> = Vec::new();
    let mut jobs = Vec::new();
    for t in targets {
        let started = Instant::now();
        match prepare(root, &cache, t, bins) {
            Ok(job) => {
                jobs.push((rows.len(), job, started.elapsed()));
                rows.push(None);
            }
            Err((log, e)) => rows.push(Some(Row {
                series: t.name,
                expected: None,
                kernel: "?".into(),
                fetch: started.elapsed(),
                outcome: Err(e.context("preparing the guest")),
                log,
            })),
        }
    }
    let at_once = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, jobs.len().max(1));
    let queue = std::sync::Mutex::new(jobs.into_iter());
    let done = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..at_once {
            scope.spawn(|| {
                loop {
                    let Some((i, job, fetch)) = queue.lock().map_or(None, |mut q| q.next()) else {
                        return;
                    };
                    let row = job.run(fetch);
                    if let Ok(mut d) = done.lock() {
                        d.push((i, row));
                    }
                }
            });
        }
    });
    for (i, row) in done.into_inner().unwrap_or_default() {
        rows[i] = Some(row);
    }
    // A guest whose result went missing is a failure, never a row left out.
    let rows: Vec<Row> = rows
        .into_iter()
        .zip(targets)
        .map(|(row, t)| {
            row.unwrap_or_else(|| Row {
                series: t.name,
                expected: None,
                kernel: "?".into(),
                fetch: Duration::ZERO,
                outcome: Err(anyhow::anyhow!("no result came back from its VM")),
                log: cache.join("run").join(t.name).join("console.log"),
            })
        })
        .collect();

    let mut bad = Vec::new();
    eprintln!("\nxtask: kernel matrix");
    for r in &rows {
        eprintln!("  {}", summary(r));
        let mut ok = matches!(&r.outcome, Ok(o) if matches!(o.end, qemu::End::Reported(0)));
        if let (Ok(o), Some(n)) = (&r.outcome, r.expected) {
            let ran = o.passed.len() + o.failed.len();
            if ran != n {
                eprintln!("        but {ran} tests ran of the {n} the subset names");
                ok = false;
            }
        }
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
    let head = format!("{:<5} {}: set-up {}", r.series, r.kernel, secs(r.fetch));
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
            Kernels::Vms(TARGETS.iter().collect())
        );
        assert_eq!(
            Kernels::parse("6.12").unwrap(),
            Kernels::Vms(vec![&TARGETS[1]])
        );
        let Kernels::Vms(arm) = Kernels::parse("arm64").unwrap() else {
            panic!()
        };
        assert_eq!((arm[0].series, arm[0].arch.name), ("6.1", "arm64"));
        assert!(Kernels::parse("5.10").is_err());
    }
}
