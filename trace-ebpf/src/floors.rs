//! The floors `cargo xtask bench` sets rtrace against: programs on the same hooks that do
//! (almost) nothing, so that what a hook costs by itself is told apart from what rtrace
//! does in it. Loaded only by the `rtrace-floor` binary; rtrace never loads them.
//!
//! - count: `sys_enter`/`sys_exit` raw tracepoints that bump a per-CPU counter;
//! - duration: the same, plus two clock reads and the start time kept in task storage
//!   (the least a tracer that reports durations does);
//! - openat: `syscalls:sys_enter_openat`/`sys_exit_openat` that bump the counter (the
//!   cost of the per-syscall tracepoints for the calls they do not hook).

use aya_ebpf::{
    helpers::bpf_ktime_get_ns,
    macros::{btf_map, map, raw_tracepoint, tracepoint},
    maps::PerCpuArray,
    programs::{RawTracePointContext, TracePointContext},
};

use crate::task_storage::TaskStorage;

/// Slot 0: events seen; slot 1: nanoseconds between entries and exits.
#[map(name = "floor_counts")]
static FLOOR_COUNTS: PerCpuArray<u64> = PerCpuArray::with_max_entries(2, 0);

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

#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn floor_duration_enter(_ctx: RawTracePointContext) -> i32 {
    if let Some(started) = FLOOR_STARTED.current(true) {
        // SAFETY: the helper has no preconditions.
        *started = unsafe { bpf_ktime_get_ns() };
    }
    add(0, 1);
    0
}

#[raw_tracepoint(tracepoint = "sys_exit")]
pub fn floor_duration_exit(_ctx: RawTracePointContext) -> i32 {
    if let Some(started) = FLOOR_STARTED.current(false)
        && *started != 0
    {
        // SAFETY: as above.
        let now = unsafe { bpf_ktime_get_ns() };
        add(1, now.saturating_sub(*started));
        *started = 0;
    }
    add(0, 1);
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
