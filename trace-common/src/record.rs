//! The syscall record: one per completed syscall (entry and exit joined in the kernel),
//! or one for an entry that never returns (exit, exit_group), or one for an exit whose
//! entry was not seen (a call in progress when tracing started, a child's first return
//! from clone/fork).

pub const TASK_COMM_LEN: usize = 16;

/// A task name as loaded from `task_struct.comm` in two little-endian words, with every
/// byte after its first NUL made zero: what the record's `comm` holds, so that two
/// records of one name compare equal whatever the field held after the NUL: the eBPF
/// side loads the field directly (the helper that copied and padded it cost about 4 %
/// of a traced call) and does not rely on the kernel having padded it. Arithmetic on
/// the two words, no loop and no byte access, so that the eBPF side runs it as it is.
#[inline(always)]
pub const fn comm_words_padded(lo: u64, hi: u64) -> [u64; 2] {
    let lo_keep = before_first_nul(lo);
    let hi = if lo_keep == u64::MAX {
        hi & before_first_nul(hi)
    } else {
        0
    };
    [lo & lo_keep, hi]
}

/// A mask of the bytes of `w` (little-endian) before its first zero byte; all ones
/// when it has none. The lowest byte flagged by the zero-byte test is exact (a false
/// flag can only follow a true one, through the borrow).
#[inline(always)]
const fn before_first_nul(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zeros = w.wrapping_sub(ONES) & !w & HIGHS;
    if zeros == 0 {
        u64::MAX
    } else {
        ((zeros & zeros.wrapping_neg()) >> 7) - 1
    }
}

/// `SyscallRecord::flags`: the entry was seen (`enter_ns` and `args` are valid).
pub const REC_HAS_ENTRY: u16 = 1;
/// `SyscallRecord::flags`: the exit was seen (`exit_ns` and `ret` are valid).
pub const REC_HAS_EXIT: u16 = 2;
/// `SyscallRecord::flags`: the entry of a call that may block, sent at entry so that
/// the reader can show it as unfinished (`name(args) ...`) while other lines come;
/// the call's full record follows at its exit.
pub const REC_PENDING: u16 = 4;
/// `SyscallRecord::flags`: the call made fds that /proc names by their inode (see
/// `maps::CLASS_FD_INODE_*`), and the kernel read those inodes' numbers: `args[5]` for
/// the returned fd, `args[4]` and `args[5]` for a pair. The call's own arguments end
/// before them.
pub const REC_FD_INODES: u16 = 8;
/// `SyscallRecord::flags`: the kernel side compared, at the call's exit, the task's
/// mount namespace and root directory with rtrace's own (`maps::CLASS_PATH_VIEW`).
/// `REC_SAME_VIEW` then says whether they were the same: whether a path the call
/// resolved means what it means to rtrace.
pub const REC_VIEW_KNOWN: u16 = 16;
pub const REC_SAME_VIEW: u16 = 32;

/// `SyscallRecord::kind` of a syscall record.
pub const KIND_SYSCALL: u16 = 1;
/// `SyscallRecord::kind` of what a successful execve ran (the path the kernel exec'd
/// and the argv the new program received), sent ahead of the call's own record; only
/// its slots matter.
pub const KIND_EXEC_READS: u16 = 2;
/// `SyscallRecord::kind` of the environment a successful execve's program received
/// (`--envp`), sent after its KIND_EXEC_READS: slot 0 holds the strings, for argument 2.
pub const KIND_EXEC_ENV: u16 = 3;
/// A tracepoint event chosen with `-e cat:name`: `nr` the event's index among those
/// chosen (the program's attach cookie), `enter_ns` its time, slot 0 the kernel's raw record (its first 8 bytes
/// overwritten by the kernel), cut to [`EVENT_BYTES`].
pub const KIND_EVENT: u16 = 4;
/// A page fault of a target task (`-F`): `nr` one of [`FAULT_MIN`], [`FAULT_MAJ`],
/// `enter_ns` its time, `args[0]` the instruction pointer, `args[1]` the faulting
/// address, `args[2]` 1 when the fault was taken in user mode, 0 in the kernel.
pub const KIND_FAULT: u16 = 5;
pub const FAULT_MIN: u32 = 0;
pub const FAULT_MAJ: u32 = 1;
/// The call chain of the record that follows from the same task (`--call-graph`):
/// `args[0]` kernel frames, then `args[1]` user frames, right after the record (u64
/// each, innermost first).
pub const KIND_STACK: u16 = 6;
/// A new process whose traced parent waits for it (vfork, or a clone with CLONE_VFORK):
/// `pid` (and `tid`) the child, `args[0]` the parent's pid, `enter_ns` the fork's time.
/// The parent sends it as it forks, so it comes before any record of the child's,
/// while the parent's own return comes only once the child has exec'd or exited: the
/// reader gives the child its parent's fds and directory here. No line shows it.
pub const KIND_VFORK_CHILD: u16 = 7;
/// Frames of each kind kept at most: perf's default `kernel.perf_event_max_stack`.
pub const STACK_FRAMES: usize = 127;
/// `CALL_GRAPH` bits: user frames of every record; kernel frames of syscalls (faults'
/// and tracepoint events' kernel frames come with `STACK_USER`, as in perf).
pub const STACK_USER: u32 = 1;
pub const STACK_KERNEL_SYSCALLS: u32 = 2;
/// Events traced at once, at most: each is a perf event that the kernel releases,
/// waiting for grace periods, when the trace ends.
pub const MAX_EVENTS: usize = 64;
/// How much of a tracepoint's raw record is sent: the fixed fields of every event
/// rtrace has met, and room for the strings that follow them (`__data_loc`).
pub const EVENT_BYTES: usize = 512;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyscallRecord {
    pub kind: u16,
    pub flags: u16,
    /// Syscall index: the number, plus `maps::COMPAT_BASE` for a 32-bit task.
    pub nr: u32,
    /// Thread id and process id, in rtrace's pid namespace.
    pub tid: u32,
    pub pid: u32,
    /// CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns).
    pub enter_ns: u64,
    pub exit_ns: u64,
    pub args: [u64; 6],
    pub ret: i64,
    pub comm: [u8; TASK_COMM_LEN],
    /// Bytes held by each augmentation slot after the record (`augment::AUG_FAILED`
    /// when the read failed), and the argument each slot belongs to
    /// (`augment::AUG_NO_ARG` when unused).
    pub aug_len: [u16; 2],
    pub aug_arg: [u8; 2],
    /// Per slot: 1 when the read stopped before the end of what was there (a longer
    /// string or buffer, more argv entries), so that the slot holds only the start.
    pub aug_cut: [u8; 2],
}

pub const SYSCALL_RECORD_SIZE: usize = 112;
const _: () = assert!(core::mem::size_of::<SyscallRecord>() == SYSCALL_RECORD_SIZE);
const _: () = assert!(core::mem::align_of::<SyscallRecord>() == 8);
const _: () = assert!(core::mem::offset_of!(SyscallRecord, args) == 32);
const _: () = assert!(core::mem::offset_of!(SyscallRecord, comm) == 88);

impl SyscallRecord {
    /// Reads a record from ring-buffer bytes, checking the length and kind first.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.len() < SYSCALL_RECORD_SIZE {
            return None;
        }
        // SAFETY: the length was checked and every bit pattern is a valid
        // SyscallRecord (integers and byte arrays only); read_unaligned because ring
        // buffer items are only 8-byte aligned by convention.
        let rec = unsafe { core::ptr::read_unaligned(bytes.as_ptr().cast::<SyscallRecord>()) };
        matches!(
            rec.kind,
            KIND_SYSCALL
                | KIND_EXEC_READS
                | KIND_EXEC_ENV
                | KIND_EVENT
                | KIND_FAULT
                | KIND_STACK
                | KIND_VFORK_CHILD
        )
        .then_some(rec)
    }

    pub fn has_entry(&self) -> bool {
        self.flags & REC_HAS_ENTRY != 0
    }

    pub fn has_exit(&self) -> bool {
        self.flags & REC_HAS_EXIT != 0
    }

    /// Its entry's time; 0 when the entry was not seen.
    pub fn entry_ns(&self) -> u64 {
        if self.has_entry() { self.enter_ns } else { 0 }
    }

    /// When the call began as far as the record knows: its entry's time, or its
    /// exit's when the entry was not seen.
    pub fn first_ns(&self) -> u64 {
        if self.has_entry() {
            self.enter_ns
        } else {
            self.exit_ns
        }
    }

    /// The argument slots the call itself filled: all six, but the first four when
    /// the last two carry inode numbers ([`REC_FD_INODES`]). For showing the
    /// registers of a call whose format is unknown.
    pub fn call_args(&self) -> &[u64] {
        if self.flags & REC_FD_INODES != 0 {
            &self.args[..4]
        } else {
            &self.args
        }
    }

    /// The augmentation for argument `arg`: `Some(Ok(_))` when it was read,
    /// `Some(Err(()))` when the read failed, `None` when there is none. `record` is the
    /// whole ring-buffer item; lengths are checked against it.
    pub fn augmented<'a>(&self, record: &'a [u8], arg: usize) -> Option<Result<Augmented<'a>, ()>> {
        use crate::augment::{AUG_FAILED, AUG_KEEP_MAX};
        let slot = self.aug_arg.iter().position(|&a| usize::from(a) == arg)?;
        let kept = |i: usize| match self.aug_len[i] {
            AUG_FAILED => 0,
            n => usize::from(n).min(AUG_KEEP_MAX),
        };
        if self.aug_len[slot] == AUG_FAILED {
            return Some(Err(()));
        }
        let start = SYSCALL_RECORD_SIZE + (0..slot).map(kept).sum::<usize>();
        let bytes = record.get(start..start + kept(slot)).ok_or(());
        Some(bytes.map(|bytes| Augmented {
            bytes,
            cut: self.aug_cut[slot] != 0,
        }))
    }
}

/// What the kernel copied for one argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Augmented<'a> {
    pub bytes: &'a [u8],
    /// There was more than `bytes`: a longer string or buffer, more entries.
    pub cut: bool,
}

/// What `sys_enter` keeps, per thread, until the matching `sys_exit` (in the task's own
/// storage, which outlives the call: `enter_ns` 0 says no call is in progress).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct InflightCall {
    pub nr: u32,
    /// The syscall's `maps::CLASS_*` bits, looked up at entry.
    pub class: u32,
    /// When the call began (`bpf_ktime_get_ns`, never 0), or 0: none in progress.
    pub enter_ns: u64,
    pub args: [u64; 6],
    /// What `pids_to_trace` and `pids_filtered` said of this task, kept so that a
    /// call need not ask them again while neither has changed: `listed_gen` is the
    /// maps' change count (`pid_maps_gen`) when they were asked, plus 1 (0: never
    /// asked); `listed` 1 when the task was a target then, with `listed_flags` its
    /// flags.
    pub listed_gen: u64,
    pub listed: u32,
    pub listed_flags: u32,
    /// The task's start (`task_struct.start_boottime`), read once and kept for the
    /// summaries' keys (0: not read yet). The exec program clears it when a thread
    /// takes its leader's place, and with it the leader's start.
    pub start_ns: u64,
    /// The thread's and its process's ids (rtrace's namespace), kept by its first call
    /// (`tid` 0: not kept) so that neither its later entries nor their exits ask the
    /// kernel again: they change only when a thread execs and takes its leader's
    /// number, so an exec's exit asks, and the exec program clears them.
    pub tid: u32,
    pub pid: u32,
    /// A summary's last entries of this thread, so that a call whose entry is here
    /// adds to its numbers without asking `stats::STATS_SLOT` (a hash lookup, a tenth
    /// of a getppid storm's time under `-s`): at `nr % STATS_CACHE`, `stats_nr` holds
    /// the number plus 1 (0: none) and `stats_slot` its slot in `stats::SYSCALL_STATS`,
    /// both for the thread whose key is `stats_tid` and `stats_start_ns` (another key,
    /// after an exec took the leader's, finds none of them).
    pub stats_start_ns: u64,
    pub stats_tid: u32,
    pub _stats_pad: u32,
    pub stats_nr: [u32; crate::stats::STATS_CACHE],
    pub stats_slot: [u32; crate::stats::STATS_CACHE],
}
const _: () = assert!(core::mem::size_of::<InflightCall>() == 144);

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    fn sample() -> SyscallRecord {
        SyscallRecord {
            kind: KIND_SYSCALL,
            flags: REC_HAS_ENTRY | REC_HAS_EXIT,
            nr: 257,
            tid: 10,
            pid: 9,
            enter_ns: 1,
            exit_ns: 2,
            args: [1, 2, 3, 4, 5, 6],
            ret: -2,
            comm: *b"cat\0\0\0\0\0\0\0\0\0\0\0\0\0",
            aug_len: [0; 2],
            aug_arg: [0xff; 2],
            aug_cut: [0; 2],
        }
    }

    fn bytes_of(r: &SyscallRecord) -> std::vec::Vec<u8> {
        // SAFETY: SyscallRecord is plain old data without padding holes.
        unsafe {
            core::slice::from_raw_parts(
                (r as *const SyscallRecord).cast::<u8>(),
                SYSCALL_RECORD_SIZE,
            )
        }
        .to_vec()
    }

    #[test]
    fn inode_slots_are_not_the_calls_arguments() {
        let mut r = sample();
        assert_eq!(r.call_args(), &[1, 2, 3, 4, 5, 6]);
        r.flags |= REC_FD_INODES;
        assert_eq!(r.call_args(), &[1, 2, 3, 4]);
    }

    #[test]
    fn round_trips_through_bytes() {
        let r = sample();
        assert_eq!(SyscallRecord::from_bytes(&bytes_of(&r)), Some(r));
    }

    #[test]
    fn rejects_short_and_foreign_records() {
        let r = sample();
        let b = bytes_of(&r);
        assert_eq!(
            SyscallRecord::from_bytes(&b[..SYSCALL_RECORD_SIZE - 1]),
            None
        );
        let mut other = r;
        other.kind = KIND_VFORK_CHILD + 1;
        assert_eq!(SyscallRecord::from_bytes(&bytes_of(&other)), None);
        other.kind = KIND_VFORK_CHILD;
        assert_eq!(SyscallRecord::from_bytes(&bytes_of(&other)), Some(other));
    }

    #[test]
    fn slots_are_packed_and_carry_their_cut_mark() {
        let mut r = sample();
        r.aug_arg = [1, 3];
        r.aug_len = [3, 2];
        r.aug_cut = [0, 1];
        let mut b = bytes_of(&r);
        b.extend_from_slice(b"abcXY");
        let a = r.augmented(&b, 1).unwrap().unwrap();
        assert_eq!((a.bytes, a.cut), (&b"abc"[..], false));
        let a = r.augmented(&b, 3).unwrap().unwrap();
        assert_eq!((a.bytes, a.cut), (&b"XY"[..], true));
        assert_eq!(r.augmented(&b, 2), None);
        // A failed first slot takes no room; a record shorter than it says is refused.
        r.aug_len = [crate::augment::AUG_FAILED, 2];
        let mut b = bytes_of(&r);
        b.extend_from_slice(b"XY");
        assert_eq!(r.augmented(&b, 1), Some(Err(())));
        assert_eq!(r.augmented(&b, 3).unwrap().unwrap().bytes, b"XY");
        assert_eq!(r.augmented(&b[..b.len() - 1], 3), Some(Err(())));
    }

    fn padded(name: &[u8; 16]) -> [u8; 16] {
        let lo = u64::from_le_bytes(name[..8].try_into().unwrap());
        let hi = u64::from_le_bytes(name[8..].try_into().unwrap());
        let [lo, hi] = comm_words_padded(lo, hi);
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&lo.to_le_bytes());
        out[8..].copy_from_slice(&hi.to_le_bytes());
        out
    }

    #[test]
    fn a_comm_keeps_its_name_and_nothing_after_its_nul() {
        // Every place of the first NUL, with stale bytes (some of them 0x01 and 0x80,
        // the zero-byte test's borrow cases) after it.
        for nul in 0..16 {
            let mut name = [0u8; 16];
            for (i, b) in name.iter_mut().enumerate() {
                *b = match i.cmp(&nul) {
                    core::cmp::Ordering::Less => b'a' + i as u8,
                    core::cmp::Ordering::Equal => 0,
                    core::cmp::Ordering::Greater => [0x01, 0x80, b'z', 0xff][i % 4],
                };
            }
            let mut want = [0u8; 16];
            want[..nul].copy_from_slice(&name[..nul]);
            assert_eq!(padded(&name), want, "NUL at {nul}");
        }
        // No NUL at all (the kernel always ends the name with one; the field is kept
        // whole rather than guessed at), bytes 0x01 and 0x80 that are not zeros, and a
        // name already padded.
        let full = *b"0123456789abcdef";
        assert_eq!(padded(&full), full);
        let odd = [
            0x01, 0x80, 0x01, 0x81, 0x7f, 0xff, 0x01, 0x80, 0x01, 0, 0x01, 0, 0, 0, 0, 0,
        ];
        let mut want = odd;
        want[9..].fill(0);
        assert_eq!(padded(&odd), want);
        let mut tidy = [0u8; 16];
        tidy[..4].copy_from_slice(b"make");
        assert_eq!(padded(&tidy), tidy);
    }
}
