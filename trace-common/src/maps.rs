//! Map and global names, and the values kept in the pid maps.
//!
//! The eBPF side names its maps with these same literals in `#[map(name = …)]`
//! (attributes cannot take a const); the user side looks them up through these
//! constants, so a mismatch fails at start-up with the missing name.

/// Hash map, key: pid (tgid, or tid when keyed by thread) in rtrace's pid namespace,
/// value: `TRACE_*` flags. The tasks whose syscalls are recorded.
pub const PIDS_TO_TRACE: &str = "pids_to_trace";
/// Hash map, key: tgid in rtrace's pid namespace, value: 1. Tasks never reported;
/// always holds rtrace's own pid.
pub const PIDS_FILTERED: &str = "pids_filtered";
/// Ring buffer carrying [`crate::SyscallRecord`]s: the first of [`RINGS`].
pub const EVENTS: &str = "events";
/// The ring buffers, one per CPU up to this many: a record goes to ring
/// `cpu % RING_COUNT`. Writers on different CPUs that share one ring contend for its
/// lock and its positions' cache lines, which on a multi-threaded program cost more
/// than the record itself; with a ring each they do not, and the reader merges the
/// rings' records by time. CPUs beyond the last ring share them.
pub const MAX_RINGS: usize = 8;
pub const RINGS: [&str; MAX_RINGS] = [
    EVENTS, "events_1", "events_2", "events_3", "events_4", "events_5", "events_6", "events_7",
];
/// The size of a ring the loader leaves unused: one page of 4 KiB (aya rounds a ring's
/// size up to the page size, for kernels with larger pages).
pub const UNUSED_RING_BYTES: u32 = 4096;
/// Hash map, key: kernel tid of a child just forked by a traced task, value: the
/// parent's `TRACE_*` flags, until the child first returns to user space.
pub const FORK_HANDOFF: &str = "fork_handoff";
/// Array of u32 indexed by syscall index: the `CLASS_*` bits of each syscall, written
/// by user space from its tables before tracing starts.
pub const SYSCALL_CLASS: &str = "syscall_class";
/// `-e` selects it (only looked at when the `SELECTIVE` global is set).
pub const CLASS_SELECTED: u32 = 1;
/// It may block: its entry is also sent at entry (see `record::REC_PENDING`).
pub const CLASS_BLOCKING: u32 = 2;
/// execve/execveat: starts a held workload's trace; when it succeeds, what the new
/// program received is sent in a record of its own.
pub const CLASS_EXEC: u32 = 4;
/// exit/exit_group: never returns, recorded at entry.
pub const CLASS_EXIT: u32 = 8;
/// clone/clone3/fork/vfork: a new child's first return is not a call of its own.
pub const CLASS_FORK: u32 = 16;
/// clone: its flags, the first argument, say whether the parent waits until its child
/// has exec'd or exited (CLONE_VFORK), as in vfork (arm64 has no vfork; libc's vfork()
/// is this clone). With [`CLASS_BLOCKING`] too (set only where blocking entries are
/// asked for), it is blocking only when they do.
pub const CLASS_VFORK_IN_ARG: u32 = 32;
/// clone3: the same, with the flags in the first u64 of the `struct clone_args` its
/// first argument points to (glibc's posix_spawn is such a clone3).
pub const CLASS_VFORK_IN_STRUCT: u32 = 64;
/// The call returns a new fd whose file /proc names by its inode (`socket:[ino]`):
/// at a successful exit the kernel side puts that inode's number in the record's
/// `args[5]` (see `record::REC_FD_INODES`).
pub const CLASS_FD_INODE_RET: u32 = 128;
/// The call writes two such fds to the `int[2]` its first argument points to (pipe,
/// pipe2): their inodes go in `args[4]` and `args[5]`.
pub const CLASS_FD_INODE_PAIR_ARG0: u32 = 256;
/// The same, with the `int[2]` at the fourth argument (socketpair).
pub const CLASS_FD_INODE_PAIR_ARG3: u32 = 512;
/// The call resolves a path that the reader shows canonical (the opens, chdir): at a
/// successful exit the kernel side says whether the task sees the file system as
/// rtrace does (`record::REC_VIEW_KNOWN`).
pub const CLASS_PATH_VIEW: u32 = 1024;
/// vfork: the parent waits until its child has exec'd or exited (see
/// `record::KIND_VFORK_CHILD`), whatever the output.
pub const CLASS_VFORK: u32 = 2048;
/// CLONE_VFORK, the same on every architecture (include/uapi/linux/sched.h).
pub const CLONE_VFORK: u64 = 0x4000;

/// Syscalls are identified by an index everywhere (records, maps, plans): the number
/// itself for the native table, `COMPAT_BASE + number` for a 32-bit task's table (i386
/// on x86_64, arm on arm64).
pub const COMPAT_BASE: u32 = 1024;
pub const SYSCALL_INDEXES: u32 = 2 * COMPAT_BASE;
/// ARM's private calls (`__ARM_NR_BASE` 0xf0000 + n: cacheflush, set_tls…), which an
/// arm task on arm64 makes: their numbers lie past every table, so they take the 32-bit
/// indexes' last [`ARM_PRIVATE_SLOTS`] (the arm table ends far below), from
/// [`ARM_PRIVATE_INDEX`]. Their index tells them from a native call's number, and `-e`
/// selects them as any other.
pub const ARM_PRIVATE_BASE: u32 = 0xf0000;
pub const ARM_PRIVATE_SLOTS: u32 = 16;
pub const ARM_PRIVATE_INDEX: u32 = SYSCALL_INDEXES - ARM_PRIVATE_SLOTS;
/// A number in `COMPAT_BASE..SYSCALL_INDEXES` that is no index (a native call's number
/// that high, or a 32-bit task's past its table but ARM's private calls: each is ENOSYS
/// or unknown) takes this bit, so that it is named `syscall_<number>` and not taken for a
/// call of the 32-bit table. (A raw number with the bit already set and the same low
/// bits would read the same: none is a call.)
pub const STRAY_NR: u32 = 1 << 31;

/// The number a stray index stands for (see [`STRAY_NR`]), or the index itself.
pub const fn stray_number(idx: u32) -> u32 {
    let nr = idx & !STRAY_NR;
    if idx & STRAY_NR != 0 && nr >= COMPAT_BASE && nr < SYSCALL_INDEXES {
        nr
    } else {
        idx
    }
}
/// Per-CPU array of [`COUNTER_SLOTS`] u64 counters, indexed by `COUNTER_*`.
pub const COUNTERS: &str = "counters";

/// Records dropped because the ring buffer was full.
pub const COUNTER_DROPPED: u32 = 0;
/// Children of traced tasks that could not be followed: `pids_to_trace` was full.
pub const COUNTER_LOST_TASKS: u32 = 1;
/// Children lost because the fork hand-off map was full.
pub const COUNTER_LOST_HANDOFF: u32 = 2;
/// Syscalls that could not be counted for the summary: a stats map was full.
pub const COUNTER_STATS_LOST: u32 = 3;
/// Children of traced tasks that could not be followed: they run in a pid namespace
/// that rtrace's own cannot see into.
pub const COUNTER_LOST_UNSEEN: u32 = 4;
/// Execs of a 32-bit program (i386, AArch32) by traced tasks: the per-syscall events
/// `-e` may run on see none of its calls.
pub const COUNTER_COMPAT_EXECS: u32 = 5;
pub const COUNTER_SLOTS: u32 = 6;

/// `pids_to_trace` value bit: the task is traced.
pub const TRACE_ON: u32 = 1;
/// `pids_to_trace` value bit: a workload held by rtrace that is not yet exec'd: its
/// syscalls are ignored until it enters execve/execveat.
pub const TRACE_ARM_ON_EXEC: u32 = 2;

/// Default sizes; `pids_to_trace` and `pids_filtered` hold this many tasks.
pub const PID_MAP_ENTRIES: u32 = 8192;

/// `pids_filtered` value: always left out.
pub const FILTER_ALWAYS: u32 = 1;
/// `pids_filtered` value: a workload rtrace holds in a system-wide trace, left out
/// until it execs (its set-up before the exec is rtrace's doing).
pub const FILTER_UNTIL_EXEC: u32 = 2;

/// Array of u32 by CPU number: 1 for the CPUs `-C` watches (used only when the
/// `CPU_FILTER` global is set).
pub const CPUS: &str = "cpus";
pub const MAX_CPUS: u32 = 4096;

/// Array of two monotonic u64 counts: children of traced tasks handed off at fork
/// (`HANDOFFS_GIVEN`) and hand-offs settled (`HANDOFFS_SETTLED`: the child adopted
/// into `pids_to_trace`, or gone). The kernel side settles only after the insert, so
/// a reader that reads SETTLED, then `pids_to_trace`, then GIVEN, and finds the map
/// empty and the two equal, knows that no child is on its way in.
pub const HANDOFFS: &str = "handoffs";
pub const HANDOFFS_GIVEN: u32 = 0;
pub const HANDOFFS_SETTLED: u32 = 1;

/// Array of one u32: 1 once the reader has gone to sleep on the ring and no record has
/// woken it since. The reader sets it just before it waits; the first record that finds
/// it set with the ring past `WAKEUP_BYTES` clears it and wakes the reader. Only the
/// kernel side clears it: a reader woken by its timer, a signal or its command's exit
/// leaves it set, which costs at most one spare wake-up before it sleeps again. So a
/// sleeping reader is woken once (or once per CPU that raced to it), and one that is
/// awake only once the ring is half full (`trace-ebpf/src/wakeup.rs`).
pub const READER_ASLEEP: &str = "reader_asleep";

/// Array of `VIEW_SLOTS` u64: rtrace's own mount namespace and root directory (the
/// kernel's `nsproxy->mnt_ns`, `fs->root.mnt` and `fs->root.dentry` pointers), written
/// once by the `learn_view` program, which rtrace runs itself (BPF_PROG_TEST_RUN runs
/// it in rtrace's task). All zero: not learnt, and no record says `REC_VIEW_KNOWN`.
pub const RTRACE_VIEW: &str = "rtrace_view";
pub const VIEW_SLOTS: u32 = 3;

/// `GROUP_EXIT_BY`: the leader's exit stands for the group's (a guess, wrong when the
/// leader exits before other threads; used only when nothing better is there).
pub const GROUP_EXIT_LEADER: u32 = 0;
/// `GROUP_EXIT_BY`: the tracepoint's own `group_dead` argument (new kernels: 6.18 has it,
/// 6.12 and 6.1 do not).
pub const GROUP_EXIT_FIELD: u32 = 1;
/// `GROUP_EXIT_BY`: the group's live-thread count, `current->signal->live`, which the
/// kernel decrements before the tracepoint: 0 means this was the last thread.
pub const GROUP_EXIT_LIVE: u32 = 2;

/// Load-time globals (`EbpfLoader::override_global`).
pub mod globals {
    /// u32: 1 traces every task (`-a`, `-u`), only `pids_filtered` applies.
    pub const TRACE_ALL: &str = "TRACE_ALL";
    /// u32: with `TRACE_ALL`, only tasks of this uid (`u32::MAX`: any uid).
    pub const FILTER_UID: &str = "FILTER_UID";
    /// u64: `-G`: only tasks in this cgroup (v2 id) or below it (0: any cgroup).
    pub const CGROUP_ID: &str = "CGROUP_ID";
    /// u32: the depth of `CGROUP_ID` below the root.
    pub const CGROUP_LEVEL: &str = "CGROUP_LEVEL";
    /// u32: 1 follows forked tasks.
    pub const INHERIT: &str = "INHERIT";
    /// u32: 1 keys `pids_to_trace` by thread id instead of process id.
    pub const KEY_BY_TID: &str = "KEY_BY_TID";
    /// u64 pair: device and inode of rtrace's pid namespace; inode 0 uses the
    /// kernel's (initial namespace) pids directly.
    pub const PIDNS_DEV: &str = "PIDNS_DEV";
    pub const PIDNS_INO: &str = "PIDNS_INO";
    /// u32: byte offset of `task_struct.pid`, from the kernel's BTF (the child that
    /// `sched_process_fork` passes).
    pub const TASK_PID_OFF: &str = "TASK_PID_OFF";
    /// u32: byte offset of `task_struct.tgid`, from the kernel's BTF.
    pub const TASK_TGID_OFF: &str = "TASK_TGID_OFF";
    /// u32: byte offset of `task_struct.start_boottime`, from the kernel's BTF (the
    /// summaries key each thread by it, see `stats::TaskKey`).
    pub const TASK_START_OFF: &str = "TASK_START_OFF";
    /// u32: byte offset of `task_struct.comm`, from the kernel's BTF (each record's
    /// task name, loaded directly: `record::comm_words_padded`).
    pub const TASK_COMM_OFF: &str = "TASK_COMM_OFF";
    /// u32: 1 makes a traced task's child a target at fork (rtrace in the initial pid
    /// namespace, the syscall programs on the chosen calls' own events), instead of
    /// handing it off to its first syscall exit.
    pub const FOLLOW_AT_FORK: &str = "FOLLOW_AT_FORK";
    /// u32: how `sched_process_exit` tells that a task's whole thread group is gone:
    /// one of `GROUP_EXIT_*`.
    pub const GROUP_EXIT_BY: &str = "GROUP_EXIT_BY";
    /// u32 pair: byte offsets of `task_struct.signal` and `signal_struct.live.counter`,
    /// from the kernel's BTF (`GROUP_EXIT_LIVE`).
    pub const TASK_SIGNAL_OFF: &str = "TASK_SIGNAL_OFF";
    pub const SIGNAL_LIVE_OFF: &str = "SIGNAL_LIVE_OFF";
    /// u32: 1 when `-C` chose CPUs (see `CPUS`).
    pub const CPU_FILTER: &str = "CPU_FILTER";
    /// u32: 1 when `-e` chose syscalls (see `CLASS_SELECTED`).
    pub const SELECTIVE: &str = "SELECTIVE";
    /// u32: `trace_common::stats::SUMMARY_*` bits: records, aggregation, total, errno.
    pub const SUMMARY_FLAGS: &str = "SUMMARY_FLAGS";
    /// u32: byte offset of `linux_binprm.filename`, from the kernel's BTF (the exec that
    /// `sched_process_exec` passes).
    pub const BPRM_FILENAME_OFF: &str = "BPRM_FILENAME_OFF";
    /// u32: byte offset of `linux_binprm.buf`, the first bytes of the file an exec runs
    /// (its ELF header), from the kernel's BTF.
    pub const BPRM_BUF_OFF: &str = "BPRM_BUF_OFF";
    /// u32: 1 sends the environment a successful execve's program received (`--envp`).
    pub const EXEC_ENVP: &str = "EXEC_ENVP";
    /// u64: unread bytes in the ring buffer past which a record wakes a sleeping reader
    /// (past twice as many, any reader: `trace-ebpf/src/wakeup.rs`).
    pub const WAKEUP_BYTES: &str = "WAKEUP_BYTES";
    /// u32: how many of `RINGS` the programs write (at least 1).
    pub const RING_COUNT: &str = "RING_COUNT";
    /// u32: `record::STACK_*` bits: which call chains go before the records (`--call-graph`).
    pub const CALL_GRAPH: &str = "CALL_GRAPH";
    /// u32 each: byte offsets, from the kernel's BTF, of the fields that lead from the
    /// current task to an fd's inode number (`task_struct.files`, `files_struct.fdt`,
    /// `fdtable.max_fds`, `fdtable.fd`, `file.f_inode`, `inode.i_ino`), for the
    /// `CLASS_FD_INODE_*` calls. `TASK_FILES_OFF` 0: not found, no inode is read.
    pub const TASK_FILES_OFF: &str = "TASK_FILES_OFF";
    pub const FILES_FDT_OFF: &str = "FILES_FDT_OFF";
    pub const FDT_MAX_FDS_OFF: &str = "FDT_MAX_FDS_OFF";
    pub const FDT_FD_OFF: &str = "FDT_FD_OFF";
    pub const FILE_INODE_OFF: &str = "FILE_INODE_OFF";
    pub const INODE_INO_OFF: &str = "INODE_INO_OFF";
    /// u32 each: byte offsets, from the kernel's BTF, of `task_struct.nsproxy`,
    /// `nsproxy.mnt_ns`, `task_struct.fs`, and `fs_struct.root`'s `mnt` and `dentry`,
    /// for `CLASS_PATH_VIEW`. `TASK_FS_OFF` 0: not found, no view is compared.
    pub const TASK_NSPROXY_OFF: &str = "TASK_NSPROXY_OFF";
    pub const NSPROXY_MNT_NS_OFF: &str = "NSPROXY_MNT_NS_OFF";
    pub const TASK_FS_OFF: &str = "TASK_FS_OFF";
    pub const FS_ROOT_MNT_OFF: &str = "FS_ROOT_MNT_OFF";
    pub const FS_ROOT_DENTRY_OFF: &str = "FS_ROOT_DENTRY_OFF";
}
