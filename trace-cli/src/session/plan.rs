//! The settings of a session, settled before anything is loaded: tracefs and the
//! tracepoint events, how a process's end is told, the loader's settings (targets,
//! maps, where the syscall programs run) and what a recording keeps of the formats.

use std::{ffi::OsString, io};

use crate::{
    config::{Config, Targets},
    events::{EventTable, TpEvent},
    kernel::{
        btf::{
            Btf, FdInodeOffsets, GroupLiveOffsets, LifecycleOffsets, TracepointIds, ViewOffsets,
        },
        features::{self, GroupExit},
        loader::{Settings, SyscallHooks},
        pidns::PidNs,
        privilege, rings,
        tracefs::Tracefs,
    },
};

use super::{SessionError, io_err, record_header::Formats};

/// What `run` goes on with.
pub(super) struct Plan<'c> {
    pub tracefs: Tracefs,
    pub ns: PidNs,
    pub settings: Settings,
    /// The command rtrace runs, if any.
    pub argv: Option<&'c Vec<OsString>>,
    pub event_table: EventTable,
    /// `rtrace record`: what decoding the records needs, read while tracefs is at hand.
    pub record_formats: Option<Formats>,
}

/// The command rtrace starts, if any.
pub(super) fn command(cfg: &Config) -> Option<&Vec<OsString>> {
    match &cfg.targets {
        Targets::Workload(argv) => Some(argv),
        Targets::System { workload, .. } => workload.as_ref(),
        // `-p PID -- cmd`: the command runs untraced, for how long to trace.
        Targets::Pids(_) | Targets::Tids(_) => cfg.timer.as_ref(),
    }
}

impl<'c> Plan<'c> {
    pub fn settle(cfg: &'c Config) -> Result<Plan<'c>, SessionError> {
        privilege::check()?;
        let tracefs = Tracefs::find_or_mount()?;
        // The raw tracepoint passes `group_dead` where its format has the field.
        let exit_field = tracefs
            .field_offset("sched", "sched_process_exit", "group_dead")?
            .is_some();
        let tp_events = tracepoint_events(cfg, &tracefs)?;
        let ns = PidNs::current()
            .map_err(io::Error::other)
            .map_err(io_err("reading /proc/self/ns/pid"))?;
        features::require(!ns.is_initial())?;
        // The kernel's BTF, let go once read: it is large.
        let btf = Btf::from_sys()?;
        let kernel = lifecycle(cfg, exit_field, &btf)?;
        let choice =
            super::hooks::choose(cfg, ns.is_initial(), &tracefs, |names| btf.func_ids(names));
        drop(btf);
        let settings = settings(cfg, &ns, kernel, choice.hooks, &tp_events)?;
        let argv = command(cfg);
        let record_formats = cfg
            .record
            .then(|| super::record_header::read_formats(&tracefs, &tp_events));
        let event_table = EventTable::new(tp_events, ns.is_initial());
        if cfg.verbose > 0 {
            say!("rtrace: {settings:?}");
            match &settings.hooks {
                SyscallHooks::Events(events) => say!(
                    "rtrace: the syscall programs run on the chosen calls' own events ({} of them), no other call runs them; a 32-bit task's calls have none",
                    events.len()
                ),
                // The loader says whether the kernel took them.
                SyscallHooks::Functions { .. } => {}
                SyscallHooks::Raw => {}
            }
            if let Some(why) = choice.events_because {
                say!(
                    "rtrace: the syscall programs run on the chosen calls' own events, not their functions: {}",
                    why.says()
                );
            }
            if let Some(why) = choice.raw_because {
                say!(
                    "rtrace: -e runs on the raw syscall tracepoints, which every call passes: {}",
                    why.says()
                );
            }
        }
        Ok(Plan {
            tracefs,
            ns,
            settings,
            argv,
            event_table,
            record_formats,
        })
    }
}

/// `-e cat:name` and `--filter`: the tracepoint events, found in tracefs.
fn tracepoint_events(cfg: &Config, tracefs: &Tracefs) -> Result<Vec<TpEvent>, SessionError> {
    if cfg.events.is_empty() && cfg.event_filter.is_none() {
        return Ok(Vec::new());
    }
    Ok(crate::events::resolve(
        &cfg.events,
        cfg.event_filter.as_deref(),
        &tracefs.available_events()?,
        &mut |c, n| tracefs.event_format(c, n),
    )?)
}

/// Where the exit program finds a task's fields, and how it tells a process's end
/// (read from the kernel's BTF).
fn lifecycle(cfg: &Config, exit_field: bool, btf: &Btf) -> Result<KernelFields, SessionError> {
    let lifecycle = LifecycleOffsets::find(btf)?;
    // Without them the new pipes' and sockets' fds are shown without a name.
    let fd_inodes = FdInodeOffsets::find(btf).unwrap_or_else(|e| {
        if cfg.verbose > 0 {
            say!("rtrace: new pipes and sockets get no name: {e}");
        }
        FdInodeOffsets::default()
    });
    // Without them whether a process sees what rtrace sees is asked of /proc.
    let view = ViewOffsets::find(btf).unwrap_or_else(|e| {
        if cfg.verbose > 0 {
            say!("rtrace: paths are compared with rtrace's view through /proc: {e}");
        }
        ViewOffsets::default()
    });
    let group_exit = features::choose_group_exit(
        exit_field,
        || GroupLiveOffsets::find(btf).ok(),
        cfg.group_exit.as_deref(),
    );
    // The raw hooks' programs are loaded against them.
    let tracepoint_ids = TracepointIds::find(btf).map_err(|e| e.to_string());
    if cfg.verbose > 0 || group_exit == GroupExit::Leader {
        say!(
            "rtrace: a process ends with its last thread, told by {}",
            group_exit.describe()
        );
    }
    Ok((lifecycle, group_exit, fd_inodes, view, tracepoint_ids))
}

/// What [`lifecycle`] found in the kernel's BTF.
type KernelFields = (
    LifecycleOffsets,
    GroupExit,
    FdInodeOffsets,
    ViewOffsets,
    Result<TracepointIds, String>,
);

/// What the loader is told: the targets, the maps' sizes, the kernel's offsets and
/// how it tells a process's end, where the syscall programs run, and what they send.
fn settings(
    cfg: &Config,
    ns: &PidNs,
    (lifecycle, group_exit, fd_inodes, view, tracepoint_ids): KernelFields,
    hooks: SyscallHooks,
    tp_events: &[TpEvent],
) -> Result<Settings, SessionError> {
    let (trace_all, filter_uid) = match &cfg.targets {
        Targets::System { uid, .. } => (true, *uid),
        Targets::Workload(_) | Targets::Pids(_) | Targets::Tids(_) => (false, None),
    };
    let key_by_tid = match cfg.targets {
        Targets::Tids(_) => true,
        Targets::Pids(_) | Targets::Workload(_) => !cfg.inherit,
        Targets::System { .. } => false,
    };
    Ok(Settings {
        trace_all,
        filter_uid,
        inherit: cfg.inherit,
        key_by_tid,
        pidns: (!ns.is_initial()).then_some((ns.dev, ns.ino)),
        lifecycle,
        fd_inodes,
        tracepoint_ids,
        view,
        group_exit,
        rings: rings::layout(cfg.ring_bytes, cfg.ring_count, rings::online_cpus()),
        summary_flags: summary_flags(cfg.summary.as_ref(), cfg.timeline.is_some()),
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
        hooks,
        cgroup: cfg
            .cgroup
            .as_deref()
            .map(crate::kernel::cgroup::resolve)
            .transpose()?,
        events: tp_events
            .iter()
            .map(|e| crate::kernel::loader::EventHook {
                id: u64::from(e.id),
                syscall: e.syscall,
            })
            .collect(),
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
    })
}

/// What the programs do for the summary (`trace_common::stats::SUMMARY_*`): send the
/// records only, without a summary. `--timeline` takes the records, -s alone too.
fn summary_flags(summary: Option<&crate::config::Summary>, timeline: bool) -> u32 {
    use trace_common::stats::{SUMMARY_AGGREGATE, SUMMARY_ERRNO, SUMMARY_RECORDS, SUMMARY_TOTAL};
    let Some(s) = summary else {
        return SUMMARY_RECORDS;
    };
    let mut flags = SUMMARY_AGGREGATE;
    if !s.only || timeline {
        flags |= SUMMARY_RECORDS;
    }
    if s.total {
        flags |= SUMMARY_TOTAL;
    }
    if s.errno {
        flags |= SUMMARY_ERRNO;
    }
    if s.hist {
        flags |= trace_common::stats::SUMMARY_HIST;
    }
    flags
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use trace_common::stats::{SUMMARY_AGGREGATE, SUMMARY_ERRNO, SUMMARY_RECORDS, SUMMARY_TOTAL};

    use super::*;
    use crate::cli::Args;

    fn cfg(flags: &[&str]) -> Config {
        let argv = ["rtrace"].iter().chain(flags).chain(&["--", "true"]);
        crate::config::resolve(Args::try_parse_from(argv).unwrap(), |_| true).unwrap()
    }

    #[test]
    fn summary_flags_follow_the_summary_asked_for() {
        let flags = |f: &[&str]| {
            let c = cfg(f);
            summary_flags(c.summary.as_ref(), c.timeline.is_some())
        };
        assert_eq!(flags(&[]), SUMMARY_RECORDS);
        assert_eq!(flags(&["-s"]), SUMMARY_AGGREGATE);
        assert_eq!(
            flags(&["-S", "--summary-mode=total"]),
            SUMMARY_AGGREGATE | SUMMARY_RECORDS | SUMMARY_TOTAL
        );
        assert_eq!(
            flags(&["--errno-summary"]),
            SUMMARY_AGGREGATE | SUMMARY_ERRNO
        );
        assert_eq!(
            flags(&["-s", "--hist"]),
            SUMMARY_AGGREGATE | trace_common::stats::SUMMARY_HIST
        );
    }
}
