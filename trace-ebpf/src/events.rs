//! Tracepoint events chosen with `-e cat:name` (`sched:sched_switch`, `signal:*`): a
//! classic-tracepoint program per chosen event sends a target task's raw record with
//! the event's index (the record's own `common_type` is not there to name it: the
//! kernel writes its pt_regs pointer over the first 8 bytes before a BPF program
//! runs); user space decodes the fields from the tracefs format. The programs are
//! copies, `tp_event_0` … `tp_event_63`, each with its index as a constant, so that no
//! attach cookie (Linux 5.15) is needed; only those used are loaded.

use aya_ebpf::{
    EbpfContext,
    helpers::{bpf_get_current_comm, bpf_ktime_get_ns, bpf_probe_read_kernel_buf},
    macros::tracepoint,
    programs::TracePointContext,
};
use trace_common::{
    augment::AUG_NO_ARG,
    maps::{COUNTER_DROPPED, TRACE_ARM_ON_EXEC},
    record::{EVENT_BYTES, KIND_EVENT, REC_HAS_ENTRY, SyscallRecord},
};

use crate::{
    maps::{EVENTS, bump},
    task::{current_ids, target_flags},
};

/// The record and the raw bytes after it, as one ring-buffer item.
#[repr(C)]
struct EventItem {
    head: SyscallRecord,
    data: [u8; EVENT_BYTES],
}

macro_rules! event_programs {
    ($($name:ident = $index:expr),* $(,)?) => {
        $(
            #[tracepoint]
            pub fn $name(ctx: TracePointContext) -> u32 {
                let _ = on_event(&ctx, $index);
                0
            }
        )*
    };
}

// As many as `trace_common::record::EVENT_PROGRAMS`.
event_programs!(
    tp_event_0 = 0,
    tp_event_1 = 1,
    tp_event_2 = 2,
    tp_event_3 = 3,
    tp_event_4 = 4,
    tp_event_5 = 5,
    tp_event_6 = 6,
    tp_event_7 = 7,
    tp_event_8 = 8,
    tp_event_9 = 9,
    tp_event_10 = 10,
    tp_event_11 = 11,
    tp_event_12 = 12,
    tp_event_13 = 13,
    tp_event_14 = 14,
    tp_event_15 = 15,
    tp_event_16 = 16,
    tp_event_17 = 17,
    tp_event_18 = 18,
    tp_event_19 = 19,
    tp_event_20 = 20,
    tp_event_21 = 21,
    tp_event_22 = 22,
    tp_event_23 = 23,
    tp_event_24 = 24,
    tp_event_25 = 25,
    tp_event_26 = 26,
    tp_event_27 = 27,
    tp_event_28 = 28,
    tp_event_29 = 29,
    tp_event_30 = 30,
    tp_event_31 = 31,
    tp_event_32 = 32,
    tp_event_33 = 33,
    tp_event_34 = 34,
    tp_event_35 = 35,
    tp_event_36 = 36,
    tp_event_37 = 37,
    tp_event_38 = 38,
    tp_event_39 = 39,
    tp_event_40 = 40,
    tp_event_41 = 41,
    tp_event_42 = 42,
    tp_event_43 = 43,
    tp_event_44 = 44,
    tp_event_45 = 45,
    tp_event_46 = 46,
    tp_event_47 = 47,
    tp_event_48 = 48,
    tp_event_49 = 49,
    tp_event_50 = 50,
    tp_event_51 = 51,
    tp_event_52 = 52,
    tp_event_53 = 53,
    tp_event_54 = 54,
    tp_event_55 = 55,
    tp_event_56 = 56,
    tp_event_57 = 57,
    tp_event_58 = 58,
    tp_event_59 = 59,
    tp_event_60 = 60,
    tp_event_61 = 61,
    tp_event_62 = 62,
    tp_event_63 = 63,
);

#[inline(always)]
fn on_event(ctx: &TracePointContext, index: u32) -> Option<()> {
    let ids = current_ids()?;
    let flags = target_flags(&ids)?;
    // A held workload is traced from its exec on (the exec event itself is seen after
    // the lifecycle program armed it).
    if flags & TRACE_ARM_ON_EXEC != 0 {
        return None;
    }
    let Some(mut slot) = EVENTS.reserve::<EventItem>(0) else {
        bump(COUNTER_DROPPED);
        return None;
    };
    let item = slot.as_mut_ptr();
    // SAFETY: `item` points at the reserved, writable slot of EventItem's size.
    unsafe {
        (*item).head = SyscallRecord {
            kind: KIND_EVENT,
            flags: REC_HAS_ENTRY,
            nr: index,
            tid: ids.tid,
            pid: ids.pid,
            enter_ns: bpf_ktime_get_ns(),
            exit_ns: 0,
            args: [0; 6],
            ret: 0,
            comm: bpf_get_current_comm().unwrap_or([0; 16]),
            aug_len: [EVENT_BYTES as u16, 0],
            aug_arg: [0, AUG_NO_ARG],
            aug_cut: [0; 2],
        };
        // The record lives in the per-CPU buffer the kernel built it in, which is
        // larger than EVENT_BYTES: what follows a short record is read but never
        // decoded (the format says where each field ends).
        if bpf_probe_read_kernel_buf(ctx.as_ptr() as *const u8, &mut (*item).data).is_err() {
            (*item).head.aug_len[0] = 0;
        }
    }
    slot.submit(crate::syscalls::wakeup_flag());
    Some(())
}
