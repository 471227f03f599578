//! One tracing session, start to end:
//! load → attach fork/exit upkeep → fork the held workload → write pids_filtered and the
//! targets → prune both maps → attach the syscall programs → release the workload →
//! read the ring buffer in batches until the workload exits, the targets are gone or a
//! signal comes → detach the programs that write records → read what the ring still
//! holds.

use std::{
    io::{self, Write},
    os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd},
    time::{Duration, Instant},
};

use aya::{
    Ebpf,
    maps::{Array, MapData, PerCpuArray, RingBuf},
};
use aya_log::EbpfLogger;
use thiserror::Error;
use tokio::{
    io::{Interest, unix::AsyncFd},
    time::MissedTickBehavior,
};
use trace_common::maps::{
    CLASS_EXEC, COUNTER_DROPPED, COUNTER_LOST_HANDOFF, COUNTER_LOST_TASKS, COUNTER_LOST_UNSEEN,
    COUNTER_STATS_LOST, COUNTERS, EVENTS, FILTER_ALWAYS, FILTER_UNTIL_EXEC, FORK_HANDOFF, HANDOFFS,
    HANDOFFS_GIVEN, HANDOFFS_SETTLED, PIDS_FILTERED, PIDS_TO_TRACE, TRACE_ARM_ON_EXEC, TRACE_ON,
};

use crate::{
    config::{Config, Targets},
    decode::{
        Catalog, FormatSource, classes,
        fd_table::{self, FdTable, ProcSeed},
        syscall_table,
    },
    kernel::{
        bpf_log::{self, StderrLines},
        btf::{Btf, BtfError, GroupLiveOffsets, LifecycleOffsets},
        features::{self, GroupExit, Missing},
        loader::{self, LoadError, Settings, SyscallHooks},
        map_ops::PidMapFd,
        pidns::PidNs,
        privilege::{self, NotPrivileged},
        stats_maps,
        tracefs::{Tracefs, TracefsError},
    },
    output::{
        self, Sink,
        line::{RED, RESET},
        printer::Printer,
        summary::SummaryOptions,
    },
    pids::{
        proc_stat::{Liveness, process_liveness, task_liveness},
        prune::prune,
        targets,
    },
    signals::Stops,
    workload::{Workload, WorkloadError},
};

#[derive(Debug, Error)]
pub enum SessionError {
    #[error(transparent)]
    Privilege(#[from] NotPrivileged),
    #[error(transparent)]
    Tracefs(#[from] TracefsError),
    #[error(transparent)]
    Events(#[from] crate::events::EventsError),
    #[error(transparent)]
    Cgroup(#[from] crate::kernel::cgroup::CgroupError),
    #[error(transparent)]
    Kernel(#[from] Missing),
    #[error("reading the kernel's BTF: {0}")]
    Btf(#[from] BtfError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    #[error(
        "the map {name} is full: it holds {entries} tasks — raise RTRACE_PID_MAP_ENTRIES (e.g. RTRACE_PID_MAP_ENTRIES={suggest})"
    )]
    MapFull {
        name: &'static str,
        entries: u32,
        suggest: u32,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
}

impl SessionError {
    pub fn exit_code(&self) -> i32 {
        match self {
            SessionError::Workload(w) => w.exit_code(),
            _ => 1,
        }
    }
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> SessionError {
    let what = what.into();
    move |source| SessionError::Io { what, source }
}

/// Runs the session; returns rtrace's exit status.
pub fn run(cfg: Config) -> Result<i32, SessionError> {
    privilege::check()?;
    let tracefs = Tracefs::find_or_mount()?;
    // The raw tracepoint passes `group_dead` where its format has the field.
    let exit_field = tracefs
        .field_offset("sched", "sched_process_exit", "group_dead")?
        .is_some();
    let tp_events = if cfg.events.is_empty() && cfg.event_filter.is_none() {
        Vec::new()
    } else {
        crate::events::resolve(
            &cfg.events,
            cfg.event_filter.as_deref(),
            &tracefs.available_events()?,
            &mut |c, n| tracefs.event_format(c, n),
        )?
    };
    let ns = PidNs::current()
        .map_err(io::Error::other)
        .map_err(io_err("reading /proc/self/ns/pid"))?;
    features::require(!ns.is_initial())?;
    let btf = Btf::from_sys()?;
    let lifecycle = LifecycleOffsets::find(&btf)?;
    let group_exit = features::choose_group_exit(
        exit_field,
        || GroupLiveOffsets::find(&btf).ok(),
        cfg.group_exit.as_deref(),
    );
    drop(btf);
    if cfg.verbose > 0 || group_exit == GroupExit::Leader {
        say!(
            "rtrace: a process ends with its last thread, told by {}",
            group_exit.describe()
        );
    }

    let (trace_all, filter_uid, argv) = match &cfg.targets {
        Targets::Workload(argv) => (false, None, Some(argv)),
        Targets::Pids(_) | Targets::Tids(_) => (false, None, None),
        Targets::System { uid, workload } => (true, *uid, workload.as_ref()),
    };
    let key_by_tid = match cfg.targets {
        Targets::Tids(_) => true,
        Targets::Pids(_) | Targets::Workload(_) => !cfg.inherit,
        Targets::System { .. } => false,
    };
    let settings = Settings {
        trace_all,
        filter_uid,
        inherit: cfg.inherit,
        key_by_tid,
        pidns: (!ns.is_initial()).then_some((ns.dev, ns.ino)),
        lifecycle,
        group_exit,
        ring_bytes: cfg.ring_bytes,
        summary_flags: summary_flags(cfg.summary.as_ref()),
        selective: cfg.selection.is_some(),
        pid_map_entries: cfg.pid_map_entries,
        summary_entries: if cfg.summary.is_some() {
            cfg.summary_entries
        } else {
            1
        },
        cpu_filter: cfg.cpus.is_some(),
        verbose: cfg.verbose,
        exec_envp: cfg.envp,
        hooks: syscall_hooks(&cfg, ns.is_initial(), &tracefs),
        cgroup: cfg
            .cgroup
            .as_deref()
            .map(crate::kernel::cgroup::resolve)
            .transpose()?,
        events: tp_events.iter().map(|e| u64::from(e.id)).collect(),
        faults: cfg.faults,
        call_graph: cfg.call_graph.map_or(0, |g| {
            use trace_common::record::{STACK_KERNEL_SYSCALLS, STACK_USER};
            STACK_USER
                | if g.kernel_syscalls {
                    STACK_KERNEL_SYSCALLS
                } else {
                    0
                }
        }),
    };
    // rtrace record: what decoding the records needs, read while tracefs is at hand.
    let record_formats = cfg.record.then(|| {
        let saved: Vec<_> = tp_events
            .iter()
            .map(|e| crate::record::file::SavedEvent {
                category: e.category.clone(),
                name: e.name.clone(),
                format: tracefs
                    .event_format(&e.category, &e.name)
                    .unwrap_or_default(),
            })
            .collect();
        (crate::record::syscall_formats(&mut tracefs.clone()), saved)
    });
    let event_table = crate::events::EventTable::new(tp_events, ns.is_initial());
    if cfg.verbose > 0 {
        say!("rtrace: {settings:?}");
        if let SyscallHooks::Events(events) = &settings.hooks {
            say!(
                "rtrace: the syscall programs run on the chosen calls' own events ({} of them), no other call runs them; a 32-bit task's calls have none",
                events.len()
            );
        }
    }
    let mut out = output::sink(cfg.output.as_deref()).map_err(io_err(format!(
        "opening {:?}",
        cfg.output.as_deref().unwrap_or("".as_ref())
    )))?;

    // Start-up takes a while (seconds in an emulated kernel): a stop asked for meanwhile
    // ends it between its steps, before the command runs.
    let ended_by = |sig: i32, workload: bool| if workload { 128 + sig } else { 0 };
    if let Some(sig) = crate::signals::early() {
        return Ok(ended_by(sig, argv.is_some()));
    }
    // The command is forked first, as perf does, while rtrace holds no BPF object (and
    // the child puts the stopping signals back as rtrace found them).
    let mut workload = argv
        .map(|a| Workload::spawn_held(a, cfg.path.as_deref()))
        .transpose()?;
    let mut bpf = loader::load(&settings)?;
    if let Some(sig) = crate::signals::early() {
        // Dropping the held command makes it exit without running.
        return Ok(ended_by(sig, workload.is_some()));
    }
    let bpf_log = bpf_log::open(&mut bpf, cfg.verbose).map_err(|e| SessionError::Io {
        what: "opening the programs' log".into(),
        source: io::Error::other(e),
    })?;
    // The event loop's runtime: one thread, and only now that the command is forked.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(io_err("starting the event loop"))?;
    let mut stops = {
        let _entered = runtime.enter();
        Stops::install().map_err(io_err("installing signal handlers"))?
    };
    // Tracepoint events between the exec and the exit programs (see attach_lifecycle).
    // Nothing is a target yet, so they send nothing until the maps are written.
    let mut event_links = loader::EventLinks::default();
    loader::attach_lifecycle(&mut bpf, &["sched_process_exec"])?;
    loader::attach_events(&mut bpf, &settings.events, &mut event_links)?;
    loader::attach_lifecycle(&mut bpf, &["sched_process_fork", "sched_process_exit"])?;
    write_pid_maps(
        &bpf,
        &cfg,
        workload.as_ref(),
        key_by_tid,
        settings.pid_map_entries,
    )?;
    let classes = classes::syscall_classes(cfg.selection.as_deref(), shows_unfinished(&cfg));
    loader::write_classes(&mut bpf, &classes)?;
    if let Some(cpus) = &cfg.cpus {
        loader::write_cpus(&mut bpf, cpus)?;
    }
    let mut catalog = Catalog::new(tracefs);
    if settings.summary_flags & trace_common::stats::SUMMARY_RECORDS != 0 {
        // Only what can be recorded needs a plan: the selection, and execve, which
        // starts a held workload whatever -e says.
        match &cfg.selection {
            Some(nrs) => {
                let exec = classes
                    .iter()
                    .filter(|(_, c)| c & CLASS_EXEC != 0)
                    .map(|(i, _)| *i);
                catalog.preload(nrs.iter().copied().chain(exec));
            }
            None => catalog.preload(0..syscall_table::MAX_NR),
        }
        loader::write_aug_plans(
            &mut bpf,
            catalog
                .described()
                .map(|(nr, i)| (nr, i.plan_with_limit(cfg.string_limit))),
        )?;
    }
    // -F: the mappings that name the faults are kept from before the first fault
    // (and the command's exec) on.
    let symbols = if (cfg.faults.any() || cfg.call_graph.is_some())
        && settings.summary_flags & trace_common::stats::SUMMARY_RECORDS != 0
    {
        let cpus = aya::util::online_cpus()
            .map_err(|(_, e)| e)
            .map_err(io_err("listing the online CPUs"))?;
        Some(
            crate::symbols::resolve::Symbols::start(
                &cpus,
                processes_to_seed(&cfg, workload.as_ref()),
                matches!(cfg.targets, Targets::System { .. }),
            )
            .map_err(io_err("opening the memory-map records (perf_event_open)"))?,
        )
    } else {
        None
    };
    // -D: the syscall programs are attached once the delay has passed.
    if cfg.delay.is_none() {
        loader::attach_syscalls(&mut bpf, &settings.hooks, &mut event_links)?;
        loader::attach_faults(&mut bpf, cfg.faults, cfg.cpus.as_deref())?;
    }
    // Where each target is, read once tracing has begun (the held command has not run).
    let proc_seeds = ProcSeed::read(
        processes_to_seed(&cfg, workload.as_ref()),
        workload.as_ref().map(|w| w.pid),
    );
    if let Some((formats, events)) = record_formats {
        let header = crate::record::file::Header {
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
                .to_string(),
            machine: std::env::consts::ARCH.to_string(),
            selection: cfg.selection.clone(),
            formats,
            events,
            seeds: proc_seeds
                .iter()
                .map(|s| crate::record::file::SavedSeed::from_seed(s, fd_table::inherited_fds()))
                .collect(),
            names_pids: ns.is_initial(),
        };
        crate::record::file::write_header(&mut out, &header)
            .map_err(io_err("writing the record's header"))?;
    }
    if let (Some(sig), Some(_)) = (runtime.block_on(stops.requested()), &workload) {
        // Asked to stop before the command ran: it never runs (dropping it makes the
        // held child exit), and rtrace ends as the signal asked.
        return Ok(128 + sig);
    }
    let pidfd = match &mut workload {
        Some(w) => {
            let fd = pidfd_open(w.pid).map_err(io_err("pidfd_open on the workload"))?;
            if let Err(e) = w.release() {
                reap(w.pid);
                return Err(e.into());
            }
            Some(fd)
        }
        None => None,
    };
    // Events before this time are not shown (-D).
    let mut shown_from_ns = 0;
    if let Some(delay) = cfg.delay {
        // A stop during the delay ends it: nothing is attached, and the event loop
        // that follows relays the signal to the command and ends the session.
        let stopped = runtime.block_on(async {
            tokio::select! {
                _ = tokio::time::sleep(delay) => false,
                _ = async {
                    if stops.requested().await.is_none() {
                        stops.next().await;
                    }
                } => true,
            }
        });
        if !stopped {
            loader::attach_syscalls(&mut bpf, &settings.hooks, &mut event_links)?;
            loader::attach_faults(&mut bpf, cfg.faults, cfg.cpus.as_deref())?;
        }
        // The events attached before the delay show nothing from within it, however
        // it ended.
        shown_from_ns = fd_table::monotonic_ns();
    }
    if cfg.verbose > 0 {
        say!("rtrace: tracing started");
    }

    // A per-thread summary moves exited threads' numbers out of the kernel as it goes,
    // where /proc tells rtrace's own truth about them (see stats_maps::sweep_allowed).
    let mut thread_stats = match &cfg.summary {
        Some(s) if !s.total => Some(stats_maps::ThreadStats::open(&bpf)?),
        _ => None,
    };
    let sweep = ns.is_initial() && stats_maps::sweep_allowed();
    let (reader, exit_code) = runtime.block_on(event_loop(
        &mut bpf,
        &cfg,
        catalog,
        &mut out,
        pidfd.as_ref(),
        workload.as_ref(),
        proc_seeds,
        &mut stops,
        bpf_log,
        event_table,
        shown_from_ns,
        symbols,
        thread_stats.as_mut().filter(|_| sweep),
    ))?;
    // Nothing writes records from here on (and the summary's numbers no longer move):
    // what the ring holds is all that is left, a bounded final read.
    loader::detach_syscalls(&mut bpf, &mut event_links);
    let ended = reader.finish(&bpf, &cfg, &mut out)?;
    let exit_code = match (
        exit_code,
        runtime
            .block_on(stops.requested())
            .or_else(|| output_stop(&out)),
    ) {
        (Some(code), _) => code,
        (None, Some(sig)) if workload.is_some() => 128 + sig,
        _ => 0,
    };
    let mut folded_threads = 0;
    if let Some(summary) = &cfg.summary {
        let sections = match thread_stats {
            Some(t) => {
                let (sections, folded) = t.finish();
                folded_threads = folded;
                sections
            }
            None => stats_maps::total_sections(&bpf)?,
        };
        let mut text = String::new();
        let opts = SummaryOptions {
            max_rows: summary.max_rows,
            errno: summary.errno,
        };
        if cfg.json {
            output::summary::render_json(&mut text, sections, &opts);
        } else {
            output::summary::render(&mut text, sections, &opts);
        }
        let _ = out.write_all(text.as_bytes());
    }
    let _ = out.flush();
    if let Some(end) = failed_output(&out) {
        loader::detach_all(&mut bpf, &mut event_links);
        return end;
    }
    loader::detach_all(&mut bpf, &mut event_links);
    drop(bpf);
    if folded_threads > 0 {
        say!(
            "rtrace: the summary shows {folded_threads} threads together, in one section (\"{folded_threads} more threads, together\"): it keeps {} (thread, syscall) rows apart",
            stats_maps::KEPT_ROWS_MAX
        );
    }
    if ended.stats_lost > 0 {
        say!(
            "rtrace: {} syscalls are missing from the summary: its maps were full (they hold {} thread and syscall pairs; raise RTRACE_SUMMARY_ENTRIES)",
            ended.stats_lost,
            settings.summary_entries
        );
    }
    for (count, why) in [
        (
            ended.lost.full_map,
            format!(
                "the map {PIDS_TO_TRACE} was full (it holds {} tasks; raise RTRACE_PID_MAP_ENTRIES)",
                settings.pid_map_entries
            ),
        ),
        (
            ended.lost.full_handoff,
            format!(
                "the map {FORK_HANDOFF} of children on their way in was full (it holds {} tasks; raise RTRACE_PID_MAP_ENTRIES)",
                settings.pid_map_entries
            ),
        ),
        (
            ended.lost.unseen,
            "they run in a pid namespace that rtrace's own cannot see into (run rtrace in the host's pid namespace)".to_string(),
        ),
    ] {
        if count > 0 {
            say!("rtrace: {count} child tasks could not be traced: {why}");
        }
    }
    Ok(exit_code)
}

/// Unfinished entries belong to perf's text output without filters.
/// The most calls `-e` runs on their own events (see [`syscall_hooks`]).
const EVENTS_AT_MOST: usize = 32;

/// Where the syscall programs run: on the raw tracepoints, or, when asked
/// (`RTRACE_SYSCALL_HOOKS=events`), on the calls `-e` chose, each on its own events,
/// where that shows all the raw tracepoints would (rtrace in the initial pid namespace;
/// no exec chosen, whose reads need the registers, nor rt_sigreturn; every call with its
/// events; a 32-bit task's calls have none). Not by default: each chosen call's two perf
/// events take ~0.1 s to attach and release (the kernel serializes their grace
/// periods), which only a long or busy trace wins back.
fn syscall_hooks(cfg: &Config, initial_ns: bool, tracefs: &Tracefs) -> SyscallHooks {
    let Some(nrs) = &cfg.selection else {
        return SyscallHooks::Raw;
    };
    if !initial_ns || !cfg.syscall_hooks_on_events {
        return SyscallHooks::Raw;
    }
    let mut events = Vec::new();
    for &nr in nrs
        .iter()
        .filter(|&&nr| nr < trace_common::maps::COMPAT_BASE)
    {
        let Some(name) = syscall_table::name(nr) else {
            return SyscallHooks::Raw;
        };
        let event = syscall_table::event_name(name);
        let has = |side: &str| tracefs.has_event("syscalls", &format!("sys_{side}_{event}"));
        if classes::is_exec(name) || name == "rt_sigreturn" || !has("enter") || !has("exit") {
            return SyscallHooks::Raw;
        }
        events.push(event.to_string());
    }
    events.sort();
    events.dedup();
    // Each chosen call costs two perf events to attach and release: a long list is
    // cheaper on the raw tracepoints.
    if events.len() > EVENTS_AT_MOST {
        return SyscallHooks::Raw;
    }
    SyscallHooks::Events(events)
}

fn shows_unfinished(cfg: &Config) -> bool {
    !cfg.json
        && !cfg.failure_only
        && cfg.min_duration_ns.is_none()
        && cfg.summary.as_ref().is_none_or(|s| !s.only)
}

/// The processes whose working directory is read when tracing starts: the targets
/// (every process, system-wide).
fn processes_to_seed(cfg: &Config, workload: Option<&Workload>) -> Vec<u32> {
    let mut pids: Vec<u32> = match &cfg.targets {
        Targets::Workload(_) => Vec::new(),
        Targets::Pids(list) | Targets::Tids(list) => list
            .iter()
            .filter_map(|&p| targets::process_of(p))
            .collect(),
        Targets::System { .. } => procfs::process::all_processes()
            .map(|all| {
                all.filter_map(|p| u32::try_from(p.ok()?.pid).ok())
                    .collect()
            })
            .unwrap_or_default(),
    };
    pids.extend(workload.map(|w| w.pid));
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// fd paths are kept only when close is traced, so that a reused fd never shows a
/// stale path.
fn close_traced(cfg: &Config) -> bool {
    all_traced(cfg, &["close"])
}

/// Whether every call in `names` is traced.
fn all_traced(cfg: &Config, names: &[&str]) -> bool {
    fd_table::all_traced(cfg.selection.as_deref(), names)
}

fn summary_flags(summary: Option<&crate::config::Summary>) -> u32 {
    use trace_common::stats::{SUMMARY_AGGREGATE, SUMMARY_ERRNO, SUMMARY_RECORDS, SUMMARY_TOTAL};
    let Some(s) = summary else {
        return SUMMARY_RECORDS;
    };
    let mut flags = SUMMARY_AGGREGATE;
    if !s.only {
        flags |= SUMMARY_RECORDS;
    }
    if s.total {
        flags |= SUMMARY_TOTAL;
    }
    if s.errno {
        flags |= SUMMARY_ERRNO;
    }
    flags
}

fn write_pid_maps(
    bpf: &Ebpf,
    cfg: &Config,
    workload: Option<&Workload>,
    key_by_tid: bool,
    max_entries: u32,
) -> Result<(), SessionError> {
    let filtered = PidMapFd::new(loader::map_fd(bpf, PIDS_FILTERED)?);
    // pids_filtered is keyed by process: a thread's number stands for its process.
    let mut filter: Vec<u32> = cfg
        .filter_pids
        .iter()
        .map(|&p| targets::process_of(p).unwrap_or(p))
        .collect();
    // perf's rule: without --filter-pids, a system-wide trace leaves out the terminal
    // host rtrace runs under (sshd, gnome-terminal); with it, only what the user named
    // (and rtrace itself, always in the list).
    let user_filters = cfg.filter_pids.iter().any(|&p| p != std::process::id());
    if let (Targets::System { .. }, false) = (&cfg.targets, user_filters) {
        filter.extend(targets::ancestor_to_filter(&targets::ancestors()));
    }
    let mut filter: Vec<(u32, u32)> = filter.into_iter().map(|p| (p, FILTER_ALWAYS)).collect();
    if let (Targets::System { .. }, Some(w)) = (&cfg.targets, workload) {
        // Held before its exec, the workload runs rtrace's code: not worth showing.
        filter.push((w.pid, FILTER_UNTIL_EXEC));
    }
    for (pid, value) in filter {
        filtered
            .insert(pid, value)
            .map_err(map_write_err(PIDS_FILTERED, pid, max_entries))?;
    }
    let to_trace = PidMapFd::new(loader::map_fd(bpf, PIDS_TO_TRACE)?);
    let mut keys: Vec<(u32, u32)> = Vec::new();
    match &cfg.targets {
        Targets::Workload(_) => {
            if let Some(w) = workload {
                keys.push((w.pid, TRACE_ON | TRACE_ARM_ON_EXEC));
            }
        }
        Targets::Pids(pids) => {
            for &pid in pids {
                // As perf does, a thread's number given to -p traces its whole process.
                let process = targets::process_of(pid).unwrap_or(pid);
                if process != pid && cfg.verbose > 0 {
                    say!("rtrace: {pid} is a thread of process {process}: tracing the process");
                }
                if key_by_tid {
                    // A process that exits now simply has no threads left to list.
                    let tids = targets::threads_of(process).unwrap_or_default();
                    keys.extend(tids.into_iter().map(|t| (t, TRACE_ON)));
                } else {
                    keys.push((process, TRACE_ON));
                }
            }
        }
        Targets::Tids(tids) => keys.extend(tids.iter().map(|&t| (t, TRACE_ON))),
        Targets::System { .. } => {}
    }
    keys.sort_unstable();
    keys.dedup();
    for (key, flags) in keys {
        to_trace
            .insert(key, flags)
            .map_err(map_write_err(PIDS_TO_TRACE, key, max_entries))?;
    }

    // After the last write: drop what died before the exit program could see it. A
    // process key stays while any of its threads lives, a thread key while it does.
    let by_process = |pid| process_liveness(pid) == Liveness::Alive;
    let by_thread = |tid| task_liveness(tid) == Liveness::Alive;
    let to_trace_alive: &dyn Fn(u32) -> bool = if key_by_tid { &by_thread } else { &by_process };
    for (name, mut fd, alive) in [
        (PIDS_FILTERED, filtered, &by_process as &dyn Fn(u32) -> bool),
        (PIDS_TO_TRACE, to_trace, to_trace_alive),
    ] {
        let stats =
            prune(&mut fd, max_entries, alive).map_err(io_err(format!("pruning {name}")))?;
        if cfg.verbose > 0 {
            say!("rtrace: pruned {name}: {stats:?}");
        }
    }
    Ok(())
}

/// A failed write to a pid map; a full map (E2BIG) says which and what to do.
fn map_write_err(
    name: &'static str,
    key: u32,
    entries: u32,
) -> impl FnOnce(io::Error) -> SessionError {
    move |source| match source.raw_os_error() {
        Some(libc::E2BIG) => SessionError::MapFull {
            name,
            entries,
            suggest: entries.saturating_mul(2).max(8192),
        },
        _ => SessionError::Io {
            what: format!("writing {key} to {name}"),
            source,
        },
    }
}

fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor that we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Reaps the workload; its exit status the way a shell reports it.
fn reap(pid: u32) -> Option<i32> {
    let mut status = 0;
    // SAFETY: status is a valid out-parameter.
    let rc = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
    if rc != pid as libc::pid_t {
        return None;
    }
    if libc::WIFEXITED(status) {
        Some(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        Some(128 + libc::WTERMSIG(status))
    } else {
        None
    }
}

/// Children of targets that could not be followed, by cause.
struct LostTasks {
    full_map: u64,
    full_handoff: u64,
    unseen: u64,
}

struct Ended {
    lost: LostTasks,
    stats_lost: u64,
}

/// The records read in one go before the loop looks again at signals, the command's
/// exit and the output: a reader that falls behind (a debug build, a busy machine
/// under -a) would otherwise never leave its drain to see that tracing is over.
const BATCH_RECORDS: usize = 8192;

/// How often the reader drains when no wake-up came (the programs wake it only when
/// the ring fills past a quarter).
const DRAIN_EVERY: Duration = Duration::from_millis(100);
/// A failed output stops the session as a signal would, and the command rtrace started
/// is told as on SIGINT for a broken pipe (a reader that went away, like `| head`), as
/// on SIGTERM for any other error (a full disk).
fn output_stop(out: &Sink) -> Option<i32> {
    let e = out.failure()?;
    Some(if e.raw_os_error() == Some(libc::EPIPE) {
        libc::SIGINT
    } else {
        libc::SIGTERM
    })
}

/// How a session whose output failed ends: as SIGPIPE would have ended it for a broken
/// pipe (as perf's does), with the error otherwise.
fn failed_output(out: &Sink) -> Option<Result<i32, SessionError>> {
    let e = out.failure()?;
    Some(match e.raw_os_error() {
        Some(libc::EPIPE) => Ok(128 + libc::SIGPIPE),
        code => Err(SessionError::Io {
            what: "writing the trace".into(),
            source: io::Error::from_raw_os_error(code.unwrap_or(libc::EIO)),
        }),
    })
}

/// How long a command sent rtrace's stop signal has to end before rtrace ends anyway.
const STOP_GRACE: Duration = Duration::from_secs(2);

fn counter_sum(counters: &PerCpuArray<&MapData, u64>, slot: u32) -> u64 {
    counters.get(&slot, 0).map(|v| v.iter().sum()).unwrap_or(0)
}

/// Registers a descriptor with the event loop, for reading.
fn watch<T: AsRawFd>(inner: T) -> io::Result<AsyncFd<T>> {
    // SAFETY: every T given here owns or borrows its descriptor for at least as long as
    // the AsyncFd lives (the ring buffer's map, the pidfd that `run` holds), and always
    // answers the same one.
    unsafe { AsyncFd::register_with_interest(inner, Interest::READABLE) }.map_err(|e| e.into())
}

/// Resolves once the descriptor is readable, and takes the readiness (what made it so is
/// read next); never without one.
async fn readable<T: AsRawFd>(fd: Option<&mut AsyncFd<T>>) {
    match fd {
        Some(fd) => {
            if let Ok(mut ready) = fd.readable_mut().await {
                ready.clear_ready();
            }
        }
        None => std::future::pending().await,
    }
}

/// Resolves once the workload has exited (its pidfd turns readable); never without one.
async fn exited(pidfd: Option<&AsyncFd<std::os::fd::BorrowedFd<'_>>>) {
    match pidfd {
        Some(fd) => {
            let _ = fd.readable().await;
        }
        None => std::future::pending().await,
    }
}

#[allow(clippy::too_many_arguments)]
async fn event_loop<'c>(
    bpf: &mut Ebpf,
    cfg: &'c Config,
    catalog: Catalog<Tracefs>,
    out: &mut Sink,
    pidfd: Option<&OwnedFd>,
    workload: Option<&Workload>,
    proc_seeds: Vec<ProcSeed>,
    stops: &mut Stops,
    bpf_log: Option<EbpfLogger<StderrLines>>,
    event_table: crate::events::EventTable,
    shown_from_ns: u64,
    symbols: Option<crate::symbols::resolve::Symbols>,
    mut thread_stats: Option<&mut stats_maps::ThreadStats>,
) -> Result<(Reader<'c>, Option<i32>), SessionError> {
    let ring_map = bpf.take_map(EVENTS).ok_or(LoadError::MissingMap(EVENTS))?;
    let ring: RingBuf<MapData> = RingBuf::try_from(ring_map).map_err(|e| SessionError::Io {
        what: "opening the ring buffer".into(),
        source: io::Error::other(e),
    })?;
    let mut ring = watch(ring).map_err(io_err("watching the ring buffer"))?;
    let pidfd = pidfd
        .map(|fd| watch(fd.as_fd()))
        .transpose()
        .map_err(io_err("watching the workload's pidfd"))?;
    let mut bpf_log = bpf_log
        .map(watch)
        .transpose()
        .map_err(io_err("watching the programs' log"))?;
    let mut tick = tokio::time::interval(DRAIN_EVERY);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let counters: PerCpuArray<&MapData, u64> = PerCpuArray::try_from(
        bpf.map(COUNTERS).ok_or(LoadError::MissingMap(COUNTERS))?,
    )
    .map_err(|e| SessionError::Io {
        what: "opening the counters".into(),
        source: io::Error::other(e),
    })?;
    let to_trace = PidMapFd::new(loader::map_fd(bpf, PIDS_TO_TRACE)?);
    let follow_targets = matches!(cfg.targets, Targets::Pids(_) | Targets::Tids(_));
    let handoffs: Array<&MapData, u64> = Array::try_from(
        bpf.map(HANDOFFS).ok_or(LoadError::MissingMap(HANDOFFS))?,
    )
    .map_err(|e| SessionError::Io {
        what: "opening the fork hand-off counts".into(),
        source: io::Error::other(e),
    })?;

    let mut fds = FdTable::new(close_traced(cfg), all_traced(cfg, fd_table::CWD_CALLS));
    fds.seed_procs(proc_seeds);
    let mut printer = Printer::new(catalog, fds, cfg)
        .with_events(event_table)
        .shown_from(shown_from_ns);
    if cfg.record {
        printer = printer.recording();
    }
    if let Some(symbols) = symbols {
        printer = printer.with_locator(Box::new(symbols));
    }
    let mut reported_lost = 0u64;
    let mut exit_code = None;
    let mut stop_at: Option<Instant> = None;
    let mut behind = false;
    let mut swept_at = Instant::now();
    // SAFETY: sysconf has no preconditions.
    let ticks_per_sec = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100);

    loop {
        // Whichever comes first: a signal, the programs' wake-up (the ring is a quarter
        // full), the workload's exit, or the periodic drain. A reader still behind
        // reads on at once.
        if !behind {
            tokio::select! {
                biased;
                _ = stops.next() => {}
                _ = readable(Some(&mut ring)) => {}
                _ = exited(pidfd.as_ref()) => {}
                _ = readable(bpf_log.as_mut()) => {}
                _ = tick.tick() => {}
            }
        }
        if let Some(log) = &mut bpf_log {
            log.get_mut().flush();
        }

        let batch = drain(&mut printer, ring.get_mut(), out, BATCH_RECORDS);
        behind = batch == Drained::Behind;
        let mut done = batch == Drained::Stop;
        report_lost(&counters, &mut reported_lost, cfg, out);
        let _ = out.flush();
        if let Some(t) = thread_stats.as_deref_mut()
            && swept_at.elapsed() >= SWEEP_EVERY
        {
            t.sweep(|task| stats_maps::still_running(task, ticks_per_sec));
            swept_at = Instant::now();
        }

        // Looked at after every batch, not only when the pidfd woke the loop: a
        // reader that is behind does not wait for it.
        if let Some(w) = workload
            && exit_code.is_none()
            && let Some(code) = reap(w.pid)
        {
            exit_code = Some(code);
        }
        if exit_code.is_some() {
            done = true;
        }
        // Every target has exited, and no child of theirs is still on its way in
        // (forked, not yet returned to user space where it is adopted). The order of
        // the reads matters: see `trace_common::maps::HANDOFFS`.
        if follow_targets {
            let settled = handoffs.get(&HANDOFFS_SETTLED, 0).unwrap_or(0);
            if to_trace.is_empty().unwrap_or(false)
                && handoffs.get(&HANDOFFS_GIVEN, 0).unwrap_or(0) == settled
            {
                done = true;
            }
        }
        if let Some(sig) = stops.requested().await.or_else(|| output_stop(out)) {
            // The command rtrace started gets the signal too (a terminal's Ctrl-C has
            // sent it already; a `kill` or a CI runner's cancel sent it to rtrace
            // alone), once, and a moment to end; -p/-t/-a targets are never signalled.
            let deadline = *stop_at.get_or_insert_with(|| {
                if let (Some(w), None) = (workload, exit_code) {
                    // SAFETY: signalling our own child, not yet reaped.
                    unsafe { libc::kill(w.pid as libc::pid_t, sig) };
                }
                Instant::now() + STOP_GRACE
            });
            if workload.is_none() || exit_code.is_some() || Instant::now() >= deadline {
                done = true;
            }
        }
        if done {
            break;
        }
    }
    Ok((
        Reader {
            printer,
            ring,
            bpf_log,
            reported_lost,
        },
        exit_code,
    ))
}

/// How often a per-thread summary moves the numbers of exited threads out of the
/// kernel's maps: they then hold the live threads and those of the last second, not
/// every thread of the session.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How long a system-wide trace goes on reading once its end has come.
const FINAL_READ_SYSTEM_WIDE: Duration = Duration::from_millis(500);

/// What reads the ring, handed from the event loop to the final read once the
/// programs are detached.
struct Reader<'c> {
    printer: Printer<'c, Tracefs>,
    ring: AsyncFd<RingBuf<MapData>>,
    bpf_log: Option<AsyncFd<EbpfLogger<StderrLines>>>,
    reported_lost: u64,
}

impl Reader<'_> {
    /// Reads what the ring still holds (the programs are detached: it only shrinks,
    /// but for a program run already under way when its hook went, whose record may
    /// come after this read), shows what is still blocked as unfinished, and says what
    /// was lost.
    fn finish(mut self, bpf: &Ebpf, cfg: &Config, out: &mut Sink) -> Result<Ended, SessionError> {
        // A system-wide trace whose reader fell behind would spend seconds on other
        // processes' records after its command ended: it reads for a while, then
        // counts what it leaves, as a loss. A command's or -p's trace is read whole.
        let system_wide = matches!(cfg.targets, Targets::System { .. });
        if system_wide {
            let until = Instant::now() + FINAL_READ_SYSTEM_WIDE;
            let mut last = Drained::Behind;
            while Instant::now() < until && last == Drained::Behind {
                last = drain(&mut self.printer, self.ring.get_mut(), out, 1024);
            }
            let mut unread = 0u64;
            while self.ring.get_mut().next().is_some() {
                unread += 1;
            }
            // Past --max-events, or with the output gone, the rest is not wanted.
            if unread > 0 && last == Drained::Behind {
                say!(
                    "rtrace: {unread} records were left unread when tracing ended (the reader was behind the system-wide trace)"
                );
            }
        } else {
            drain(&mut self.printer, self.ring.get_mut(), out, usize::MAX);
        }
        if let Some(log) = &mut self.bpf_log {
            log.get_mut().flush();
        }
        // What is still blocked when tracing ends is shown as unfinished.
        self.printer.flush_pending(None, out);
        let counters: PerCpuArray<&MapData, u64> =
            PerCpuArray::try_from(bpf.map(COUNTERS).ok_or(LoadError::MissingMap(COUNTERS))?)
                .map_err(|e| SessionError::Io {
                    what: "opening the counters".into(),
                    source: io::Error::other(e),
                })?;
        report_lost(&counters, &mut self.reported_lost, cfg, out);
        let maps_lost = self.printer.locations_lost();
        if maps_lost > 0 {
            say!(
                "rtrace: {maps_lost} memory-map records were lost (their ring was full): some addresses may be unnamed, or named by an older mapping at the same address"
            );
        }
        let _ = out.flush();
        Ok(Ended {
            lost: LostTasks {
                full_map: counter_sum(&counters, COUNTER_LOST_TASKS),
                full_handoff: counter_sum(&counters, COUNTER_LOST_HANDOFF),
                unseen: counter_sum(&counters, COUNTER_LOST_UNSEEN),
            },
            stats_lost: counter_sum(&counters, COUNTER_STATS_LOST),
        })
    }
}

/// Says how many records the programs could not write (the ring was full) since the
/// last time, as perf says it: in the trace, where they are missing.
fn report_lost(
    counters: &PerCpuArray<&MapData, u64>,
    reported: &mut u64,
    cfg: &Config,
    out: &mut Sink,
) {
    let dropped = counter_sum(counters, COUNTER_DROPPED);
    if dropped <= *reported {
        return;
    }
    let lost = dropped - *reported;
    *reported = dropped;
    let (on, off) = if cfg.line.color {
        (RED, RESET)
    } else {
        ("", "")
    };
    // In JSON every line is an object, the loss too.
    let _ = if cfg.record {
        // The record file holds records only.
        say!("rtrace: LOST {lost} events!");
        Ok(())
    } else if cfg.json {
        writeln!(out, "{{\"lost\":{lost}}}")
    } else {
        writeln!(out, "{on}LOST {lost} events!{off}")
    };
}

/// How a batch of reading ended.
#[derive(Debug, PartialEq)]
enum Drained {
    /// The ring is empty.
    Empty,
    /// The batch is over and records are waiting.
    Behind,
    /// --max-events is reached or the output failed.
    Stop,
}

/// Prints up to `budget` records of what the ring holds.
fn drain<S: FormatSource>(
    printer: &mut Printer<'_, S>,
    ring: &mut RingBuf<MapData>,
    out: &mut Sink,
    budget: usize,
) -> Drained {
    printer.keep_up();
    for _ in 0..budget {
        if printer.max_reached() {
            return Drained::Stop;
        }
        let Some(item) = ring.next() else {
            return Drained::Empty;
        };
        if printer.take(&item, out) {
            return Drained::Stop;
        }
    }
    if printer.max_reached() {
        Drained::Stop
    } else {
        Drained::Behind
    }
}
