//! Keeping the pid maps in step with live tasks, on the classic `sched` tracepoints
//! (rare events; their record layouts come from tracefs, offsets set by the loader).

use aya_ebpf::{
    EbpfContext, helpers::bpf_get_current_pid_tgid, macros::tracepoint, programs::TracePointContext,
};
use trace_common::maps::{COUNTER_LOST_TASKS, FILTER_UNTIL_EXEC, TRACE_ARM_ON_EXEC};

use crate::{
    maps::{
        EXEC_FILENAME_OFF, EXIT_GROUP_DEAD_OFF, FORK_CHILD_PID_OFF, FORK_HANDOFF, INFLIGHT,
        INHERIT, KEY_BY_TID, PIDNS_INO, PIDS_FILTERED, PIDS_TO_TRACE, TRACE_ALL, bump,
        handoff_gauge, handoff_gauge_add,
    },
    task::current_ids,
};

/// Runs in the parent. `child_pid` is the kernel's number for the child, which the
/// parent's namespace may number differently, so a traced parent hands the child off
/// (`fork_handoff`, keyed by the kernel's tid) to its first return to user space
/// (`syscalls::adopt_forked_child`).
#[tracepoint(category = "sched", name = "sched_process_fork")]
pub fn sched_process_fork(ctx: TracePointContext) -> u32 {
    let _ = on_fork(&ctx);
    0
}

#[inline(always)]
fn on_fork(ctx: &TracePointContext) -> Option<()> {
    // SAFETY: the offset of `pid_t child_pid` in this tracepoint's record (tracefs).
    let child = unsafe { ctx.read_at::<i32>(FORK_CHILD_PID_OFF.load() as usize) }.ok()? as u32;
    if PIDNS_INO.load() == 0 {
        // The child's number is new: an entry under it was left by a task that has died
        // since, and must not make this unrelated task a target (or hide it).
        let _ = PIDS_TO_TRACE.remove(child);
        let _ = PIDS_FILTERED.remove(child);
    }
    if TRACE_ALL.load() != 0 || INHERIT.load() == 0 {
        return None;
    }
    let ids = current_ids()?;
    // SAFETY: a u32 value, copied.
    let flags = unsafe { PIDS_TO_TRACE.get(ids.trace_key()) }.copied()?;
    if FORK_HANDOFF
        .insert(child, flags & !TRACE_ARM_ON_EXEC, 0)
        .is_err()
    {
        bump(COUNTER_LOST_TASKS);
        return None;
    }
    handoff_gauge_add(1);
    Some(())
}

/// Runs in the exiting task.
#[tracepoint(category = "sched", name = "sched_process_exit")]
pub fn sched_process_exit(ctx: TracePointContext) -> u32 {
    let _ = on_task_exit(&ctx);
    0
}

#[inline(always)]
fn on_task_exit(ctx: &TracePointContext) -> Option<()> {
    let kernel_tid = bpf_get_current_pid_tgid() as u32;
    let _ = INFLIGHT.remove(kernel_tid);
    if handoff_gauge() != 0 && FORK_HANDOFF.remove(kernel_tid).is_ok() {
        handoff_gauge_add(u64::MAX);
    }
    let ids = current_ids()?;
    let off = EXIT_GROUP_DEAD_OFF.load();
    let group_dead = if off != 0 {
        // SAFETY: the offset of `bool group_dead` in this tracepoint's record.
        unsafe { ctx.read_at::<u8>(off as usize) }.ok()? != 0
    } else {
        // No group_dead field (older kernels): the leader's exit stands for the group.
        ids.tid == ids.pid
    };
    if KEY_BY_TID.load() != 0 {
        let _ = PIDS_TO_TRACE.remove(ids.tid);
    }
    if group_dead {
        let _ = PIDS_TO_TRACE.remove(ids.pid);
        let _ = PIDS_FILTERED.remove(ids.pid);
    }
    Some(())
}

/// Runs in the task that has just exec'd, before execve returns: keeps the path it
/// exec'd (the kernel's copy) for the execve record.
#[tracepoint(category = "sched", name = "sched_process_exec")]
pub fn sched_process_exec(ctx: TracePointContext) -> u32 {
    let _ = on_exec(&ctx);
    0
}

#[inline(always)]
fn on_exec(ctx: &TracePointContext) -> Option<()> {
    let ids = current_ids()?;
    // SAFETY: a u32 value, copied.
    if unsafe { PIDS_FILTERED.get(ids.pid) }.copied() == Some(FILTER_UNTIL_EXEC) {
        let _ = PIDS_FILTERED.remove(ids.pid);
    }
    if !crate::summary::wants_records() {
        return None;
    }
    crate::task::target_flags(&ids)?;
    // SAFETY: `__data_loc char[] filename`: (length << 16) | offset in the record.
    let loc = unsafe { ctx.read_at::<u32>(EXEC_FILENAME_OFF.load() as usize) }.ok()?;
    let off = (loc & 0xffff) as usize;
    // SAFETY: the offset points inside the tracepoint's record.
    let src = unsafe { (ctx.as_ptr() as *const u8).add(off) };
    crate::augment::keep_exec_file(bpf_get_current_pid_tgid() as u32, src);
    Some(())
}
