//! Loading rtrace's eBPF object and attaching its programs, in the order the session
//! needs: the fork/exit upkeep first, the syscall programs last.

use aya::maps::{Array, MapData};
use aya::{
    Ebpf, EbpfError, EbpfLoader,
    programs::{
        BtfTracePoint, PerfEvent, ProgramError, RawTracePoint, TracePoint,
        perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent},
    },
};
use thiserror::Error;

use super::function_hooks;
pub use super::function_hooks::SyscallFunction;
use super::{
    btf::{FdInodeOffsets, GroupLiveOffsets, LifecycleOffsets, TracepointIds, ViewOffsets},
    features::GroupExit,
};
use crate::faults::Faults;
use trace_common::{
    augment::{AUG_PLAN, AugPlan},
    maps::{CPUS, SYSCALL_CLASS, globals},
};

pub const LIFECYCLE: [&str; 3] = [
    "sched_process_fork",
    "sched_process_exit",
    "sched_process_exec",
];

/// Where the syscall programs run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyscallHooks {
    /// The raw `sys_enter`/`sys_exit` tracepoints: every syscall of every task runs them.
    Raw,
    /// The chosen calls' own events (`syscalls:sys_enter_<event>`, `sys_exit_<event>`,
    /// by these event names): no program runs for other calls. A child is followed at
    /// fork, so only in the initial pid namespace; 32-bit tasks' calls have no events.
    Events(Vec<SyscallEvents>),
    /// The chosen calls' own kernel functions (fentry and fexit on `__x64_sys_<event>`):
    /// no program runs for other calls, and, unlike the events, nothing is set on the
    /// kernel's syscall path. Followed as the events are; where the kernel refuses a
    /// function, at load or at attach, the events.
    Functions {
        functions: Vec<SyscallFunction>,
        events: Vec<SyscallEvents>,
    },
}

/// A call's own two events, by their tracefs ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyscallEvents {
    /// The syscall numbers whose events these are.
    pub nrs: Vec<u32>,
    /// `syscalls:sys_enter_<name>`.
    pub enter: u64,
    /// `syscalls:sys_exit_<name>`.
    pub exit: u64,
}

/// The programs on the chosen calls' events.
const EVENT_HOOKS: [&str; 2] = ["sys_enter_event", "sys_exit_event"];

impl SyscallHooks {
    /// The programs verified with the others, and attached, by name (the functions'
    /// are loaded once for each function: [`function_hooks::load`]).
    fn programs(&self) -> &'static [&'static str] {
        match self {
            SyscallHooks::Raw => &["sys_enter", "sys_exit"],
            SyscallHooks::Events(_) => &EVENT_HOOKS,
            SyscallHooks::Functions { .. } => &[],
        }
    }

    /// Whether the programs run on the chosen calls' own hooks (events or functions),
    /// which a task's 64-bit calls alone pass and a forked child's first return does
    /// not: children are followed at fork.
    pub fn own_hooks(&self) -> bool {
        !matches!(self, SyscallHooks::Raw)
    }
}

static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/trace"));

#[derive(Debug, Error)]
pub enum LoadError {
    #[error("loading the eBPF programs failed: {0}")]
    Load(#[source] EbpfError),
    #[error(
        "the kernel's BTF names no syscall tracepoints (btf_trace_sys_enter, btf_trace_sys_exit): {0}"
    )]
    NoTracepointBtf(String),
    #[error("the eBPF object has no program '{0}'")]
    MissingProgram(&'static str),
    #[error("the eBPF object has no map '{0}'")]
    MissingMap(&'static str),
    #[error("writing the map '{name}' failed: {source}")]
    MapWrite {
        name: &'static str,
        #[source]
        source: aya::maps::MapError,
    },
    #[error(
        "tracepoint events need Linux 5.15 or later (their program names each event by its BPF attach cookie): {0}"
    )]
    EventsNeedCookies(#[source] ProgramError),
    #[error("attaching a tracepoint event failed: {source}")]
    AttachEvent {
        #[source]
        source: std::io::Error,
    },
    #[error("attaching {name} failed: {source}")]
    Attach {
        name: &'static str,
        #[source]
        source: ProgramError,
    },
}

/// Load-time settings of the programs (see `trace_common::maps::globals`).
#[derive(Clone, Debug)]
pub struct Settings {
    pub trace_all: bool,
    pub filter_uid: Option<u32>,
    pub inherit: bool,
    pub key_by_tid: bool,
    /// Device and inode of rtrace's pid namespace; `None` in the initial namespace.
    pub pidns: Option<(u64, u64)>,
    /// Where the lifecycle programs find the fields they read (the kernel's BTF).
    pub lifecycle: LifecycleOffsets,
    /// Where the syscall programs find a new fd's inode (all 0: not found, not read).
    pub fd_inodes: FdInodeOffsets,
    /// The BTF ids of the syscall tracepoints, which the raw hooks' BTF-typed programs
    /// are loaded against (why they could not be found, if not).
    pub tracepoint_ids: Result<TracepointIds, String>,
    /// Where the syscall programs find a task's mount namespace and root (all 0: not
    /// found, not compared).
    pub view: ViewOffsets,
    /// How the exit program tells a thread group's end.
    pub group_exit: GroupExit,
    /// How many rings the programs write, and each one's size.
    pub rings: super::rings::RingLayout,
    /// `trace_common::stats::SUMMARY_*` bits.
    pub summary_flags: u32,
    /// `-e` chose syscalls (written with [`write_index_set`]).
    pub selective: bool,
    /// Tasks `pids_to_trace` and `pids_filtered` hold.
    pub pid_map_entries: u32,
    /// Entries of the per-thread summary maps (1 without a summary).
    pub summary_entries: u32,
    /// `-C` chose CPUs (written with [`write_cpus`]).
    pub cpu_filter: bool,
    /// `-v` count: which of the programs' log statements are kept.
    pub verbose: u8,
    /// `--envp`: send the environment a successful execve's program received.
    pub exec_envp: bool,
    pub hooks: SyscallHooks,
    /// Tracepoint events chosen with `-e cat:name`: `tp_event` is loaded for them, and
    /// `tp_syscall_event` for syscalls' entry events.
    pub events: Vec<EventHook>,
    /// `-G`: only tasks of this cgroup and below.
    pub cgroup: Option<super::cgroup::CgroupTarget>,
    /// `-F`: the page faults traced, minor and major.
    pub faults: Faults,
    /// `--call-graph`: `trace_common::record::STACK_*` bits (0: none).
    pub call_graph: u32,
}

/// The fault programs `faults` chose, and the software events they are attached to.
fn chosen_faults(faults: Faults) -> impl Iterator<Item = (&'static str, SoftwareEvent)> {
    [
        (faults.min, FAULT_PROGRAMS[0], SoftwareEvent::PageFaultsMin),
        (faults.maj, FAULT_PROGRAMS[1], SoftwareEvent::PageFaultsMaj),
    ]
    .into_iter()
    .filter(|(on, _, _)| *on)
    .map(|(_, name, event)| (name, event))
}

/// The page-fault programs, minor and major.
const FAULT_PROGRAMS: [&str; 2] = ["pf_min", "pf_maj"];

/// aya's loader, made on a thread of its own from rtrace's first step: making one reads
/// and parses the whole of the kernel's BTF (~24 ms on the 6.18 host, for relocations
/// rtrace's object does not have), which the steps before the load need not wait for.
pub struct PendingLoader(std::thread::JoinHandle<EbpfLoader<'static>>);

impl PendingLoader {
    pub fn start() -> PendingLoader {
        PendingLoader(std::thread::spawn(EbpfLoader::new))
    }

    fn take(self) -> EbpfLoader<'static> {
        self.0
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

/// Loads the object and verifies the programs `s` uses; on the chosen calls'
/// functions, their programs, not yet attached (`None`: the kernel refused them, and
/// the events' programs are verified instead).
pub fn load(
    s: &Settings,
    loader: PendingLoader,
) -> Result<(Ebpf, Option<function_hooks::Loaded>), LoadError> {
    let flag = |b: bool| u32::from(b);
    let trace_all = flag(s.trace_all);
    let filter_uid = s.filter_uid.unwrap_or(u32::MAX);
    let inherit = flag(s.inherit);
    let key_by_tid = flag(s.key_by_tid);
    let (ns_dev, ns_ino) = s.pidns.unwrap_or((0, 0));
    let group_exit_by = s.group_exit.mode();
    let live = match s.group_exit {
        GroupExit::Live(o) => o,
        GroupExit::Field | GroupExit::Leader => GroupLiveOffsets::default(),
    };
    let selective = flag(s.selective);
    let cpu_filter = flag(s.cpu_filter);
    // Wake the reader when a quarter of a ring is waiting; it also drains on a timer.
    let wakeup = u64::from(s.rings.bytes / 4);
    let log_level = super::bpf_log::level_for(s.verbose);
    let exec_envp = flag(s.exec_envp);
    let follow_at_fork = flag(s.hooks.own_hooks());
    let (cgroup_id, cgroup_level) = s.cgroup.map_or((0u64, 0u32), |c| (c.id, c.level));
    // The histograms' maps (320 bytes a value) take memory only when --hist asks.
    let (hist_entries, hist_total_entries) = {
        use trace_common::stats::{STATS_TOTAL_ENTRIES, SUMMARY_HIST, SUMMARY_TOTAL};
        match (
            s.summary_flags & SUMMARY_HIST != 0,
            s.summary_flags & SUMMARY_TOTAL != 0,
        ) {
            (false, _) => (1, 1),
            (true, false) => (s.summary_entries, 1),
            (true, true) => (1, STATS_TOTAL_ENTRIES),
        }
    };
    let mut loader = loader.take();
    for (i, ring) in trace_common::maps::RINGS.into_iter().enumerate() {
        let bytes = if (i as u32) < s.rings.count {
            s.rings.bytes
        } else {
            trace_common::maps::UNUSED_RING_BYTES
        };
        loader.map_max_entries(ring, bytes);
    }
    let mut bpf = loader
        .override_global(globals::TRACE_ALL, &trace_all, true)
        .override_global(globals::FILTER_UID, &filter_uid, true)
        .override_global(globals::CGROUP_ID, &cgroup_id, true)
        .override_global(globals::CGROUP_LEVEL, &cgroup_level, true)
        .override_global(globals::INHERIT, &inherit, true)
        .override_global(globals::KEY_BY_TID, &key_by_tid, true)
        .override_global(globals::PIDNS_DEV, &ns_dev, true)
        .override_global(globals::PIDNS_INO, &ns_ino, true)
        .override_global(globals::TASK_PID_OFF, &s.lifecycle.task_pid, true)
        .override_global(globals::TASK_TGID_OFF, &s.lifecycle.task_tgid, true)
        .override_global(globals::TASK_START_OFF, &s.lifecycle.task_start, true)
        .override_global(globals::TASK_COMM_OFF, &s.lifecycle.task_comm, true)
        .override_global(globals::FOLLOW_AT_FORK, &follow_at_fork, true)
        .override_global(globals::GROUP_EXIT_BY, &group_exit_by, true)
        .override_global(globals::TASK_SIGNAL_OFF, &live.task_signal, true)
        .override_global(globals::SIGNAL_LIVE_OFF, &live.signal_live, true)
        .override_global(globals::BPRM_FILENAME_OFF, &s.lifecycle.bprm_filename, true)
        .override_global(globals::BPRM_BUF_OFF, &s.lifecycle.bprm_buf, true)
        .override_global(globals::WAKEUP_BYTES, &wakeup, true)
        .override_global(globals::RING_COUNT, &s.rings.count, true)
        .override_global(globals::SUMMARY_FLAGS, &s.summary_flags, true)
        .override_global(globals::SELECTIVE, &selective, true)
        .override_global(globals::CPU_FILTER, &cpu_filter, true)
        .override_global(aya_log::LEVEL, &log_level, true)
        .override_global(globals::EXEC_ENVP, &exec_envp, true)
        .override_global(globals::CALL_GRAPH, &s.call_graph, true)
        .override_global(globals::TASK_FILES_OFF, &s.fd_inodes.task_files, true)
        .override_global(globals::FILES_FDT_OFF, &s.fd_inodes.files_fdt, true)
        .override_global(globals::FDT_MAX_FDS_OFF, &s.fd_inodes.fdt_max_fds, true)
        .override_global(globals::FDT_FD_OFF, &s.fd_inodes.fdt_fd, true)
        .override_global(globals::FILE_INODE_OFF, &s.fd_inodes.file_inode, true)
        .override_global(globals::INODE_INO_OFF, &s.fd_inodes.inode_ino, true)
        .override_global(globals::TASK_NSPROXY_OFF, &s.view.task_nsproxy, true)
        .override_global(globals::NSPROXY_MNT_NS_OFF, &s.view.nsproxy_mnt_ns, true)
        .override_global(globals::TASK_FS_OFF, &s.view.task_fs, true)
        .override_global(globals::FS_ROOT_MNT_OFF, &s.view.fs_root_mnt, true)
        .override_global(globals::FS_ROOT_DENTRY_OFF, &s.view.fs_root_dentry, true)
        .map_max_entries(trace_common::maps::PIDS_TO_TRACE, s.pid_map_entries)
        .map_max_entries(trace_common::maps::PIDS_FILTERED, s.pid_map_entries)
        .map_max_entries(trace_common::maps::FORK_HANDOFF, s.pid_map_entries)
        .map_max_entries(trace_common::stats::STATS_SLOT, s.summary_entries)
        .map_max_entries(trace_common::stats::SYSCALL_STATS, s.summary_entries)
        .map_max_entries(trace_common::stats::STATS_FREE, s.summary_entries)
        .map_max_entries(trace_common::stats::ERRNO_STATS, s.summary_entries)
        .map_max_entries(trace_common::stats::TASK_COMM, s.summary_entries)
        .map_max_entries(trace_common::stats::SYSCALL_HIST, hist_entries)
        .map_max_entries(trace_common::stats::SYSCALL_HIST_TOTAL, hist_total_entries)
        // `inflight` is task-local storage, which only the programs use: aya creates it
        // but has no user-space type for it.
        .allow_unsupported_maps()
        .load(OBJECT)
        .map_err(LoadError::Load)?;
    // Verify every program now, before anything is attached or forked.
    let btf = match s.hooks {
        SyscallHooks::Raw => Some(tracepoint_btf(&s.tracepoint_ids)?),
        SyscallHooks::Events(_) | SyscallHooks::Functions { .. } => None,
    };
    let chosen = chosen_programs(s);
    let functions = match &s.hooks {
        SyscallHooks::Functions { functions, .. } => {
            // The functions' programs (and the events', should the kernel refuse
            // those) alongside the others.
            let hook = |name: &str| {
                function_hooks::PROGRAMS.contains(&name) || EVENT_HOOKS.contains(&name)
            };
            let (mine, others): (Vec<_>, Vec<_>) =
                bpf.programs_mut().partition(|(name, _)| hook(name));
            std::thread::scope(|scope| {
                let loading = scope.spawn(|| load_functions(mine, functions, s.verbose));
                let verified = verify(others.into_iter(), &chosen, btf.as_ref());
                let loaded = loading
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                verified.and(loaded)
            })?
        }
        SyscallHooks::Raw | SyscallHooks::Events(_) => {
            verify(bpf.programs_mut(), &chosen, btf.as_ref())?;
            None
        }
    };
    // What a traced task's view is compared with; without it, /proc is asked.
    if s.view.task_fs != 0
        && let Err(e) = super::view::learn(&mut bpf)
        && s.verbose > 0
    {
        crate::say!("rtrace: paths are compared with rtrace's view through /proc: {e}");
    }
    Ok((bpf, functions))
}

/// The function programs (among `programs`), loaded for each of `functions`; where
/// the kernel refuses one, the events' programs, verified instead (`None`).
fn load_functions<'a>(
    programs: Vec<(&'a str, &'a mut aya::programs::Program)>,
    functions: &[SyscallFunction],
    verbose: u8,
) -> Result<Option<function_hooks::Loaded>, LoadError> {
    use aya::programs::Program as P;
    let [enter_name, exit_name] = function_hooks::PROGRAMS;
    let (mut enter, mut exit, mut events) = (None, None, Vec::new());
    for (name, prog) in programs {
        if name == enter_name {
            if let P::FEntry(p) = prog {
                enter = Some(p);
            }
        } else if name == exit_name {
            if let P::FExit(p) = prog {
                exit = Some(p);
            }
        } else {
            events.push((name, prog));
        }
    }
    let enter = enter.ok_or(LoadError::MissingProgram(enter_name))?;
    let exit = exit.ok_or(LoadError::MissingProgram(exit_name))?;
    match function_hooks::load(enter, exit, functions) {
        Ok(loaded) => Ok(Some(loaded)),
        Err(refused) => {
            events_instead(events.into_iter(), &refused, verbose)?;
            Ok(None)
        }
    }
}

/// The kernel refused a function: the calls' events' programs (among `programs`),
/// verified.
fn events_instead<'a>(
    programs: impl Iterator<Item = (&'a str, &'a mut aya::programs::Program)>,
    refused: &function_hooks::Refused,
    verbose: u8,
) -> Result<(), LoadError> {
    if verbose > 0 {
        crate::say!(
            "rtrace: the syscall programs run on the chosen calls' own events, not their functions: the kernel refused {refused}"
        );
    }
    let chosen = EVENT_HOOKS.map(|n| (n, Verify::Plain));
    verify(programs, &chosen, None)
}

/// How a program is verified, and what its failure says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verify {
    /// Loaded as it is.
    Plain,
    /// A BTF-typed program (`tp_btf`), against its tracepoint, which is its name.
    Btf,
    /// `tp_event`: small, so a failure says the kernel lacks attach cookies.
    Cookies,
}

/// The programs `s` uses, in the order their failures are told.
fn chosen_programs(s: &Settings) -> Vec<(&'static str, Verify)> {
    let mut chosen: Vec<_> = LIFECYCLE.iter().map(|&n| (n, Verify::Plain)).collect();
    let how = match s.hooks {
        SyscallHooks::Raw => Verify::Btf,
        SyscallHooks::Events(_) | SyscallHooks::Functions { .. } => Verify::Plain,
    };
    chosen.extend(s.hooks.programs().iter().map(|&n| (n, how)));
    chosen.extend(chosen_faults(s.faults).map(|(n, _)| (n, Verify::Plain)));
    // The syscall entry events' program reads what the call's plan says: its failure
    // is its own.
    for (name, how) in [
        (EVENT_PROGRAM, Verify::Cookies),
        (SYSCALL_EVENT_PROGRAM, Verify::Plain),
    ] {
        if s.events.iter().any(|e| e.program() == name) {
            chosen.push((name, how));
        }
    }
    chosen
}

/// Verifies the `chosen` programs, each on a thread of its own: the verifier's time is
/// most of rtrace's start-up, and sys_exit alone is about half of it. The first
/// failure in `chosen`'s order is the one told.
fn verify<'a>(
    programs: impl Iterator<Item = (&'a str, &'a mut aya::programs::Program)>,
    chosen: &[(&'static str, Verify)],
    btf: Option<&aya::Btf>,
) -> Result<(), LoadError> {
    let mut results: Vec<Option<Result<(), LoadError>>> = chosen.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        let running: Vec<_> = programs
            .filter_map(|(name, prog)| {
                let i = chosen.iter().position(|(n, _)| *n == name)?;
                let (name, how) = chosen[i];
                Some((i, scope.spawn(move || verify_one(name, how, prog, btf))))
            })
            .collect();
        for (i, thread) in running {
            let result = thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            results[i] = Some(result);
        }
    });
    for ((name, _), result) in chosen.iter().zip(results) {
        result.unwrap_or(Err(LoadError::MissingProgram(name)))?;
    }
    Ok(())
}

fn verify_one(
    name: &'static str,
    how: Verify,
    prog: &mut aya::programs::Program,
    btf: Option<&aya::Btf>,
) -> Result<(), LoadError> {
    use aya::programs::Program as P;
    let loaded = match (how, prog) {
        (Verify::Btf, P::BtfTracePoint(p)) => match btf {
            Some(btf) => p.load(name, btf),
            None => return Err(LoadError::NoTracepointBtf(name.into())),
        },
        (Verify::Plain, P::RawTracePoint(p)) => p.load(),
        (Verify::Plain, P::PerfEvent(p)) => p.load(),
        (Verify::Plain | Verify::Cookies, P::TracePoint(p)) => p.load(),
        (_, _) => Err(ProgramError::UnexpectedProgramType),
    };
    loaded.map_err(|source| match how {
        Verify::Cookies => LoadError::EventsNeedCookies(source),
        Verify::Plain | Verify::Btf => LoadError::Attach { name, source },
    })
}

/// The program of every tracepoint event (`-e cat:name`)…
const EVENT_PROGRAM: &str = "tp_event";
/// …but a syscall's entry event (`syscalls:sys_enter_openat`), sent as the call's entry.
const SYSCALL_EVENT_PROGRAM: &str = "tp_syscall_event";

/// One tracepoint event to attach to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventHook {
    /// Its tracefs id.
    pub id: u64,
    /// The native call whose entry it is (`syscalls:sys_enter_<call>`), if it is one.
    pub syscall: Option<u32>,
}

impl EventHook {
    fn program(&self) -> &'static str {
        if self.syscall.is_some() {
            SYSCALL_EVENT_PROGRAM
        } else {
            EVENT_PROGRAM
        }
    }
}

/// The tracepoint events of `-e cat:name`, each with its index as the program's
/// cookie; their links join `links`, to be released with the others.
pub fn attach_events(
    bpf: &mut Ebpf,
    events: &[EventHook],
    links: &mut EventLinks,
) -> Result<(), LoadError> {
    use std::os::fd::AsFd;
    for (index, event) in events.iter().enumerate() {
        let name = event.program();
        let prog: &mut TracePoint = program(bpf, name)?;
        let fd = prog
            .fd()
            .map_err(|source| LoadError::Attach { name, source })?;
        let link = super::cookie_link::attach(fd.as_fd(), event.id, index as u64)
            .map_err(|source| LoadError::AttachEvent { source })?;
        links.events.push(link);
    }
    Ok(())
}

/// What the BTF-typed syscall programs are loaded against: a stand-in for the kernel's
/// BTF in which their tracepoints' typedefs have the kernel's ids (`btf::stand_in`).
/// aya takes a parsed `Btf` only to look the id up, and a second parse of the whole
/// of vmlinux's BTF (besides the loader's own) cost ~25 ms and ~10 MiB at every start.
fn tracepoint_btf(ids: &Result<TracepointIds, String>) -> Result<aya::Btf, LoadError> {
    let ids = ids.clone().map_err(LoadError::NoTracepointBtf)?;
    let typedef = |name, id| super::btf::StandIn {
        name,
        id,
        func: false,
    };
    let bytes = super::btf::stand_in(&[
        typedef("btf_trace_sys_enter", ids.sys_enter),
        typedef("btf_trace_sys_exit", ids.sys_exit),
    ]);
    aya::Btf::parse(&bytes, aya::Endianness::default())
        .map_err(|e| LoadError::NoTracepointBtf(e.to_string()))
}

fn program<'a, P>(bpf: &'a mut Ebpf, name: &'static str) -> Result<&'a mut P, LoadError>
where
    &'a mut P: TryFrom<&'a mut aya::programs::Program, Error = ProgramError>,
{
    bpf.program_mut(name)
        .ok_or(LoadError::MissingProgram(name))?
        .try_into()
        .map_err(|source| LoadError::Attach { name, source })
}

/// fork/exit upkeep: attached before any pid is written, so that no task forked or
/// exiting during the writes goes unseen. `which` names some of [`LIFECYCLE`]: on a
/// tracepoint the programs run in the order they were attached, and the tracepoint
/// events' program must run after the exec program (which arms a held command: its
/// exec event is its first) but before the exit program (which forgets the task).
pub fn attach_lifecycle(bpf: &mut Ebpf, which: &[&'static str]) -> Result<(), LoadError> {
    for &name in which {
        let prog: &mut RawTracePoint = program(bpf, name)?;
        prog.attach(name)
            .map_err(|source| LoadError::Attach { name, source })?;
    }
    Ok(())
}

/// The links of the programs on perf events: `-e cat:name`'s, and the syscall
/// programs' on the chosen calls' own events with the numbers of those calls.
#[derive(Default)]
pub struct EventLinks {
    events: Vec<super::cookie_link::CookieLink>,
    /// The syscall programs' links and perf events, in the order they are closed.
    syscalls: Vec<std::os::fd::OwnedFd>,
    chosen: Vec<u32>,
    /// The function programs, loaded and not yet attached.
    functions: Option<function_hooks::Loaded>,
}

impl EventLinks {
    /// No links yet; the function programs [`load`] made, if any.
    pub fn with_functions(functions: Option<function_hooks::Loaded>) -> Self {
        EventLinks {
            functions,
            ..EventLinks::default()
        }
    }
}

/// The syscall programs: attached last, once the pid maps are written and swept.
pub fn attach_syscalls(
    bpf: &mut Ebpf,
    hooks: &SyscallHooks,
    links: &mut EventLinks,
    verbose: u8,
) -> Result<(), LoadError> {
    match hooks {
        SyscallHooks::Raw => {
            for &name in hooks.programs() {
                let prog: &mut BtfTracePoint = program(bpf, name)?;
                prog.attach()
                    .map_err(|source| LoadError::Attach { name, source })?;
            }
            Ok(())
        }
        SyscallHooks::Events(events) => attach_event_hooks(bpf, events, links),
        SyscallHooks::Functions { functions, events } => {
            let Some(loaded) = links.functions.take() else {
                // Refused at load: the events' programs were verified instead.
                return attach_event_hooks(bpf, events, links);
            };
            match function_hooks::attach(loaded, functions) {
                Ok(made) => {
                    links
                        .chosen
                        .extend(events.iter().flat_map(|e| e.nrs.iter().copied()));
                    links.syscalls.extend(made);
                    if verbose > 0 {
                        let names: Vec<&str> = functions.iter().map(|f| f.name.as_str()).collect();
                        crate::say!(
                            "rtrace: the syscall programs run on the chosen calls' own functions ({}), no other call runs them; a 32-bit task's calls pass none",
                            names.join(", ")
                        );
                    }
                    Ok(())
                }
                Err(refused) => {
                    events_instead(bpf.programs_mut(), &refused, verbose)?;
                    attach_event_hooks(bpf, events, links)
                }
            }
        }
    }
}

/// The programs on the chosen calls' own events.
fn attach_event_hooks(
    bpf: &mut Ebpf,
    events: &[SyscallEvents],
    links: &mut EventLinks,
) -> Result<(), LoadError> {
    use std::os::fd::AsFd;
    // Known before any attach, so that a failure halfway still unchooses the calls
    // whose links were made.
    links
        .chosen
        .extend(events.iter().flat_map(|e| e.nrs.iter().copied()));
    let [enter, exit] = EVENT_HOOKS;
    for (name, id_of) in [
        (enter, (|e| e.enter) as fn(&SyscallEvents) -> u64),
        (exit, |e| e.exit),
    ] {
        let prog: &mut TracePoint = program(bpf, name)?;
        let fd = prog
            .fd()
            .map_err(|source| LoadError::Attach { name, source })?;
        for event in events {
            let link = super::cookie_link::attach(fd.as_fd(), id_of(event), 0)
                .map_err(|source| LoadError::AttachEvent { source })?;
            links.syscalls.extend(link.into_fds());
        }
    }
    Ok(())
}

/// `-F`: the page-fault programs, on each CPU's software page-fault event (`cpus`, or
/// every online CPU), sampled at every fault. Attached with the syscall programs.
pub fn attach_faults(
    bpf: &mut Ebpf,
    faults: Faults,
    cpus: Option<&[u32]>,
) -> Result<(), LoadError> {
    if !faults.any() {
        return Ok(());
    }
    let cpus = match cpus {
        Some(c) => c.to_vec(),
        None => aya::util::online_cpus().map_err(|(_, source)| LoadError::Attach {
            name: FAULT_PROGRAMS[0],
            source: ProgramError::IOError(source),
        })?,
    };
    for (name, event) in chosen_faults(faults) {
        let prog: &mut PerfEvent = program(bpf, name)?;
        for &cpu in &cpus {
            prog.attach(
                PerfEventConfig::Software(event),
                PerfEventScope::AllProcessesOneCpu { cpu },
                SamplePolicy::Period(1),
                false,
            )
            .map_err(|source| LoadError::Attach { name, source })?;
        }
    }
    Ok(())
}

/// The array map `name`, to read and write.
fn array_mut<'a, V: aya::Pod>(
    bpf: &'a mut Ebpf,
    name: &'static str,
) -> Result<Array<&'a mut MapData, V>, LoadError> {
    let map = bpf.map_mut(name).ok_or(LoadError::MissingMap(name))?;
    Array::try_from(map).map_err(|source| LoadError::MapWrite { name, source })
}

/// Sets entries of the array map `name`. Indexes past the map are left out: nothing
/// in the kernel can ask for them.
fn write_array<V: aya::Pod>(
    bpf: &mut Ebpf,
    name: &'static str,
    entries: impl IntoIterator<Item = (u32, V)>,
) -> Result<(), LoadError> {
    let mut array = array_mut::<V>(bpf, name)?;
    let len = array.len();
    for (index, value) in entries.into_iter().filter(|(i, _)| *i < len) {
        array
            .set(index, value, 0)
            .map_err(|source| LoadError::MapWrite { name, source })?;
    }
    Ok(())
}

/// Tells the kernel side what to copy from user memory for each syscall.
pub fn write_aug_plans(
    bpf: &mut Ebpf,
    plans: impl Iterator<Item = (u32, AugPlan)>,
) -> Result<(), LoadError> {
    write_array(
        bpf,
        AUG_PLAN,
        plans.filter(|(_, plan)| *plan != AugPlan::default()),
    )
}

/// Clears `CLASS_SELECTED` of the calls `nrs`: the syscall programs stop at their
/// entries from then on.
fn unchoose(bpf: &mut Ebpf, nrs: &[u32]) -> Result<(), LoadError> {
    use trace_common::maps::CLASS_SELECTED;
    let name = SYSCALL_CLASS;
    let mut array = array_mut::<u32>(bpf, name)?;
    for &nr in nrs {
        let class = array
            .get(&nr, 0)
            .map_err(|source| LoadError::MapWrite { name, source })?;
        array
            .set(nr, class & !CLASS_SELECTED, 0)
            .map_err(|source| LoadError::MapWrite { name, source })?;
    }
    Ok(())
}

/// Writes each syscall's class bits (`decode::classes`).
pub fn write_classes(bpf: &mut Ebpf, classes: &[(u32, u32)]) -> Result<(), LoadError> {
    write_array(bpf, SYSCALL_CLASS, classes.iter().copied())
}

/// `-C`: the CPUs watched.
pub fn write_cpus(bpf: &mut Ebpf, cpus: &[u32]) -> Result<(), LoadError> {
    write_array(bpf, CPUS, cpus.iter().map(|&cpu| (cpu, 1u32)))
}

fn unload(prog: &mut aya::programs::Program) {
    match prog {
        aya::programs::Program::TracePoint(p) => {
            let _ = p.unload();
        }
        aya::programs::Program::RawTracePoint(p) => {
            let _ = p.unload();
        }
        aya::programs::Program::BtfTracePoint(p) => {
            let _ = p.unload();
        }
        aya::programs::Program::PerfEvent(p) => {
            let _ = p.unload();
        }
        _ => {}
    }
}

/// Stops the syscall programs; the maps stay readable. On the raw tracepoints they are
/// unloaded, which is quick. On the chosen calls' own events, releasing a link or an
/// event waits for the kernel's grace periods, one at a time (tens of milliseconds
/// each): so the calls are unchosen first (`CLASS_SELECTED` cleared), after which the
/// programs send nothing, and the links and events are released in the background
/// ([`super::event_release`]). `-e cat:name`'s events, whose programs have no such
/// switch, are released here (the kernel releases them one at a time).
pub fn detach_syscalls(bpf: &mut Ebpf, links: &mut EventLinks) {
    let chosen = std::mem::take(&mut links.chosen);
    let unchosen = unchoose(bpf, &chosen).is_ok();
    let syscalls = std::mem::take(&mut links.syscalls);
    links.functions = None;
    if unchosen {
        super::event_release::close_in_background(syscalls);
    } else {
        drop(syscalls);
    }
    let events = std::mem::take(&mut links.events);
    std::thread::scope(|s| {
        for link in events {
            s.spawn(move || drop(link));
        }
    });
    for name in [
        "sys_enter",
        "sys_exit",
        "sys_enter_event",
        "sys_exit_event",
        EVENT_PROGRAM,
        SYSCALL_EVENT_PROGRAM,
        FAULT_PROGRAMS[0],
        FAULT_PROGRAMS[1],
    ] {
        if let Some(prog) = bpf.program_mut(name) {
            unload(prog);
        }
    }
}

/// Detaches every program rtrace attached, the programs unloaded in parallel.
pub fn detach_all(bpf: &mut Ebpf, links: &mut EventLinks) {
    detach_syscalls(bpf, links);
    std::thread::scope(|s| {
        for (_, prog) in bpf.programs_mut() {
            s.spawn(move || unload(prog));
        }
    });
}

/// The fd of a map, for the bpf(2) calls rtrace makes itself.
pub fn map_fd<'a>(
    bpf: &'a Ebpf,
    name: &'static str,
) -> Result<std::os::fd::BorrowedFd<'a>, LoadError> {
    use std::os::fd::AsFd;
    match bpf.map(name) {
        Some(aya::maps::Map::HashMap(data)) => Ok(data.fd().as_fd()),
        _ => Err(LoadError::MissingMap(name)),
    }
}
