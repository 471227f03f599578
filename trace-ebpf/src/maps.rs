//! The maps and load-time globals. Names match `trace_common::maps`.

use aya_ebpf::{
    Global,
    macros::{btf_map, map},
    maps::{Array, HashMap, PerCpuArray, RingBuf},
};
use trace_common::{
    maps::{
        CLASS_SELECTED, COUNTER_SLOTS, HANDOFFS_GIVEN, HANDOFFS_SETTLED, MAX_CPUS, PID_MAP_ENTRIES,
        SYSCALL_INDEXES,
    },
    record::InflightCall,
};

use crate::task_storage::TaskStorage;

#[map(name = "pids_to_trace")]
pub static PIDS_TO_TRACE: HashMap<u32, u32> = HashMap::with_max_entries(PID_MAP_ENTRIES, 0);

#[map(name = "pids_filtered")]
pub static PIDS_FILTERED: HashMap<u32, u32> = HashMap::with_max_entries(PID_MAP_ENTRIES, 0);

/// The rings (`trace_common::maps::RINGS`), sized by the loader (`-m`); the programs
/// write `RING_COUNT` of them, chosen by CPU (`rings.rs`). The first one's default
/// is what `rtrace-floor` uses; the others are the least a ring can be until the
/// loader sizes them.
#[map(name = "events")]
pub static EVENTS: RingBuf = RingBuf::with_byte_size(8 << 20, 0);
#[map(name = "events_1")]
pub static EVENTS_1: RingBuf = RingBuf::with_byte_size(4096, 0);
#[map(name = "events_2")]
pub static EVENTS_2: RingBuf = RingBuf::with_byte_size(4096, 0);
#[map(name = "events_3")]
pub static EVENTS_3: RingBuf = RingBuf::with_byte_size(4096, 0);
#[map(name = "events_4")]
pub static EVENTS_4: RingBuf = RingBuf::with_byte_size(4096, 0);
#[map(name = "events_5")]
pub static EVENTS_5: RingBuf = RingBuf::with_byte_size(4096, 0);
#[map(name = "events_6")]
pub static EVENTS_6: RingBuf = RingBuf::with_byte_size(4096, 0);
#[map(name = "events_7")]
pub static EVENTS_7: RingBuf = RingBuf::with_byte_size(4096, 0);
#[unsafe(no_mangle)]
pub static RING_COUNT: Global<u32> = Global::new(1);

/// `trace_common::maps::READER_ASLEEP`.
#[map(name = "reader_asleep")]
pub static READER_ASLEEP: Array<u32> = Array::with_max_entries(1, 0);

/// Per thread: the syscall it is in, from sys_enter to sys_exit.
#[btf_map(name = "inflight")]
pub static INFLIGHT: TaskStorage<InflightCall> = TaskStorage::new();

/// Forked children of traced tasks (kernel tid -> the parent's flags), waiting for the
/// child's first return to user space, where its pid in rtrace's namespace is known.
#[map(name = "fork_handoff")]
pub static FORK_HANDOFF: HashMap<u32, u32> = HashMap::with_max_entries(4096, 0);

/// Each syscall's `CLASS_*` bits, by syscall index.
#[map(name = "syscall_class")]
pub static SYSCALL_CLASS: Array<u32> = Array::with_max_entries(SYSCALL_INDEXES, 0);

#[unsafe(no_mangle)]
pub static SELECTIVE: Global<u32> = Global::new(0);

#[inline(always)]
pub fn class_of(nr: u32) -> u32 {
    SYSCALL_CLASS.get(nr).copied().unwrap_or(0)
}

/// `-C`: the CPUs watched.
#[map(name = "cpus")]
pub static CPUS: Array<u32> = Array::with_max_entries(MAX_CPUS, 0);

#[unsafe(no_mangle)]
pub static CPU_FILTER: Global<u32> = Global::new(0);

/// Whether `-e` (and `-C`) let a syscall of this class, on this CPU, through.
#[inline(always)]
pub fn selected(class: u32) -> bool {
    (SELECTIVE.load() == 0 || class & CLASS_SELECTED != 0) && on_watched_cpu()
}

#[inline(always)]
fn on_watched_cpu() -> bool {
    if CPU_FILTER.load() == 0 {
        return true;
    }
    // SAFETY: the helper has no preconditions.
    let cpu = unsafe { aya_ebpf::helpers::bpf_get_smp_processor_id() };
    CPUS.get(cpu).is_some_and(|v| *v != 0)
}

/// Per-CPU counters, indexed by `trace_common::maps::COUNTER_*`.
#[map(name = "counters")]
pub static COUNTERS: PerCpuArray<u64> = PerCpuArray::with_max_entries(COUNTER_SLOTS, 0);

/// Two monotonic counts shared by all CPUs (updated atomically): slot 0, children
/// handed off at fork; slot 1, hand-offs settled (adopted into `pids_to_trace`, or
/// the child gone). Equal counts let `sys_exit` skip the hand-off lookup, and let user
/// space tell that no child is on its way in (`trace_common::maps::HANDOFFS`).
#[map(name = "handoffs")]
pub static HANDOFFS: Array<u64> = Array::with_max_entries(2, 0);

/// How many times the kernel side has changed `pids_to_trace` or `pids_filtered`
/// (slot 0, added to atomically). A task keeps what the two maps said of it in its
/// `inflight` storage with the count it was read at, and asks them again only when
/// the count has moved (`task::listed_flags`). User space writes both maps only
/// before the syscall programs are attached (`session::seed`), before any task can
/// keep an answer, so it need not count.
#[map(name = "pid_maps_gen")]
pub static PID_MAPS_GEN: Array<u64> = Array::with_max_entries(1, 0);

/// The change count of the pid maps plus 1, or 0 where it cannot be read (nothing is
/// then kept).
#[inline(always)]
pub fn pid_maps_gen() -> u64 {
    match PID_MAPS_GEN.get_ptr(0) {
        // SAFETY: a live map value, read whole.
        Some(p) => unsafe { core::ptr::read_volatile(p) }.wrapping_add(1),
        None => 0,
    }
}

/// Counts a change to `pids_to_trace` or `pids_filtered`, after it is made: a task
/// that read the maps before it then reads them again.
#[inline(always)]
pub fn pid_maps_changed() {
    if let Some(p) = PID_MAPS_GEN.get_ptr_mut(0) {
        // SAFETY: p points to a live map value.
        unsafe { atomic_add(p, 1) };
    }
}

/// `pids_to_trace.insert`, counted when it succeeds.
#[inline(always)]
pub fn trace_insert(key: u32, flags: u32, how: u64) -> Result<(), i32> {
    let r = PIDS_TO_TRACE.insert(key, flags, how);
    if r.is_ok() {
        pid_maps_changed();
    }
    r
}

/// `pids_to_trace.remove`, counted when there was an entry.
#[inline(always)]
pub fn trace_remove(key: u32) {
    if PIDS_TO_TRACE.remove(key).is_ok() {
        pid_maps_changed();
    }
}

/// `pids_filtered.remove`, counted when there was an entry.
#[inline(always)]
pub fn filtered_remove(key: u32) {
    if PIDS_FILTERED.remove(key).is_ok() {
        pid_maps_changed();
    }
}

#[unsafe(no_mangle)]
pub static TRACE_ALL: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static FILTER_UID: Global<u32> = Global::new(u32::MAX);
#[unsafe(no_mangle)]
pub static CGROUP_ID: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
pub static CGROUP_LEVEL: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static INHERIT: Global<u32> = Global::new(1);
#[unsafe(no_mangle)]
pub static KEY_BY_TID: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static PIDNS_DEV: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
pub static PIDNS_INO: Global<u64> = Global::new(0);
#[unsafe(no_mangle)]
pub static TASK_PID_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static TASK_TGID_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static TASK_START_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static TASK_COMM_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static FOLLOW_AT_FORK: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static GROUP_EXIT_BY: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static TASK_SIGNAL_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static SIGNAL_LIVE_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static BPRM_FILENAME_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static BPRM_BUF_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static WAKEUP_BYTES: Global<u64> = Global::new(1 << 20);
#[unsafe(no_mangle)]
pub static EXEC_ENVP: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static TASK_FILES_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static FILES_FDT_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static FDT_MAX_FDS_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static FDT_FD_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static FILE_INODE_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static INODE_INO_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static TASK_NSPROXY_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static NSPROXY_MNT_NS_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static TASK_FS_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static FS_ROOT_MNT_OFF: Global<u32> = Global::new(0);
#[unsafe(no_mangle)]
pub static FS_ROOT_DENTRY_OFF: Global<u32> = Global::new(0);

#[inline(always)]
pub fn bump(slot: u32) {
    if let Some(p) = COUNTERS.get_ptr_mut(slot) {
        // SAFETY: a per-CPU slot, only this CPU writes it while the program runs.
        unsafe { *p += 1 };
    }
}

/// Children handed off and not yet settled.
#[inline(always)]
pub fn handoffs_waiting() -> bool {
    let count = |slot| HANDOFFS.get(slot).copied().unwrap_or(0);
    count(HANDOFFS_GIVEN) != count(HANDOFFS_SETTLED)
}

#[inline(always)]
pub fn handoffs_bump(slot: u32) {
    if let Some(p) = HANDOFFS.get_ptr_mut(slot) {
        // SAFETY: p points to a live map value.
        unsafe { atomic_add(p, 1) };
    }
}

/// Adds to a u64 atomically against other CPUs and returns what it held before
/// (BPF_ATOMIC with BPF_FETCH, Linux 5.12).
///
/// # Safety
/// `p` must point to a live, 8-byte aligned u64 (a map value).
#[inline(always)]
pub unsafe fn atomic_fetch_add(p: *mut u64, delta: u64) -> u64 {
    let mut v = delta;
    unsafe {
        core::arch::asm!(
            "{v} = atomic_fetch_add((u64 *)({p} + 0), {v})",
            p = in(reg) p,
            v = inout(reg) v
        );
    }
    v
}

/// Adds to a u64 atomically against other CPUs (BPF_XADD; core's AtomicU64 has no
/// fetch operations on the BPF target).
///
/// # Safety
/// `p` must point to a live, 8-byte aligned u64 (a map value).
#[inline(always)]
pub unsafe fn atomic_add(p: *mut u64, delta: u64) {
    unsafe {
        core::arch::asm!("lock *(u64 *)({p} + 0) += {d}", p = in(reg) p, d = in(reg) delta);
    }
}
