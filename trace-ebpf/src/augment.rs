//! Copying user memory next to a record, as `aug_plan` says for each syscall.
//!
//! Pointers are read when the syscall returns: by then the kernel has copied the
//! argument itself, so a page that was never touched before the call (a literal in the
//! .rodata of a binary just exec'd) is present and the read succeeds. A successful
//! execve is the exception: its old memory is gone, so the path the kernel exec'd and
//! the argv on the new program's stack go out in a record of their own, which user
//! space joins to the call.
//! A read that fails is marked, and the argument is shown as the pointer it is.

use aya_ebpf::{
    helpers::generated::{bpf_probe_read_kernel_str, bpf_probe_read_user, bpf_probe_read_user_str},
    macros::map,
    maps::{Array, HashMap, PerCpuArray},
};
use trace_common::{
    SyscallRecord,
    augment::{
        AUG_ARGV, AUG_ARGV_LOOP, AUG_BUF, AUG_ENVP_LOOP, AUG_FAILED, AUG_FIXED, AUG_KEEP_MAX,
        AUG_LENPTR, AUG_NO_ARG, AUG_NONE, AUG_PLAN_ENTRIES, AUG_RETBUF, AUG_SLOT_BYTES, AUG_SLOTS,
        AUG_STR, AugPlan, AugSlot,
    },
    record::SYSCALL_RECORD_SIZE,
};

#[map(name = "aug_plan")]
static AUG_PLAN: Array<AugPlan> = Array::with_max_entries(AUG_PLAN_ENTRIES, 0);

const RECORD_MAX: usize = SYSCALL_RECORD_SIZE + AUG_SLOTS * AUG_SLOT_BYTES;

/// Masks an offset into a slot, so that the verifier sees its bound.
const SLOT_MASK: usize = AUG_SLOT_BYTES - 1;

/// The slack after the last slot lets the verifier accept the argv reads, whose
/// offset and size it cannot relate to each other (each below AUG_SLOT_BYTES).
#[repr(C, align(8))]
pub struct Scratch {
    buf: [u8; RECORD_MAX + AUG_SLOT_BYTES],
    /// See [`forget`].
    used: usize,
    /// See [`opaque`].
    opaque: u32,
}

/// Where an augmented record is assembled (too big for the 512-byte BPF stack).
#[map(name = "aug_scratch")]
static SCRATCH: PerCpuArray<Scratch> = PerCpuArray::with_max_entries(1, 0);

/// The path a task has just exec'd (from sched_process_exec), by kernel tid, for the
/// execve record: execve's own argument is gone once it succeeds. Only tasks between the exec
/// tracepoint and execve's return are here; when it is full, the path shows as the
/// pointer.
#[map(name = "exec_file")]
static EXEC_FILE: HashMap<u32, [u8; AUG_SLOT_BYTES]> = HashMap::with_max_entries(256, 0);

/// Keeps the kernel's copy of the exec'd path (`src`: the tracepoint record's string).
#[inline(always)]
pub fn keep_exec_file(kernel_tid: u32, src: *const u8) {
    let Some(scratch) = SCRATCH.get_ptr_mut(0) else {
        return;
    };
    // SAFETY: the scratch buffer is larger than one slot.
    let buf = unsafe { (*scratch).buf.as_mut_ptr() };
    // SAFETY: reading a kernel string into the slot-sized start of the buffer.
    let n = unsafe { bpf_probe_read_kernel_str(buf.cast(), AUG_SLOT_BYTES as u32, src.cast()) };
    if n > 0 {
        // SAFETY: the first AUG_SLOT_BYTES bytes of the buffer are initialised memory.
        let value = unsafe { &*(buf as *const [u8; AUG_SLOT_BYTES]) };
        let _ = EXEC_FILE.insert(kernel_tid, value, 0);
    }
}

/// After a successful execve with `--envp`: the environment from the new program's
/// stack, as a KIND_EXEC_ENV record (slot 0, for execve's argument 2).
#[inline(always)]
pub fn assemble_exec_env(rec: &mut SyscallRecord, sp: u64, compat: bool) -> Option<&'static [u8]> {
    let scratch = SCRATCH.get_ptr_mut(0)?;
    // SAFETY: as in assemble().
    let buf = unsafe { (*scratch).buf.as_mut_ptr() };
    // SAFETY: slot 0 lies inside the buffer.
    let slot0 = unsafe { buf.add(SYSCALL_RECORD_SIZE) };
    let (len, cut) = read_new_envp(sp, slot0, compat);
    rec.aug_arg = [2, AUG_NO_ARG];
    rec.aug_len = [len, 0];
    rec.aug_cut = [cut as u8, 0];
    header(buf, rec);
    let kept = if len == AUG_FAILED {
        0
    } else {
        (len as usize).min(AUG_KEEP_MAX)
    };
    let total = record_len(SYSCALL_RECORD_SIZE + kept);
    // SAFETY: total is within the buffer.
    Some(unsafe { core::slice::from_raw_parts(buf, total) })
}

/// After a successful execve: the path from sched_process_exec and the argv from the
/// new program's stack, as an entry-reads record (slot 0: path, slot 1: argv).
#[inline(always)]
pub fn assemble_exec(
    rec: &mut SyscallRecord,
    kernel_tid: u32,
    sp: u64,
    compat: bool,
) -> Option<&'static [u8]> {
    let scratch = SCRATCH.get_ptr_mut(0)?;
    // SAFETY: as in assemble().
    let buf = unsafe { (*scratch).buf.as_mut_ptr() };
    // SAFETY: slot 0 lies inside the buffer.
    let slot0 = unsafe { buf.add(SYSCALL_RECORD_SIZE) };
    let file = EXEC_FILE.get_ptr(kernel_tid);
    let (len0, cut0) = match file {
        Some(p) => {
            // SAFETY: p is a live map value of AUG_SLOT_BYTES bytes.
            let n =
                unsafe { bpf_probe_read_kernel_str(slot0.cast(), AUG_SLOT_BYTES as u32, p.cast()) };
            // The kernel's copy was cut to the map value; a path that long is rare.
            if n > 0 {
                ((n - 1) as u16, n as usize == AUG_SLOT_BYTES)
            } else {
                (AUG_FAILED, false)
            }
        }
        None => (AUG_FAILED, false),
    };
    if file.is_some() {
        let _ = EXEC_FILE.remove(kernel_tid);
    }
    let kept0 = if len0 == AUG_FAILED {
        0
    } else {
        len0 as usize & SLOT_MASK
    };
    // SAFETY: slot 1 lies inside the buffer (kept0 < AUG_SLOT_BYTES).
    let slot1 = unsafe { buf.add(SYSCALL_RECORD_SIZE + kept0) };
    let (len1, cut1) = read_new_argv(sp, slot1, compat);
    rec.aug_arg = [0, 1];
    rec.aug_len = [len0, len1];
    rec.aug_cut = [cut0 as u8, cut1 as u8];
    header(buf, rec);
    let kept1 = if len1 == AUG_FAILED {
        0
    } else {
        (len1 as usize).min(AUG_KEEP_MAX)
    };
    let total = record_len(SYSCALL_RECORD_SIZE + kept0 + kept1);
    // SAFETY: total is within the buffer.
    Some(unsafe { core::slice::from_raw_parts(buf, total) })
}

/// The plan for syscall `nr`, if it reads anything.
#[inline(always)]
pub fn plan(nr: u32) -> Option<AugPlan> {
    let p = *AUG_PLAN.get(nr)?;
    (p.slots[0].kind != AUG_NONE || p.slots[1].kind != AUG_NONE).then_some(p)
}

/// Whether the user byte at `addr` is not a NUL (or cannot be read): a string read
/// that filled its room went on past it.
#[inline(always)]
fn goes_on(addr: u64) -> bool {
    let mut b: u8 = 0;
    // SAFETY: reading one user byte into a local.
    let rc = unsafe { bpf_probe_read_user((&mut b as *mut u8).cast(), 1, addr as *const _) };
    rc != 0 || b != 0
}

/// Reads `slot` into `dst` (room for AUG_SLOT_BYTES); the bytes kept (or AUG_FAILED),
/// and whether there was more.
#[inline(always)]
fn read_slot(slot: &AugSlot, args: &[u64; 6], ret: i64, dst: *mut u8) -> (u16, bool) {
    let src = args[(slot.arg & 7) as usize % 6];
    if src == 0 {
        return (AUG_FAILED, false);
    }
    match slot.kind {
        AUG_STR => {
            // SAFETY: dst has AUG_SLOT_BYTES bytes; the helper checks the user read.
            let n = unsafe {
                bpf_probe_read_user_str(dst.cast(), AUG_SLOT_BYTES as u32, src as *const _)
            };
            if n <= 0 {
                return (AUG_FAILED, false);
            }
            let kept = (n - 1) as u64;
            (
                kept as u16,
                n as usize == AUG_SLOT_BYTES && goes_on(src + kept),
            )
        }
        AUG_BUF | AUG_FIXED | AUG_RETBUF | AUG_LENPTR => {
            let len_arg = args[(slot.len_arg & 7) as usize % 6];
            let want = match slot.kind {
                // In items of 1 << len_shift bytes; a count too large to shift is
                // more than any slot holds.
                AUG_BUF if len_arg > u32::MAX as u64 => u64::MAX,
                AUG_BUF => len_arg << (slot.len_shift & 7),
                AUG_LENPTR => match read_word(len_arg, 4) {
                    Some(n) => u64::from(n as u32),
                    None => return (AUG_FAILED, false),
                },
                AUG_RETBUF if ret >= 0 => ret as u64,
                AUG_RETBUF => return (AUG_FAILED, false),
                _ => u64::from(slot.max),
            };
            let mut n = want;
            if n > u64::from(slot.max) {
                n = u64::from(slot.max);
            }
            if n > AUG_KEEP_MAX as u64 {
                n = AUG_KEEP_MAX as u64;
            }
            if n == 0 {
                return (0, want > 0);
            }
            // SAFETY: n is below the slot's room.
            let rc = unsafe { bpf_probe_read_user(dst.cast(), bounded(n), src as *const _) };
            if rc != 0 {
                (AUG_FAILED, false)
            } else {
                (n as u16, want > n)
            }
        }
        AUG_ARGV => read_argv(src, dst),
        _ => (AUG_FAILED, false),
    }
}

/// Reads one user word of `size` bytes (4 for a 32-bit task's pointers: little-endian,
/// they fill the low half).
#[inline(always)]
fn read_word(addr: u64, size: u32) -> Option<u64> {
    let mut v: u64 = 0;
    // SAFETY: reading at most 8 bytes into a local.
    let rc = unsafe { bpf_probe_read_user((&mut v as *mut u64).cast(), size, addr as *const _) };
    (rc == 0).then_some(v)
}

/// The argv of a program just exec'd, from its new stack: `argc` at `sp`, then the
/// array of pointers. The kernel copied the strings one after another, so they are one
/// span, from argv[0] to the end of argv[argc - 1]: two reads, and no loop for the
/// verifier to walk. The bytes kept (NUL-separated, as many entries as fit), and
/// whether the span went on past them.
#[inline(always)]
fn read_new_argv(sp: u64, dst: *mut u8, compat: bool) -> (u16, bool) {
    let size: u32 = if compat { 4 } else { 8 };
    let Some(argc) = read_word(sp, size) else {
        return (AUG_FAILED, false);
    };
    if argc == 0 {
        return (0, false);
    }
    let (Some(first), Some(last)) = (
        read_word(sp + u64::from(size), size),
        read_word(sp + u64::from(size) * argc, size),
    ) else {
        return (AUG_FAILED, false);
    };
    read_span(first, last, dst)
}

/// The environment of a program just exec'd, from its new stack: its pointers follow
/// argv's and its NULL; their strings follow argv's, one span again. Counting the
/// entries is the one loop (in a BPF function of its own). As [`read_new_argv`].
#[inline(always)]
fn read_new_envp(sp: u64, dst: *mut u8, compat: bool) -> (u16, bool) {
    let size: u32 = if compat { 4 } else { 8 };
    let Some(argc) = read_word(sp, size) else {
        return (AUG_FAILED, false);
    };
    let envp = sp + u64::from(size) * (argc + 2);
    let envc = opaque(count_words(envp, size), u32::MAX);
    if envc == u32::MAX {
        return (AUG_FAILED, false);
    }
    if envc == 0 {
        return (0, false);
    }
    let (Some(first), Some(last)) = (
        read_word(envp, size),
        read_word(envp + u64::from(size) * u64::from(envc - 1), size),
    ) else {
        return (AUG_FAILED, false);
    };
    let (len, cut) = read_span(first, last, dst);
    (len, cut || envc >= u32::from(AUG_ENVP_LOOP))
}

/// How many non-NULL words of `size` bytes start at `addr`, at most AUG_ENVP_LOOP;
/// u32::MAX when the first cannot be read. A BPF function of its own, so that its
/// loop's frame is not added to sys_exit's.
#[inline(never)]
fn count_words(addr: u64, size: u32) -> u32 {
    for k in 0..u32::from(AUG_ENVP_LOOP) {
        match read_word(addr + u64::from(k) * u64::from(size), size) {
            Some(0) => return k,
            Some(_) => {}
            None if k == 0 => return u32::MAX,
            None => return k,
        }
    }
    u32::from(AUG_ENVP_LOOP)
}

/// The strings from `first` to the end of the one at `last`, which the kernel copied
/// one after another: two reads. The bytes kept (NUL-separated), and whether the span
/// went on past them.
#[inline(always)]
fn read_span(first: u64, last: u64, dst: *mut u8) -> (u16, bool) {
    if last < first {
        return (AUG_FAILED, false);
    }
    let span = last - first;
    if span >= AUG_KEEP_MAX as u64 {
        // Only the start fits.
        // SAFETY: AUG_KEEP_MAX bytes fit in the slot.
        let rc = unsafe { bpf_probe_read_user(dst.cast(), AUG_KEEP_MAX as u32, first as *const _) };
        return if rc == 0 {
            (AUG_KEEP_MAX as u16, true)
        } else {
            (AUG_FAILED, false)
        };
    }
    let head = span as usize & SLOT_MASK;
    if head > 0 {
        // SAFETY: head < AUG_KEEP_MAX bytes fit in the slot.
        let rc = unsafe { bpf_probe_read_user(dst.cast(), head as u32, first as *const _) };
        if rc != 0 {
            return (AUG_FAILED, false);
        }
    }
    // The last string, with its NUL, in the room left.
    let room = (AUG_KEEP_MAX - head) as u32;
    // SAFETY: head < AUG_SLOT_BYTES and room keeps the write inside the slot's room and
    // its slack.
    let n = unsafe { bpf_probe_read_user_str(dst.add(head).cast(), room, last as *const _) };
    if n <= 0 {
        return (head as u16, true);
    }
    let kept = head as u32 + n as u32;
    (
        kept as u16,
        n as u32 == room && goes_on(last + u64::from(room) - 1),
    )
}

/// A failed execve's argv, from the caller's own array: up to AUG_ARGV_LOOP strings,
/// NUL-separated, within AUG_KEEP_MAX bytes. The bytes kept, and whether entries (or
/// the end of the last one) were left out.
#[inline(always)]
fn read_argv(argv: u64, dst: *mut u8) -> (u16, bool) {
    let packed = read_argv_packed(argv, dst);
    (packed as u16, packed >> 16 != 0)
}

/// [`read_argv`] as a BPF function of its own: its loop's registers and locals get a
/// stack frame of their own instead of growing the calling program's, whose 512 bytes
/// older verifiers (6.1) add up with every callee's, each rounded up to 32. The result
/// is packed (`cut << 16 | len`) so that it comes back in a register.
#[inline(never)]
fn read_argv_packed(argv: u64, dst: *mut u8) -> u32 {
    let mut off: u32 = 0;
    let mut cut = true;
    for k in 0..=u64::from(AUG_ARGV_LOOP) {
        let Some(ptr) = read_word(argv + 8 * k, 8) else {
            if k == 0 {
                return u32::from(AUG_FAILED);
            }
            break;
        };
        if ptr == 0 {
            cut = false;
            break;
        }
        if k >= u64::from(AUG_ARGV_LOOP) || off >= AUG_KEEP_MAX as u32 {
            break;
        }
        // Masked so that the verifier bounds the offset and the size from one value (a
        // volatile read keeps LLVM from dropping the mask as redundant).
        // SAFETY: reading a local.
        let o = unsafe { core::ptr::read_volatile(&off) } & SLOT_MASK as u32;
        let room = AUG_KEEP_MAX as u32 - o;
        // SAFETY: o < AUG_SLOT_BYTES and room keeps the write inside the slot's room
        // and its slack.
        let n =
            unsafe { bpf_probe_read_user_str(dst.add(o as usize).cast(), room, ptr as *const _) };
        if n <= 0 {
            break;
        }
        off = o + n as u32;
        if n as u32 == room && goes_on(ptr + u64::from(room) - 1) {
            break;
        }
    }
    off | (u32::from(cut) << 16)
}

/// What a blocking call's entry can show before the call runs: its first slot, when it
/// is a fixed-size struct or a buffer an argument sizes (a sleep's timespec, a
/// connect's address, poll's fds), read as it is at entry; anything else is sent as
/// not read (the unfinished line shows the pointer). One slot of two kinds, in one
/// path: sys_enter stays a program the verifier walks quickly (rtrace's start-up is
/// mostly verification).
#[inline(always)]
pub fn assemble_entry(
    rec: &mut SyscallRecord,
    plan: &AugPlan,
    args: &[u64; 6],
) -> Option<&'static [u8]> {
    let scratch = SCRATCH.get_ptr_mut(0)?;
    // SAFETY: as in assemble().
    let buf = unsafe { (*scratch).buf.as_mut_ptr() };
    let slot = plan.slots[0];
    rec.aug_arg = [slot.arg, AUG_NO_ARG];
    rec.aug_len = [AUG_FAILED, 0];
    rec.aug_cut = [0, 0];
    let want = match slot.kind {
        AUG_FIXED => u64::from(slot.max),
        AUG_BUF => {
            let len = args[(slot.len_arg & 7) as usize % 6];
            if len > u32::MAX as u64 {
                u64::MAX
            } else {
                len << (slot.len_shift & 7)
            }
        }
        _ => 0,
    };
    let mut n = want;
    if n > u64::from(slot.max) {
        n = u64::from(slot.max);
    }
    if n > AUG_KEEP_MAX as u64 {
        n = AUG_KEEP_MAX as u64;
    }
    let src = args[(slot.arg & 7) as usize % 6];
    // SAFETY: slot 0 lies inside the scratch buffer.
    let dst = unsafe { buf.add(SYSCALL_RECORD_SIZE) };
    let mut used = 0;
    // SAFETY: n is below the slot's room (and bounded again where the helper takes it).
    if n > 0
        && src != 0
        && unsafe { bpf_probe_read_user(dst.cast(), bounded(n), src as *const _) } == 0
    {
        rec.aug_len[0] = n as u16;
        rec.aug_cut[0] = (want > n) as u8;
        used = n as usize;
    }
    header(buf, rec);
    let total = record_len(SYSCALL_RECORD_SIZE + used);
    // SAFETY: total is within the buffer, which lives as long as the map.
    Some(unsafe { core::slice::from_raw_parts(buf, total) })
}

/// A record's length, `n` at most RECORD_MAX, bounded where the verifier sees it: the
/// compiler can prove the slots' lengths already keep `n` below RECORD_MAX and drops
/// a plain `min`, leaving a sum the verifier cannot bound once it is spilled (6.1,
/// with the per-syscall event programs: "R3 min value is negative" at the ring's
/// output). Hidden from the compiler first, the `min` stays.
#[inline(always)]
fn record_len(n: usize) -> usize {
    let mut v = n;
    // SAFETY: a move of the register to itself. Not an empty template: that makes no
    // instruction but keeps its line, and 6.1 refuses two lines at one instruction
    // ("Invalid line_info").
    unsafe { core::arch::asm!("{0} = {0}", inout(reg) v) };
    v.min(RECORD_MAX)
}

/// `n` (at most AUG_KEEP_MAX) as the helper's size, masked in the register the call
/// takes: the compiler knows the mask changes nothing and would drop it, and where it
/// spills `n` between its checks and the call, 6.1's verifier loses the bounds (seen
/// with the per-syscall event programs: "R2 min value is negative").
#[inline(always)]
fn bounded(n: u64) -> u32 {
    let mut v = n;
    // SAFETY: arithmetic on a register, nothing else.
    unsafe { core::arch::asm!("{0} &= {mask}", inout(reg) v, mask = const SLOT_MASK) };
    v as u32
}

/// Copies `rec` to the start of the scratch buffer `buf`, which starts the (8-aligned)
/// scratch value: an aligned copy is word stores, where `write_unaligned` was one store
/// a byte (112, which the verifier walked again on every path through it).
#[inline(always)]
fn header(buf: *mut u8, rec: &SyscallRecord) {
    // SAFETY: the header fits at the start of the buffer, aligned as shown above.
    unsafe { core::ptr::copy_nonoverlapping(rec, buf.cast::<SyscallRecord>(), 1) };
}

/// `used` as the verifier sees a value read from a map: any number. Every way through
/// the first slot (each kind, read or failed) ends with its own bounds on it, and the
/// verifier walked the second slot once for each; after this, once.
#[inline(always)]
fn forget(scratch: *mut Scratch, used: usize) -> usize {
    // SAFETY: a field of the per-CPU scratch value, written and read back.
    unsafe {
        core::ptr::write_volatile(&raw mut (*scratch).used, used);
        core::ptr::read_volatile(&raw const (*scratch).used)
    }
}

/// `v`, a loop's result from a BPF function of its own, as the verifier sees a value
/// read from a map: any number (`or_else` where the scratch cannot be had). Each of the
/// loop's exits returns its own constant, and the verifier walked the rest of the
/// caller once for each (`--envp`: 282k instructions walked in sys_exit, against 28k;
/// over a minute on 6.1 under emulation).
#[inline(always)]
fn opaque(v: u32, or_else: u32) -> u32 {
    let Some(scratch) = SCRATCH.get_ptr_mut(0) else {
        return or_else;
    };
    // SAFETY: a field of the per-CPU scratch value, written and read back.
    unsafe {
        core::ptr::write_volatile(&raw mut (*scratch).opaque, v);
        core::ptr::read_volatile(&raw const (*scratch).opaque)
    }
}

/// Assembles `rec` and the slots that `plan` reads in the scratch buffer: the header
/// first, then each slot's read, whose length and argument are written into the header
/// there. The bytes to send. The arguments and the return value are read back from the
/// header in the map, where the verifier knows nothing of them: from the record on the
/// stack, it walked the slots again for each range the paths before had left on them
/// (sys_exit, 6.18: 20.8k instructions walked against 12.3k).
#[inline(always)]
pub fn assemble(rec: &SyscallRecord, plan: &AugPlan) -> Option<&'static [u8]> {
    let scratch = SCRATCH.get_ptr_mut(0)?;
    // SAFETY: the per-CPU scratch value; only this program uses it while it runs.
    let buf = unsafe { (*scratch).buf.as_mut_ptr() };
    header(buf, rec);
    let head = buf.cast::<SyscallRecord>();
    // SAFETY: the header just written, in the map; volatile, so that the compiler does
    // not take them from the stack copy instead.
    let (args, ret) = unsafe {
        (
            core::ptr::read_volatile(&raw const (*head).args),
            core::ptr::read_volatile(&raw const (*head).ret),
        )
    };
    let mut used = 0usize;
    for i in 0..AUG_SLOTS {
        let slot = plan.slots[i];
        let (arg, len, cut) = if slot.kind == AUG_NONE {
            (AUG_NO_ARG, 0, false)
        } else {
            // Packed: this slot starts where the one before ended (below
            // AUG_SLOT_BYTES).
            // SAFETY: the offset lies inside the scratch buffer.
            let dst = unsafe { buf.add(SYSCALL_RECORD_SIZE + (used & SLOT_MASK)) };
            let (len, cut) = read_slot(&slot, &args, ret, dst);
            if len != AUG_FAILED {
                used = (used & SLOT_MASK) + (len as usize).min(AUG_KEEP_MAX);
            }
            (slot.arg, len, cut)
        };
        // SAFETY: the header's fields, in the buffer.
        unsafe {
            (*head).aug_arg[i] = arg;
            (*head).aug_len[i] = len;
            (*head).aug_cut[i] = cut as u8;
        }
        used = forget(scratch, used);
    }
    let total = record_len(SYSCALL_RECORD_SIZE + used);
    // SAFETY: total is within the buffer, which lives as long as the map.
    Some(unsafe { core::slice::from_raw_parts(buf, total) })
}
