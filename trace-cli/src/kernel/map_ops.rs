//! The few `bpf(2)` map calls rtrace makes itself, on a pid map's fd (u32 keys, u32
//! values). aya's `keys()` iterator chooses its own cursor, which the prune walk must
//! not do (see `pids::prune`), so this is the one place that calls bpf(2) directly.

use std::{
    io,
    os::fd::{AsRawFd, BorrowedFd},
};

use crate::pids::prune::KeyWalk;

const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
const BPF_MAP_GET_NEXT_KEY: libc::c_long = 4;

/// The `union bpf_attr` member used by the element commands.
#[repr(C)]
#[derive(Default)]
struct ElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value_or_next_key: u64,
    flags: u64,
}

fn bpf(cmd: libc::c_long, attr: &mut ElemAttr) -> io::Result<()> {
    // SAFETY: attr is a valid, initialised bpf_attr prefix of the size passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut ElemAttr,
            std::mem::size_of::<ElemAttr>() as u32,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

pub struct PidMapFd<'a> {
    fd: BorrowedFd<'a>,
}

impl<'a> PidMapFd<'a> {
    pub fn new(fd: BorrowedFd<'a>) -> Self {
        Self { fd }
    }

    fn attr(&self) -> ElemAttr {
        ElemAttr {
            map_fd: self.fd.as_raw_fd() as u32,
            ..Default::default()
        }
    }

    pub fn insert(&self, key: u32, value: u32) -> io::Result<()> {
        let mut a = self.attr();
        a.key = &key as *const u32 as u64;
        a.value_or_next_key = &value as *const u32 as u64;
        bpf(BPF_MAP_UPDATE_ELEM, &mut a)
    }

    pub fn is_empty(&self) -> io::Result<bool> {
        let mut me = PidMapFd { fd: self.fd };
        Ok(me.next_key(None)?.is_none())
    }
}

impl KeyWalk for PidMapFd<'_> {
    fn next_key(&mut self, cursor: Option<u32>) -> io::Result<Option<u32>> {
        let mut next = 0u32;
        let mut a = self.attr();
        // A null key asks for the first key.
        a.key = cursor.as_ref().map_or(0, |k| k as *const u32 as u64);
        a.value_or_next_key = &mut next as *mut u32 as u64;
        match bpf(BPF_MAP_GET_NEXT_KEY, &mut a) {
            Ok(()) => Ok(Some(next)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn delete(&mut self, key: u32) -> io::Result<()> {
        let mut a = self.attr();
        a.key = &key as *const u32 as u64;
        bpf(BPF_MAP_DELETE_ELEM, &mut a)
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::{AsFd, FromRawFd, OwnedFd};

    use super::*;
    use crate::pids::prune::prune;

    /// The prefix of `union bpf_attr` for BPF_MAP_CREATE, zero-padded.
    #[repr(C)]
    struct CreateAttr {
        map_type: u32,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        rest: [u32; 28],
    }

    /// A real kernel hash map (u32 -> u32), or `None` when this process may not make
    /// one (not root): the test then says it skipped.
    fn kernel_hash_map(max_entries: u32) -> Option<OwnedFd> {
        const BPF_MAP_CREATE: libc::c_long = 0;
        const BPF_MAP_TYPE_HASH: u32 = 1;
        let mut attr = CreateAttr {
            map_type: BPF_MAP_TYPE_HASH,
            key_size: 4,
            value_size: 4,
            max_entries,
            rest: [0; 28],
        };
        // SAFETY: attr is a valid, zero-padded bpf_attr of the size passed.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                BPF_MAP_CREATE,
                &mut attr as *mut CreateAttr,
                std::mem::size_of::<CreateAttr>() as u32,
            )
        };
        if fd < 0 {
            eprintln!(
                "SKIPPED a prune test on a kernel map: BPF_MAP_CREATE: {}",
                io::Error::last_os_error()
            );
            return None;
        }
        // SAFETY: a new descriptor that we own.
        Some(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }

    fn keys(map: &mut PidMapFd<'_>) -> Vec<u32> {
        let mut out = Vec::new();
        let mut cursor = None;
        while let Some(k) = map.next_key(cursor).unwrap() {
            out.push(k);
            cursor = Some(k);
        }
        out.sort_unstable();
        out
    }

    #[test]
    fn prune_on_a_kernel_hash_map() {
        let Some(fd) = kernel_hash_map(64) else {
            return;
        };
        let mut map = PidMapFd::new(fd.as_fd());
        for k in 1..=64 {
            map.insert(k, 1).unwrap();
        }
        // Full, all alive: every key is seen and the walk ends within its bound.
        let s = prune(&mut map, 64, |_| true).unwrap();
        assert_eq!((s.kept, s.removed, s.hit_bound), (64, 0, false));
        // Odd keys dead: exactly they go, whatever order the kernel walks in.
        let s = prune(&mut map, 64, |k| k % 2 == 0).unwrap();
        assert_eq!((s.kept, s.removed, s.hit_bound), (32, 32, false));
        assert_eq!(keys(&mut map), (1..=32).map(|k| 2 * k).collect::<Vec<_>>());
    }

    #[test]
    fn prune_when_the_exit_program_deletes_the_cursor() {
        let Some(fd) = kernel_hash_map(16) else {
            return;
        };
        let mut map = PidMapFd::new(fd.as_fd());
        for k in 1..=16 {
            map.insert(k, 1).unwrap();
        }
        // As if a task exited during the walk: the exit program deletes the key the
        // walk rests on, once, so the kernel restarts the walk from its first key.
        // Keys 10..=16 are dead and must all go, within the bound.
        let other = PidMapFd::new(fd.as_fd());
        let mut last_kept = None;
        let mut checked = 0;
        let s = prune(&mut map, 16, |k| {
            checked += 1;
            if checked == 6
                && let Some(prev) = last_kept
            {
                let mut o = PidMapFd::new(other.fd);
                o.delete(prev).unwrap();
            }
            let alive = k < 10;
            if alive {
                last_kept = Some(k);
            }
            alive
        })
        .unwrap();
        assert!(!s.hit_bound, "{s:?}");
        let left = keys(&mut map);
        assert!(left.iter().all(|&k| k < 10), "{left:?} {s:?}");
    }
}
