//! The inode number behind a new fd, read at the exit of the call that made it, for
//! the fds /proc names by their inode (`pipe:[4711]`, `socket:[4712]`): user space
//! cannot ask /proc later, when the number may already be another file's.
//!
//! The path is `current->files->fdt->fd[fd]->f_inode->i_ino`, each step a probe read
//! at the offset the loader found in the kernel's BTF. The fd was installed by the call
//! that is returning; only another thread closing a number it was never given could
//! change what it refers to before this read.

use aya_ebpf::helpers::{bpf_get_current_task, bpf_probe_read_kernel, bpf_probe_read_user};
use trace_common::{
    maps::{CLASS_FD_INODE_PAIR_ARG0, CLASS_FD_INODE_PAIR_ARG3, CLASS_FD_INODE_RET},
    record::REC_FD_INODES,
};

use crate::maps::{
    FDT_FD_OFF, FDT_MAX_FDS_OFF, FILE_INODE_OFF, FILES_FDT_OFF, INODE_INO_OFF, TASK_FILES_OFF,
};

/// A kernel pointer at `base + off`.
#[inline(always)]
fn pointer_at(base: *const u8, off: u32) -> Option<*const u8> {
    // SAFETY: a probe read; a bad address makes the helper fail, never fault.
    unsafe { bpf_probe_read_kernel(base.add(off as usize).cast::<*const u8>()) }.ok()
}

/// The inode number of the current task's `fd`, or 0 when it cannot be read.
#[inline(never)]
fn inode_of(fd: u32) -> u64 {
    let read = || -> Option<u64> {
        // SAFETY: the helper has no preconditions.
        let task = unsafe { bpf_get_current_task() } as *const u8;
        let files = pointer_at(task, TASK_FILES_OFF.load())?;
        let fdt = pointer_at(files, FILES_FDT_OFF.load())?;
        // SAFETY: as in pointer_at.
        let max_fds = unsafe {
            bpf_probe_read_kernel(fdt.add(FDT_MAX_FDS_OFF.load() as usize).cast::<u32>())
        }
        .ok()?;
        if fd >= max_fds {
            return None;
        }
        let table = pointer_at(fdt, FDT_FD_OFF.load())?;
        let file = pointer_at(table, fd * 8)?;
        let inode = pointer_at(file, FILE_INODE_OFF.load())?;
        // SAFETY: as in pointer_at; `i_ino` is an unsigned long.
        unsafe { bpf_probe_read_kernel(inode.add(INODE_INO_OFF.load() as usize).cast::<u64>()) }
            .ok()
    };
    read().unwrap_or(0)
}

/// For a successful call of a `CLASS_FD_INODE_*` class: puts the inode numbers of the
/// fds it made in `args[4]`/`args[5]` and returns `REC_FD_INODES`; else 0 and `args`
/// untouched.
#[inline(always)]
pub fn fill(class: u32, args: &mut [u64; 6], ret: i64) -> u16 {
    let wanted = CLASS_FD_INODE_RET | CLASS_FD_INODE_PAIR_ARG0 | CLASS_FD_INODE_PAIR_ARG3;
    if class & wanted == 0 || ret < 0 || TASK_FILES_OFF.load() == 0 {
        return 0;
    }
    if class & CLASS_FD_INODE_RET != 0 {
        let ino = inode_of(ret as u32);
        if ino == 0 {
            return 0;
        }
        args[5] = ino;
        return REC_FD_INODES;
    }
    let at = if class & CLASS_FD_INODE_PAIR_ARG0 != 0 {
        args[0]
    } else {
        args[3]
    };
    // SAFETY: a probe read of the task's memory, where the call just wrote its fds.
    let Ok(fds) = (unsafe { bpf_probe_read_user(at as *const [u32; 2]) }) else {
        return 0;
    };
    let (first, second) = (inode_of(fds[0]), inode_of(fds[1]));
    if first == 0 || second == 0 {
        return 0;
    }
    args[4] = first;
    args[5] = second;
    REC_FD_INODES
}
