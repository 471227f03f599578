//! Page faults (`-F maj|min|all`): one perf_event program per kind, attached by user
//! space to the kernel's software PAGE_FAULTS_MIN / PAGE_FAULTS_MAJ events on every
//! watched CPU with a period of 1, so that it runs once per fault, in the faulting
//! task, with the registers of the faulting instruction and the faulting address.
//! A target's fault is sent as a record (user space names the code and the mapping)
//! and, with a summary, counted per thread in the summary's map.

use aya_ebpf::{helpers::bpf_ktime_get_ns, macros::perf_event, programs::PerfEventContext};
use trace_common::{
    augment::AUG_NO_ARG,
    maps::{COUNTER_DROPPED, TRACE_ARM_ON_EXEC},
    record::{FAULT_MAJ, FAULT_MIN, KIND_FAULT, REC_HAS_ENTRY, SyscallRecord},
};

use crate::{
    maps::bump,
    regs::fault_site,
    summary,
    task::{current_ids, target_flags},
};

#[perf_event]
pub fn pf_min(ctx: PerfEventContext) -> u32 {
    let _ = on_fault(&ctx, FAULT_MIN);
    0
}

#[perf_event]
pub fn pf_maj(ctx: PerfEventContext) -> u32 {
    let _ = on_fault(&ctx, FAULT_MAJ);
    0
}

#[inline(always)]
fn on_fault(ctx: &PerfEventContext, kind: u32) -> Option<()> {
    let ids = current_ids()?;
    let flags = target_flags(&ids)?;
    // A held workload is traced from its exec on: its faults before are rtrace's.
    if flags & TRACE_ARM_ON_EXEC != 0 {
        return None;
    }
    summary::account_fault(&ids, kind);
    if !summary::wants_records() {
        return None;
    }
    let (ip, user, addr) = fault_site(ctx.ctx);
    // SAFETY: the helper has no preconditions.
    let now = unsafe { bpf_ktime_get_ns() };
    if crate::stacks::wanted() != 0 {
        crate::stacks::emit(ctx, &ids, true, now);
    }
    let Some((mut slot, wake)) = crate::rings::reserve::<SyscallRecord>() else {
        bump(COUNTER_DROPPED);
        return None;
    };
    slot.write(SyscallRecord {
        kind: KIND_FAULT,
        flags: REC_HAS_ENTRY,
        nr: kind,
        tid: ids.tid,
        pid: ids.pid,
        enter_ns: now,
        exit_ns: 0,
        args: [ip, addr, user as u64, 0, 0, 0],
        ret: 0,
        comm: crate::task::current_comm(),
        aug_len: [0; 2],
        aug_arg: [AUG_NO_ARG; 2],
        aug_cut: [0; 2],
    });
    slot.submit(wake);
    Some(())
}
