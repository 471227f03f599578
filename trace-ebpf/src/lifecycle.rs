//! Keeping the pid maps in step with live tasks, on the raw `sched` tracepoints (rare
//! events). Raw, not the classic ones: no record is built for them, and detaching them
//! does not wait for the grace periods a perf event's release does (~60 ms at every
//! exit of rtrace). Their arguments are the kernel's own structs; the loader passes
//! the offsets of the fields read, from the kernel's BTF.

use aya_ebpf::{
    helpers::{bpf_get_current_pid_tgid, bpf_get_current_task, bpf_probe_read_kernel},
    macros::raw_tracepoint,
    programs::RawTracePointContext,
};
use aya_log_ebpf::{debug, warn};
use trace_common::maps::{
    CLASS_VFORK, COUNTER_COMPAT_EXECS, COUNTER_LOST_HANDOFF, COUNTER_LOST_TASKS, FILTER_UNTIL_EXEC,
    GROUP_EXIT_FIELD, GROUP_EXIT_LIVE, HANDOFFS_GIVEN, HANDOFFS_SETTLED, TRACE_ARM_ON_EXEC,
};

use crate::{
    maps::{
        BPRM_BUF_OFF, BPRM_FILENAME_OFF, FOLLOW_AT_FORK, FORK_HANDOFF, GROUP_EXIT_BY, INFLIGHT,
        INHERIT, KEY_BY_TID, PIDNS_INO, PIDS_FILTERED, PIDS_TO_TRACE, SIGNAL_LIVE_OFF,
        TASK_PID_OFF, TASK_SIGNAL_OFF, TASK_TGID_OFF, TRACE_ALL, bump, filtered_remove,
        handoffs_bump, handoffs_waiting, trace_insert, trace_remove,
    },
    summary,
    syscalls::{emit_vfork_child, waits_for_its_child},
    task::{Ids, current_ids},
};

/// Runs in the parent. The child's `pid` is the kernel's number for it, which the
/// parent's namespace may number differently, so a traced parent hands the child off
/// (`fork_handoff`, keyed by the kernel's tid) to its first return to user space
/// (`syscalls::adopt_forked_child`).
#[raw_tracepoint(tracepoint = "sched_process_fork")]
pub fn sched_process_fork(ctx: RawTracePointContext) -> i32 {
    let _ = on_fork(&ctx);
    0
}

#[inline(always)]
fn on_fork(ctx: &RawTracePointContext) -> Option<()> {
    // TP_PROTO(struct task_struct *parent, struct task_struct *child)
    let task = ctx.arg::<*const u8>(1);
    // SAFETY: a probe read of the child's `pid_t pid`, at its offset in this kernel's
    // task_struct; a bad address makes the helper fail, never fault.
    let child =
        unsafe { bpf_probe_read_kernel(task.add(TASK_PID_OFF.load() as usize).cast::<i32>()) }
            .ok()? as u32;
    if PIDNS_INO.load() == 0 {
        // The child's number is new: an entry under it was left by a task that has died
        // since, and must not make this unrelated task a target (or hide it).
        trace_remove(child);
        filtered_remove(child);
    }
    link_vfork_child(task, child);
    if TRACE_ALL.load() != 0 || INHERIT.load() == 0 {
        return None;
    }
    let ids = current_ids()?;
    // SAFETY: a u32 value, copied.
    let flags = unsafe { PIDS_TO_TRACE.get(ids.trace_key()) }.copied()?;
    if FOLLOW_AT_FORK.load() != 0 {
        follow_at_fork(ctx, &ids, task, child, flags & !TRACE_ARM_ON_EXEC);
        return Some(());
    }
    if FORK_HANDOFF
        .insert(child, flags & !TRACE_ARM_ON_EXEC, 0)
        .is_err()
    {
        bump(COUNTER_LOST_HANDOFF);
        warn!(
            ctx,
            "task {} forked {} (the kernel's number), which is not traced: the hand-off map is full",
            ids.tid,
            child
        );
        return None;
    }
    handoffs_bump(HANDOFFS_GIVEN);
    debug!(
        ctx,
        "task {} forked {} (the kernel's number): handed off", ids.tid, child
    );
    Some(())
}

/// A traced task that forks in vfork (or a clone with CLONE_VFORK) waits for this
/// child until it execs or exits, so the child's records come before the parent's
/// return: the parent says now, ahead of them, whose child it is
/// (`record::KIND_VFORK_CHILD`), for the reader to give it the parent's fds and
/// directory before its own calls. Only where rtrace's pid numbers are the kernel's
/// (the child's number in rtrace's namespace is not known yet elsewhere: the reader
/// then waits for the parent's return). A function of its own, off the fork's
/// common path.
#[inline(never)]
fn link_vfork_child(task: *const u8, child: u32) -> Option<()> {
    if !summary::wants_records() || PIDNS_INO.load() != 0 {
        return None;
    }
    let call = INFLIGHT.current(false)?;
    // Only a traced task's call is in its storage. vfork's parent waits; clone's and
    // clone3's when their flags say so.
    let waits = call.class & CLASS_VFORK != 0 || waits_for_its_child(call.class, &call.args);
    if call.enter_ns == 0 || !waits {
        return None;
    }
    // SAFETY: a probe read of the child's `pid_t tgid`, as in follow_at_fork. A thread
    // is no new process.
    let tgid =
        unsafe { bpf_probe_read_kernel(task.add(TASK_TGID_OFF.load() as usize).cast::<i32>()) };
    if tgid.ok() != Some(child as i32) {
        return None;
    }
    let ids = current_ids()?;
    emit_vfork_child(&ids, child);
    Some(())
}

/// The child of a traced task becomes a target at once, when its number here is the
/// kernel's (rtrace in the initial pid namespace) and no syscall exit will adopt it
/// (with `-e`, only the chosen calls run a program: a child that made none of them
/// would never be adopted, nor its own children followed). A new thread of a process
/// keyed by its tgid is a target already.
#[inline(always)]
fn follow_at_fork(ctx: &RawTracePointContext, ids: &Ids, task: *const u8, child: u32, flags: u32) {
    if KEY_BY_TID.load() == 0 {
        // SAFETY: a probe read of the child's `pid_t tgid`, as for its pid.
        let tgid =
            unsafe { bpf_probe_read_kernel(task.add(TASK_TGID_OFF.load() as usize).cast::<i32>()) };
        if tgid.ok() != Some(child as i32) {
            return;
        }
    }
    if trace_insert(child, flags, 0).is_err() {
        bump(COUNTER_LOST_TASKS);
        warn!(
            ctx,
            "task {} forked {}, which is not traced: pids_to_trace is full", ids.tid, child
        );
    }
}

/// Runs in the exiting task.
#[raw_tracepoint(tracepoint = "sched_process_exit")]
pub fn sched_process_exit(ctx: RawTracePointContext) -> i32 {
    let _ = on_task_exit(&ctx);
    0
}

#[inline(always)]
fn on_task_exit(ctx: &RawTracePointContext) -> Option<()> {
    let kernel_tid = bpf_get_current_pid_tgid() as u32;
    if handoffs_waiting() && FORK_HANDOFF.remove(kernel_tid).is_ok() {
        handoffs_bump(HANDOFFS_SETTLED);
    }
    let ids = current_ids()?;
    if KEY_BY_TID.load() != 0 {
        trace_remove(ids.tid);
    }
    if group_dead(ctx, &ids) {
        trace_remove(ids.pid);
        filtered_remove(ids.pid);
    }
    Some(())
}

/// Is the exiting task the last of its thread group? A process stays a target until
/// its last thread exits, whichever thread that is (the leader may go first, with
/// `pthread_exit` or when another thread execs).
#[inline(always)]
fn group_dead(ctx: &RawTracePointContext, ids: &Ids) -> bool {
    match GROUP_EXIT_BY.load() {
        // TP_PROTO(struct task_struct *p, bool group_dead), where the kernel has it.
        GROUP_EXIT_FIELD => return ctx.arg::<u64>(1) & 0xff != 0,
        GROUP_EXIT_LIVE => {
            if let Some(live) = live_threads() {
                return live <= 0;
            }
        }
        _ => {}
    }
    // Nothing better: the leader's exit stands for the group's.
    ids.tid == ids.pid
}

/// `current->signal->live`: do_exit has already taken the exiting thread off it.
#[inline(always)]
fn live_threads() -> Option<i32> {
    // SAFETY: the helper has no preconditions.
    let task = unsafe { bpf_get_current_task() } as *const u8;
    // SAFETY: probe reads of kernel memory, at offsets from this kernel's BTF; a bad
    // address makes the helper fail, never fault.
    unsafe {
        let signal: *const u8 =
            bpf_probe_read_kernel(task.add(TASK_SIGNAL_OFF.load() as usize) as *const *const u8)
                .ok()?;
        bpf_probe_read_kernel(signal.add(SIGNAL_LIVE_OFF.load() as usize) as *const i32).ok()
    }
}

/// Runs in the task that has just exec'd, before execve returns: keeps the path it
/// exec'd (the kernel's copy) for the execve record.
#[raw_tracepoint(tracepoint = "sched_process_exec")]
pub fn sched_process_exec(ctx: RawTracePointContext) -> i32 {
    let _ = on_exec(&ctx);
    0
}

#[inline(always)]
fn on_exec(ctx: &RawTracePointContext) -> Option<()> {
    // TP_PROTO(struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
    let kernel_tid = bpf_get_current_pid_tgid() as u32;
    let old_tid = ctx.arg::<u64>(1) as u32;
    if old_tid != kernel_tid {
        debug!(
            ctx,
            "thread {} exec'd and took its leader's number {} (the kernel's numbers)",
            old_tid,
            kernel_tid
        );
        took_over_leader(old_tid, kernel_tid);
        // It took the leader's number and start time: those its storage kept are no
        // more.
        if let Some(call) = INFLIGHT.current(false) {
            call.start_ns = 0;
            call.tid = 0;
        }
    }
    let ids = current_ids()?;
    // SAFETY: a u32 value, copied.
    if unsafe { PIDS_FILTERED.get(ids.pid) }.copied() == Some(FILTER_UNTIL_EXEC) {
        filtered_remove(ids.pid);
    }
    // A held workload whose execve entry ran no program (`-e` without execve) is armed
    // here, as its exec succeeds.
    // SAFETY: a u32 value, copied.
    if let Some(flags) = unsafe { PIDS_TO_TRACE.get(ids.trace_key()) }.copied()
        && flags & TRACE_ARM_ON_EXEC != 0
    {
        let _ = trace_insert(ids.trace_key(), flags & !TRACE_ARM_ON_EXEC, 0);
    }
    crate::task::target_flags(&ids)?;
    let bprm = ctx.arg::<*const u8>(2);
    if runs_32_bit(bprm) {
        bump(COUNTER_COMPAT_EXECS);
    }
    if !crate::summary::wants_records() {
        return None;
    }
    // SAFETY: a probe read of `const char *filename` at its offset in this kernel's
    // linux_binprm.
    let src = unsafe {
        bpf_probe_read_kernel(
            bprm.add(BPRM_FILENAME_OFF.load() as usize)
                .cast::<*const u8>(),
        )
    }
    .ok()?;
    crate::augment::keep_exec_file(kernel_tid, src);
    Some(())
}

/// Whether the program an exec runs is a 32-bit ELF for the 32-bit side of this
/// machine (i386 or ARM), read from the header the kernel loaded it from
/// (`linux_binprm.buf`; for a script, its interpreter's).
#[inline(always)]
fn runs_32_bit(bprm: *const u8) -> bool {
    const EM_386: u16 = 3;
    const EM_ARM: u16 = 40;
    // SAFETY: a probe read of the header's first 20 bytes (ident, type, machine) at
    // `buf`'s offset in this kernel's linux_binprm.
    let Ok(h) = (unsafe {
        bpf_probe_read_kernel(bprm.add(BPRM_BUF_OFF.load() as usize).cast::<[u8; 20]>())
    }) else {
        return false;
    };
    let machine = u16::from_le_bytes([h[18], h[19]]);
    h[0] == 0x7f
        && h[1] == b'E'
        && h[2] == b'L'
        && h[3] == b'F'
        && h[4] == 1
        && (machine == EM_386 || machine == EM_ARM)
}

/// A thread other than the leader exec'd: the kernel has killed the old leader and
/// given this thread the leader's tid. What was kept under its old tid moves to the new
/// one, and nothing is left under a tid that the next task to get it would inherit
/// (execve's entry is in the task's own storage, which needs no move).
#[inline(always)]
fn took_over_leader(old_tid: u32, kernel_tid: u32) {
    // Keyed by thread (-t, --no-inherit): the thread is still the target under its new
    // tid. Both numbers are the kernel's, which are rtrace's only in the initial pid
    // namespace.
    if KEY_BY_TID.load() != 0 && PIDNS_INO.load() == 0 {
        // SAFETY: a u32 value, copied.
        if let Some(flags) = unsafe { PIDS_TO_TRACE.get(old_tid) }.copied() {
            let _ = trace_insert(kernel_tid, flags, 0);
            trace_remove(old_tid);
        }
    }
}
