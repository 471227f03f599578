//! Augmentation: user memory copied next to a syscall record (paths, sockaddrs,
//! timespecs, the start of write buffers, execve's argv), as planned per syscall by
//! user space in the `aug_plan` map.
//!
//! A record with augmentation is the [`crate::SyscallRecord`] followed by the bytes of
//! up to [`AUG_SLOTS`] slots, packed: slot 0 starts at `SYSCALL_RECORD_SIZE`, slot 1
//! right after slot 0's bytes. `SyscallRecord::aug_len[i]` says how many bytes slot `i`
//! holds (at most [`AUG_KEEP_MAX`]), `aug_cut[i]` whether what it read went on.

/// Array map, index: syscall number, value: [`AugPlan`].
pub const AUG_PLAN: &str = "aug_plan";
pub const AUG_PLAN_ENTRIES: u32 = crate::maps::SYSCALL_INDEXES;

pub const AUG_SLOTS: usize = 2;
/// Room for one slot: PATH_MAX, so that no path the kernel accepts is cut.
pub const AUG_SLOT_BYTES: usize = 4096;
/// The most one slot keeps (a string's NUL takes the last byte of the room).
pub const AUG_KEEP_MAX: usize = AUG_SLOT_BYTES - 1;
/// The most argv entries read from a failed execve's own array (one read each, in a
/// loop the verifier walks through); a successful one's argv is read whole, up to
/// AUG_KEEP_MAX bytes.
pub const AUG_ARGV_LOOP: u16 = 16;
/// The most environment entries counted at a successful execve (`--envp`); past them
/// the environment shows as cut.
pub const AUG_ENVP_LOOP: u16 = 256;

/// `aug_len` of a slot whose read failed (the argument is shown as a pointer).
pub const AUG_FAILED: u16 = 0xffff;
/// `aug_arg` of an unused slot.
pub const AUG_NO_ARG: u8 = 0xff;

/// Nothing to read.
pub const AUG_NONE: u8 = 0;
/// A NUL-terminated string (stored without its NUL).
pub const AUG_STR: u8 = 1;
/// A buffer whose length is another argument (`len_arg`), capped at `max` bytes.
pub const AUG_BUF: u8 = 2;
/// A struct of `max` bytes.
pub const AUG_FIXED: u8 = 3;
/// An argv-style array of strings, stored NUL-separated (execve).
pub const AUG_ARGV: u8 = 4;
/// A buffer the call filled (read, getdents64): as many bytes as it returned, capped
/// at `max`; nothing when it failed.
pub const AUG_RETBUF: u8 = 5;
/// A buffer whose length is the int that argument `len_arg` points to, read when the
/// call returns (a value-result length: getsockname's, accept's), capped at `max`.
pub const AUG_LENPTR: u8 = 6;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AugSlot {
    pub kind: u8,
    pub arg: u8,
    pub len_arg: u8,
    /// AUG_BUF: the length argument counts items of `1 << len_shift` bytes (poll's
    /// `nfds` counts 8-byte `struct pollfd`s); 0 for a length in bytes.
    pub len_shift: u8,
    pub max: u16,
    pub _pad: u16,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AugPlan {
    pub slots: [AugSlot; AUG_SLOTS],
}

const _: () = assert!(core::mem::size_of::<AugSlot>() == 8);
const _: () = assert!(core::mem::size_of::<AugPlan>() == 16);

// SAFETY: plain #[repr(C)] integers without padding holes.
#[cfg(feature = "user")]
unsafe impl aya::Pod for AugPlan {}
