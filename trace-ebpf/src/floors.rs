//! The floors `cargo xtask bench` sets rtrace against: programs on the same hooks that do
//! (almost) nothing, so that what a hook costs by itself is told apart from what rtrace
//! does in it. Loaded only by the `rtrace-floor` binary; rtrace never loads them.
//!
//! - count: `sys_enter`/`sys_exit` raw tracepoints that bump a per-CPU counter;
//! - duration: the same, plus two clock reads and the start time kept in task storage
//!   (the least a tracer that reports durations does);
//! - openat: `syscalls:sys_enter_openat`/`sys_exit_openat` that bump the counter (the
//!   cost of the per-syscall tracepoints for the calls they do not hook);
//! - ring: the duration floor, and at each exit a record of rtrace's size sent through
//!   rtrace's rings (its CPU's, as rtrace chooses it: `rings.rs`) with no wake-up, which
//!   `rtrace-floor` takes and throws away: the least a tracer that shows every call pays
//!   to get it to user space.

use aya_ebpf::{
    EbpfContext,
    bindings::BPF_RB_NO_WAKEUP,
    helpers::{bpf_get_current_pid_tgid, bpf_ktime_get_ns},
    macros::{btf_map, map, raw_tracepoint, tracepoint},
    maps::PerCpuArray,
    programs::{RawTracePointContext, TracePointContext},
};
use trace_common::record::{KIND_SYSCALL, REC_HAS_ENTRY, REC_HAS_EXIT, SyscallRecord};

use crate::{rings, task_storage::TaskStorage};

/// Slot 0: events seen; slot 1: nanoseconds between entries and exits; slot 2: the
/// ring floor's records that found the ring full.
#[map(name = "floor_counts")]
static FLOOR_COUNTS: PerCpuArray<u64> = PerCpuArray::with_max_entries(3, 0);

#[btf_map(name = "floor_started")]
static FLOOR_STARTED: TaskStorage<u64> = TaskStorage::new();

#[inline(always)]
fn add(slot: u32, v: u64) {
    if let Some(p) = FLOOR_COUNTS.get_ptr_mut(slot) {
        // SAFETY: a per-CPU slot, written only by this CPU while the program runs.
        unsafe { *p += v };
    }
}

#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn floor_count_enter(_ctx: RawTracePointContext) -> i32 {
    add(0, 1);
    0
}

#[raw_tracepoint(tracepoint = "sys_exit")]
pub fn floor_count_exit(_ctx: RawTracePointContext) -> i32 {
    add(0, 1);
    0
}

/// The duration floor's entry: the time kept in the task's storage.
#[inline(always)]
fn start() {
    if let Some(started) = FLOOR_STARTED.current(true) {
        // SAFETY: the helper has no preconditions.
        *started = unsafe { bpf_ktime_get_ns() };
    }
    add(0, 1);
}

#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn floor_duration_enter(_ctx: RawTracePointContext) -> i32 {
    start();
    0
}

/// The duration floor's exit: the time inside the call added up; its entry and exit
/// times when the entry was seen.
#[inline(always)]
fn stop() -> Option<(u64, u64)> {
    let mut times = None;
    if let Some(started) = FLOOR_STARTED.current(false)
        && *started != 0
    {
        // SAFETY: the helper has no preconditions.
        let now = unsafe { bpf_ktime_get_ns() };
        add(1, now.saturating_sub(*started));
        times = Some((*started, now));
        *started = 0;
    }
    add(0, 1);
    times
}

#[raw_tracepoint(tracepoint = "sys_exit")]
pub fn floor_duration_exit(_ctx: RawTracePointContext) -> i32 {
    stop();
    0
}

#[tracepoint(category = "syscalls", name = "sys_enter_openat")]
pub fn floor_openat_enter(_ctx: TracePointContext) -> u32 {
    add(0, 1);
    0
}

#[tracepoint(category = "syscalls", name = "sys_exit_openat")]
pub fn floor_openat_exit(_ctx: TracePointContext) -> u32 {
    add(0, 1);
    0
}

#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn floor_ring_enter(_ctx: RawTracePointContext) -> i32 {
    start();
    0
}

#[raw_tracepoint(tracepoint = "sys_exit")]
pub fn floor_ring_exit(ctx: RawTracePointContext) -> i32 {
    let Some((enter_ns, exit_ns)) = stop() else {
        return 0;
    };
    let id = bpf_get_current_pid_tgid();
    // SAFETY: sys_exit's second argument is the return value.
    let ret = unsafe { *(ctx.as_ptr() as *const u64).add(1) } as i64;
    let Some((mut slot, _wake)) = rings::reserve::<SyscallRecord>() else {
        add(2, 1);
        return 0;
    };
    let p = slot.as_mut_ptr();
    // SAFETY: `p` is the reservation, sized and aligned for a SyscallRecord. Only the
    // fields a duration needs are written: the reader looks at none of them.
    unsafe {
        (&raw mut (*p).kind).write(KIND_SYSCALL);
        (&raw mut (*p).flags).write(REC_HAS_ENTRY | REC_HAS_EXIT);
        (&raw mut (*p).tid).write(id as u32);
        (&raw mut (*p).pid).write((id >> 32) as u32);
        (&raw mut (*p).enter_ns).write(enter_ns);
        (&raw mut (*p).exit_ns).write(exit_ns);
        (&raw mut (*p).ret).write(ret);
    }
    slot.submit(BPF_RB_NO_WAKEUP as u64);
    0
}
