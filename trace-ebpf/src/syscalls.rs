//! The syscall programs, on the raw `sys_enter` / `sys_exit` tracepoints (cheaper than
//! the classic `raw_syscalls:*` ones: no trace-event record is built for us), as
//! BTF-typed programs (`tp_btf`), whose registers are read without a helper call.
//!
//! sys_enter keeps the call's number, arguments and start time per thread; sys_exit
//! joins them with the return value into one ring-buffer record. Calls that never
//! return (exit, exit_group) are recorded at entry.

use aya_ebpf::{
    EbpfContext,
    bindings::BPF_NOEXIST,
    helpers::{bpf_get_current_pid_tgid, bpf_ktime_get_ns, bpf_probe_read_user},
    macros::{btf_tracepoint, fentry, fexit, tracepoint},
    programs::{BtfTracePointContext, FEntryContext, FExitContext, TracePointContext},
};
use aya_log_ebpf::warn;
use trace_common::{
    augment::{AUG_NO_ARG, AugPlan},
    maps::{
        ARM_PRIVATE_BASE, ARM_PRIVATE_INDEX, ARM_PRIVATE_SLOTS, CLASS_BLOCKING, CLASS_EXEC,
        CLASS_EXIT, CLASS_FORK, CLASS_VFORK_IN_ARG, CLASS_VFORK_IN_STRUCT, CLONE_VFORK,
        COMPAT_BASE, COUNTER_DROPPED, COUNTER_LOST_TASKS, COUNTER_LOST_UNSEEN, HANDOFFS_SETTLED,
        STRAY_NR, SYSCALL_INDEXES, TRACE_ARM_ON_EXEC,
    },
    record::{
        InflightCall, KIND_EXEC_ENV, KIND_EXEC_READS, KIND_SYSCALL, KIND_VFORK_CHILD,
        REC_HAS_ENTRY, REC_HAS_EXIT, REC_PENDING, STACK_KERNEL_SYSCALLS, SyscallRecord,
    },
};

use crate::{
    augment,
    maps::{
        EXEC_ENVP, FORK_HANDOFF, INFLIGHT, bump, class_of, handoffs_bump, handoffs_waiting,
        selected, trace_insert,
    },
    regs::{compat_syscall_args, is_compat, sigreturn_mask, syscall_args, syscall_nr, user_sp},
    rings, summary,
    task::{Ids, current_ids, target_flags, target_flags_kept},
};

/// The syscall index of a number seen in `regs`' task (see `maps::COMPAT_BASE`).
#[inline(always)]
fn syscall_index(nr: u32, compat: bool) -> u32 {
    if compat && nr < COMPAT_BASE {
        COMPAT_BASE + nr
    } else if cfg!(bpf_target_arch = "aarch64")
        && compat
        && nr.wrapping_sub(ARM_PRIVATE_BASE) < ARM_PRIVATE_SLOTS
    {
        ARM_PRIVATE_INDEX + (nr - ARM_PRIVATE_BASE)
    } else if (COMPAT_BASE..SYSCALL_INDEXES).contains(&nr) {
        // No call has it: not to be taken for one of the 32-bit indexes.
        nr | STRAY_NR
    } else {
        nr
    }
}

#[inline(always)]
fn now_ns() -> u64 {
    // SAFETY: the helper has no preconditions.
    unsafe { bpf_ktime_get_ns() }
}

#[btf_tracepoint(function = "sys_enter")]
pub fn sys_enter(ctx: BtfTracePointContext) -> i32 {
    // TP_PROTO(struct pt_regs *regs, long id)
    let regs = ctx.arg::<*const u8>(0);
    let compat = is_compat(regs);
    let raw_nr = ctx.arg::<u64>(1) as u32;
    let _ = on_enter(&ctx, syscall_index(raw_nr, compat), || {
        let mut args = if compat {
            compat_syscall_args(regs)?
        } else {
            syscall_args(regs)?
        };
        // rt_sigreturn has no arguments; its first slot carries where the mask it
        // restores lies (the reader shows it as `mask`).
        if let Some(mask) = sigreturn_mask(regs, raw_nr, compat) {
            args[0] = mask;
        }
        Some(args)
    });
    0
}

#[btf_tracepoint(function = "sys_exit")]
pub fn sys_exit(ctx: BtfTracePointContext) -> i32 {
    // TP_PROTO(struct pt_regs *regs, long ret)
    let regs = ctx.arg::<*const u8>(0);
    let _ = on_exit(&ctx, ctx.arg::<i64>(1), Some(regs), || {
        Some(syscall_index(syscall_nr(regs)?, is_compat(regs)))
    });
    0
}

/// The entry of one chosen syscall, from its own event (`syscalls:sys_enter_<name>`,
/// which the loader attaches this program to for each call `-e` chose): the other
/// calls run no program at all. The record: `int __syscall_nr` at 8, the arguments
/// from 16, 8 bytes each (slots past the call's own arguments hold whatever follows
/// the record, and the reader never shows them). The kernel sends no such event for a
/// 32-bit task's calls.
#[tracepoint]
pub fn sys_enter_event(ctx: TracePointContext) -> u32 {
    // SAFETY: offsets of the syscall events' records (tracefs), read with a probe read.
    let nr = unsafe { ctx.read_at::<i32>(8) }.ok().map(|n| n as u32);
    if let Some(nr) = nr {
        // SAFETY: as above.
        let _ = on_enter(&ctx, nr, || unsafe { ctx.read_at::<[u64; 6]>(16) }.ok());
    }
    0
}

/// The exit of one chosen syscall (`syscalls:sys_exit_<name>`): `int __syscall_nr` at
/// 8, `long ret` at 16.
#[tracepoint]
pub fn sys_exit_event(ctx: TracePointContext) -> u32 {
    // SAFETY: as in sys_enter_event.
    let fields = unsafe { (ctx.read_at::<i32>(8), ctx.read_at::<i64>(16)) };
    if let (Ok(nr), Ok(ret)) = fields {
        let _ = on_exit(&ctx, ret, None, || Some(nr as u32));
    }
    0
}

/// The entry of one chosen syscall at its own kernel function (`__x64_sys_openat`,
/// `__arm64_sys_openat`: fentry, which the loader loads once for each call `-e` chose,
/// each load naming its function). Unlike the syscall events, nothing is set on the
/// kernel's syscall path: the other calls run exactly as untraced. The function takes
/// the task's registers, BTF-typed, as the raw tracepoint does; only a native task's
/// calls come through it (a 32-bit task's go through `__ia32_sys_*`).
#[fentry]
pub fn sys_enter_fentry(ctx: FEntryContext) -> i32 {
    // long __x64_sys_openat(const struct pt_regs *regs)
    let regs = ctx.arg::<*const u8>(0);
    if let Some(nr) = syscall_nr(regs) {
        let _ = on_enter(&ctx, syscall_index(nr, false), || syscall_args(regs));
    }
    0
}

/// The return of one chosen syscall's kernel function (fexit): its one argument, then
/// the value it returns. Runs before the kernel's work on the way out to user space
/// (signals), as the raw tracepoint does not; the value is the same.
#[fexit]
pub fn sys_exit_fexit(ctx: FExitContext) -> i32 {
    let regs = ctx.arg::<*const u8>(0);
    let _ = on_exit(&ctx, ctx.arg::<i64>(1), None, || {
        Some(syscall_index(syscall_nr(regs)?, false))
    });
    0
}

/// A call's entry: `nr` its syscall index, `read_args` its arguments (read only when a
/// record will show them).
#[inline(always)]
fn on_enter<C: EbpfContext>(
    ctx: &C,
    nr: u32,
    read_args: impl FnOnce() -> Option<[u64; 6]>,
) -> Option<()> {
    let class = class_of(nr);
    let is_exec = class & CLASS_EXEC != 0;
    // Unselected calls stop here, before any task lookup; execve goes on, as it is
    // what starts a held workload's trace.
    if !is_exec && !selected(class) {
        return None;
    }
    let mut storage = INFLIGHT.current(false);
    // The ids the thread's last call kept, or else asked (see `InflightCall::tid`).
    let ids = match storage.as_deref() {
        Some(s) if s.tid != 0 => Ids {
            tid: s.tid,
            pid: s.pid,
        },
        _ => current_ids()?,
    };
    let flags = match target_flags_kept(&ids, &mut storage) {
        Some(flags) => flags,
        None => adopted_at_entry(ctx, &ids)?,
    };
    // A workload rtrace holds: nothing before its execve is its own doing. Its execve
    // is recorded (the exit joins it from the task's storage, whatever the flags); the
    // exec program arms the task once the exec succeeds, so that its tracepoint events
    // start with the exec, as perf's (enabled on exec) do.
    if flags & TRACE_ARM_ON_EXEC != 0 && !is_exec {
        return None;
    }
    if is_exec && !selected(class) {
        return None;
    }
    // A summary alone shows no arguments: they are not read.
    let args = if summary::wants_records() {
        read_args()?
    } else {
        no_args()
    };
    let now = now_ns();
    if class & CLASS_EXIT != 0 {
        summary::account(&ids, storage, nr, 0, 0, true, false);
        emit(REC_HAS_ENTRY, nr, &ids, now, 0, &args, 0);
        return Some(());
    }
    let Some(call) = storage.or_else(|| INFLIGHT.current(true)) else {
        // No storage for the entry: report the call now rather than lose it.
        summary::account(&ids, None, nr, 0, 0, true, false);
        emit(REC_HAS_ENTRY, nr, &ids, now, 0, &args, 0);
        return Some(());
    };
    // Field by field: what the pid maps said of the task stays.
    call.nr = nr;
    call.class = class;
    call.enter_ns = now;
    call.tid = ids.tid;
    call.pid = ids.pid;
    // SAFETY: two distinct [u64; 6]: a copy the BPF backend writes out as loads and
    // stores, where an assignment was a call to the object's byte-at-a-time memmove.
    unsafe { core::ptr::copy_nonoverlapping(&args, &mut call.args, 1) };
    // A fork call is blocking only when its parent waits for its child.
    let forks_by_flags = class & (CLASS_VFORK_IN_ARG | CLASS_VFORK_IN_STRUCT) != 0;
    if class & CLASS_BLOCKING != 0 && (!forks_by_flags || waits_for_its_child(class, &args)) {
        emit_pending(nr, &ids, now, &args);
    }
    Some(())
}

/// Six zero arguments, without the call to the object's byte-at-a-time `memset` that
/// `[0u64; 6]` compiles to (the BPF backend here writes memset and memmove out as
/// calls; only memcpy is expanded inline): the zero is read, so no memset is made of
/// the six stores. That memset and the memmove that stored the arguments were a
/// seventh of a getppid storm's time under `-s`.
#[inline(always)]
fn no_args() -> [u64; 6] {
    let zero = 0u64;
    // SAFETY: a read of a live local.
    let z = unsafe { core::ptr::read_volatile(&zero) };
    [z; 6]
}

/// A forked child handed off to its first return to user space, met first at a
/// syscall's entry: on arm64 a new child's return from clone runs no sys_exit, so its
/// first call's entry comes first, and adopting it only at that call's exit lost the
/// entry (the call shown `[continued]`, without its arguments). x86_64's children
/// return from their fork first, and are adopted there.
#[inline(always)]
fn adopted_at_entry<C: EbpfContext>(ctx: &C, ids: &Ids) -> Option<u32> {
    if !handoffs_waiting() {
        return None;
    }
    adopt_forked_child(ctx, bpf_get_current_pid_tgid() as u32);
    target_flags(ids)
}

/// Whether a clone or clone3 asks for CLONE_VFORK, so that the parent waits while its
/// child runs, as a vfork does. Its arguments are those recorded (read only when
/// records are wanted).
#[inline(always)]
pub(crate) fn waits_for_its_child(class: u32, args: &[u64; 6]) -> bool {
    let flags = if class & CLASS_VFORK_IN_ARG != 0 {
        args[0]
    } else if class & CLASS_VFORK_IN_STRUCT != 0 {
        // SAFETY: a probe read of the task's memory; a failed read reads as no flags.
        unsafe { bpf_probe_read_user(args[0] as *const u64) }.unwrap_or(0)
    } else {
        return false;
    };
    flags & CLONE_VFORK != 0
}

/// The entry of a call that may block, for the reader to show as unfinished should
/// other lines come first: with what its plan reads (a connect's address, a sleep's
/// timespec), so that the unfinished line shows what the finished one would. What the
/// call writes is read again at its exit; the reader shows outputs only from there.
#[inline(always)]
fn emit_pending(nr: u32, ids: &Ids, now: u64, args: &[u64; 6]) {
    let flags = REC_HAS_ENTRY | REC_PENDING;
    match augment::plan(nr) {
        Some(plan) if summary::wants_records() => {
            let mut rec = record(flags, nr, ids, now, 0, args, 0);
            if let Some(bytes) = augment::assemble_entry(&mut rec, &plan, args) {
                output(bytes);
            }
        }
        _ => emit(flags, nr, ids, now, 0, args, 0),
    }
}

/// A call's exit: `regs` the task's registers where the hook passes them (the raw
/// tracepoint: a successful exec's reads need its stack pointer; the per-syscall events
/// never see an exec, the loader does not use them then), `nr_of` the syscall index of
/// an exit whose entry was not seen.
#[inline(always)]
fn on_exit<C: EbpfContext>(
    ctx: &C,
    ret: i64,
    regs: Option<*const u8>,
    nr_of: impl FnOnce() -> Option<u32>,
) -> Option<()> {
    if let Some(slot) = INFLIGHT.current(false)
        && slot.enter_ns != 0
    {
        let mut call = *slot;
        slot.enter_ns = 0;
        // The ids kept at entry, but for an exec: a thread that execs takes its
        // leader's number.
        let ids = if call.class & CLASS_EXEC != 0 {
            current_ids()?
        } else {
            Ids {
                tid: call.tid,
                pid: call.pid,
            }
        };
        let now = now_ns();
        summary::account(
            &ids,
            Some(slot),
            call.nr,
            now.saturating_sub(call.enter_ns),
            ret,
            true,
            true,
        );
        if !summary::wants_records() {
            return Some(());
        }
        // After a successful exec the old memory is gone: what the new program
        // received goes out instead, and the call's record carries no reads.
        let exec_done = call.class & CLASS_EXEC != 0 && ret == 0;
        if exec_done && let Some(regs) = regs {
            emit_exec_reads(regs, &ids, call.nr, now, bpf_get_current_pid_tgid() as u32);
        }
        call_chain(ctx, &ids, now);
        // After the reads above: the verifier walks them once, not once for each of
        // the flags' values.
        let mut flags = REC_HAS_ENTRY | REC_HAS_EXIT;
        flags |= crate::fd_inode::fill(call.class, &mut call.args, ret);
        if ret >= 0 {
            flags |= crate::view::mark(call.class);
        }
        if !exec_done && let Some(plan) = augment::plan(call.nr) {
            emit_augmented(&plan, &ids, &call, now, ret, flags);
        } else {
            emit(flags, call.nr, &ids, call.enter_ns, now, &call.args, ret);
        }
        return Some(());
    }
    if handoffs_waiting() {
        adopt_forked_child(ctx, bpf_get_current_pid_tgid() as u32);
    }
    // An exit without its entry: a call that was in progress when tracing began, or a
    // new child's return from clone/fork.
    let nr = nr_of()?;
    let class = class_of(nr);
    if !selected(class) {
        return None;
    }
    let ids = current_ids()?;
    let flags = target_flags(&ids)?;
    if flags & TRACE_ARM_ON_EXEC != 0 {
        return None;
    }
    // A new child's return from clone/fork is shown (as perf does) but is not a call
    // the child made: the summary leaves it out, as strace -c does.
    if !(ret == 0 && class & CLASS_FORK != 0) {
        summary::account(&ids, None, nr, 0, ret, false, true);
    }
    let now = now_ns();
    call_chain(ctx, &ids, now);
    emit(REC_HAS_EXIT, nr, &ids, 0, now, &no_args(), ret);
    Some(())
}

/// A child its traced parent waits for (`record::KIND_VFORK_CHILD`), sent from the
/// parent's fork (see `lifecycle::link_vfork_child`).
#[inline(always)]
pub(crate) fn emit_vfork_child(parent: &Ids, child: u32) {
    let Some((mut slot, wake)) = rings::reserve::<SyscallRecord>() else {
        bump(COUNTER_DROPPED);
        return;
    };
    let args = [u64::from(parent.pid), 0, 0, 0, 0, 0];
    let mut rec = record(0, 0, parent, now_ns(), 0, &args, 0);
    rec.kind = KIND_VFORK_CHILD;
    rec.tid = child;
    rec.pid = child;
    slot.write(rec);
    slot.submit(wake);
}

/// `--call-graph`: the call's frames, sent just before its record.
#[inline(always)]
fn call_chain<C: EbpfContext>(ctx: &C, ids: &Ids, exit_ns: u64) {
    let graph = crate::stacks::wanted();
    if graph != 0 && summary::wants_records() {
        crate::stacks::emit(ctx, ids, graph & STACK_KERNEL_SYSCALLS != 0, exit_ns);
    }
}

const LOST_FULL_MAP: u8 = 0;
const LOST_UNSEEN: u8 = 1;

/// Says why a forked child could not be adopted. A function of its own (a BPF
/// subprogram), so that the log's stack is not added to sys_exit's, which is close to
/// the 512 bytes old kernels allow.
#[inline(never)]
fn log_lost<C: EbpfContext>(ctx: &C, kernel_tid: u32, why: u8) {
    if why == LOST_FULL_MAP {
        warn!(
            ctx,
            "child task {} (the kernel's number) is not traced: pids_to_trace is full", kernel_tid
        );
    } else {
        warn!(
            ctx,
            "child task {} (the kernel's number) is not traced: its pid namespace is one rtrace's cannot see into",
            kernel_tid
        );
    }
}

/// A child forked by a traced task returns to user space for the first time: only now,
/// running as itself, can its pid in rtrace's namespace be asked for. Threads of a
/// process keyed by tgid find their key already there.
#[inline(always)]
fn adopt_forked_child<C: EbpfContext>(ctx: &C, kernel_tid: u32) {
    // SAFETY: a u32 value, copied.
    let Some(flags) = (unsafe { FORK_HANDOFF.get(kernel_tid) }).copied() else {
        return;
    };
    match current_ids() {
        Some(ids) => {
            const EEXIST: i32 = -17;
            match trace_insert(ids.trace_key(), flags, BPF_NOEXIST as u64) {
                Ok(()) => {}
                Err(e) if e == EEXIST => {}
                Err(_) => {
                    bump(COUNTER_LOST_TASKS);
                    log_lost(ctx, kernel_tid, LOST_FULL_MAP);
                }
            }
        }
        // In a pid namespace that rtrace's cannot see into.
        None => {
            bump(COUNTER_LOST_UNSEEN);
            log_lost(ctx, kernel_tid, LOST_UNSEEN);
        }
    }
    // Settled only now, after the insert: user space that finds every hand-off
    // settled and pids_to_trace empty may end the session.
    if FORK_HANDOFF.remove(kernel_tid).is_ok() {
        handoffs_bump(HANDOFFS_SETTLED);
    }
}

#[inline(always)]
fn record(
    flags: u16,
    nr: u32,
    ids: &Ids,
    enter_ns: u64,
    exit_ns: u64,
    args: &[u64; 6],
    ret: i64,
) -> SyscallRecord {
    SyscallRecord {
        kind: KIND_SYSCALL,
        flags,
        nr,
        tid: ids.tid,
        pid: ids.pid,
        enter_ns,
        exit_ns,
        args: *args,
        ret,
        comm: crate::task::current_comm(),
        aug_len: [0; 2],
        aug_arg: [AUG_NO_ARG; 2],
        aug_cut: [0; 2],
    }
}

#[inline(always)]
fn emit(flags: u16, nr: u32, ids: &Ids, enter_ns: u64, exit_ns: u64, args: &[u64; 6], ret: i64) {
    if !summary::wants_records() {
        return;
    }
    let Some((mut slot, wake)) = rings::reserve::<SyscallRecord>() else {
        bump(COUNTER_DROPPED);
        return;
    };
    // Written in place, field by field: building the record on the stack and copying
    // it in took a 112-byte copy per call.
    let p = slot.as_mut_ptr();
    // SAFETY: `p` is the reservation, sized and aligned for a SyscallRecord; every
    // field is written before the submit.
    unsafe {
        (&raw mut (*p).kind).write(KIND_SYSCALL);
        (&raw mut (*p).flags).write(flags);
        (&raw mut (*p).nr).write(nr);
        (&raw mut (*p).tid).write(ids.tid);
        (&raw mut (*p).pid).write(ids.pid);
        (&raw mut (*p).enter_ns).write(enter_ns);
        (&raw mut (*p).exit_ns).write(exit_ns);
        (&raw mut (*p).args).write(*args);
        (&raw mut (*p).ret).write(ret);
        crate::task::write_current_comm((&raw mut (*p).comm).cast());
        (&raw mut (*p).aug_len).write([0; 2]);
        (&raw mut (*p).aug_arg).write([AUG_NO_ARG; 2]);
        (&raw mut (*p).aug_cut).write([0; 2]);
    }
    slot.submit(wake);
}

/// A returned call whose plan copies user memory: the record and its slots, sized to
/// what was read.
#[inline(always)]
fn emit_augmented(
    plan: &AugPlan,
    ids: &Ids,
    call: &InflightCall,
    exit_ns: u64,
    ret: i64,
    flags: u16,
) {
    let rec = record(flags, call.nr, ids, call.enter_ns, exit_ns, &call.args, ret);
    if let Some(bytes) = augment::assemble(&rec, plan) {
        output(bytes);
    }
}

/// After a successful execve: its path and argv as the new program received them.
#[inline(always)]
fn emit_exec_reads(regs: *const u8, ids: &Ids, nr: u32, now: u64, kernel_tid: u32) {
    let Some(sp) = user_sp(regs) else {
        return;
    };
    let mut rec = record(REC_HAS_ENTRY, nr, ids, now, 0, &no_args(), 0);
    rec.kind = KIND_EXEC_READS;
    let compat = is_compat(regs);
    if let Some(bytes) = augment::assemble_exec(&mut rec, kernel_tid, sp, compat) {
        output(bytes);
    }
    if EXEC_ENVP.load() != 0 {
        rec.kind = KIND_EXEC_ENV;
        if let Some(bytes) = augment::assemble_exec_env(&mut rec, sp, compat) {
            output(bytes);
        }
    }
}

/// A record alone (no memory read).
#[inline(always)]
pub(crate) fn output_record(rec: &SyscallRecord) {
    let Some((mut slot, wake)) = rings::reserve::<SyscallRecord>() else {
        bump(COUNTER_DROPPED);
        return;
    };
    slot.write(*rec);
    slot.submit(wake);
}

#[inline(always)]
pub(crate) fn output(bytes: &[u8]) {
    if !rings::output(bytes) {
        bump(COUNTER_DROPPED);
    }
}
