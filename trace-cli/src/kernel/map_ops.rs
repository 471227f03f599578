//! The few `bpf(2)` map calls rtrace makes itself, on a pid map's fd (u32 keys, u32
//! values). aya's `keys()` iterator chooses its own cursor, which the prune walk must
//! not do (see `pids::prune`), so the walk calls bpf(2) itself, through `sys_bpf`.

use std::{
    io,
    os::fd::{AsRawFd, BorrowedFd},
};

use aya_obj::generated::{
    bpf_attr,
    bpf_cmd::{self, BPF_MAP_DELETE_ELEM, BPF_MAP_GET_NEXT_KEY, BPF_MAP_UPDATE_ELEM},
};

use super::sys_bpf;
use crate::pids::prune::KeyWalk;

fn bpf(cmd: bpf_cmd, attr: &mut bpf_attr) -> io::Result<()> {
    sys_bpf::call(cmd, attr).map(drop)
}

pub struct PidMapFd<'a> {
    fd: BorrowedFd<'a>,
}

impl<'a> PidMapFd<'a> {
    pub fn new(fd: BorrowedFd<'a>) -> Self {
        Self { fd }
    }

    /// The element commands' attr on this map: `key` and `value_or_next` the
    /// addresses of the caller's u32s (0: none).
    fn attr(&self, key: u64, value_or_next: u64) -> bpf_attr {
        let mut a = sys_bpf::attr();
        a.__bindgen_anon_2.map_fd = self.fd.as_raw_fd() as u32;
        a.__bindgen_anon_2.key = key;
        a.__bindgen_anon_2.__bindgen_anon_1.value = value_or_next;
        a
    }

    pub fn insert(&self, key: u32, value: u32) -> io::Result<()> {
        let mut a = self.attr(&key as *const u32 as u64, &value as *const u32 as u64);
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
        // A null key asks for the first key.
        let mut a = self.attr(
            cursor.as_ref().map_or(0, |k| k as *const u32 as u64),
            &mut next as *mut u32 as u64,
        );
        match bpf(BPF_MAP_GET_NEXT_KEY, &mut a) {
            Ok(()) => Ok(Some(next)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn delete(&mut self, key: u32) -> io::Result<()> {
        let mut a = self.attr(&key as *const u32 as u64, 0);
        bpf(BPF_MAP_DELETE_ELEM, &mut a)
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::{AsFd, OwnedFd};

    use super::*;
    use crate::pids::prune::prune;

    /// A real kernel hash map (u32 -> u32), or `None` when this process may not make
    /// one (not root): the test then says it skipped, and fails where CI asks that BPF
    /// be there (`RTRACE_REQUIRE_BPF=1`).
    fn kernel_hash_map(max_entries: u32) -> Option<OwnedFd> {
        let mut attr = sys_bpf::attr();
        attr.__bindgen_anon_1.map_type = aya_obj::generated::bpf_map_type::BPF_MAP_TYPE_HASH as u32;
        attr.__bindgen_anon_1.key_size = 4;
        attr.__bindgen_anon_1.value_size = 4;
        attr.__bindgen_anon_1.max_entries = max_entries;
        let made = sys_bpf::new_fd(bpf_cmd::BPF_MAP_CREATE, &mut attr);
        let why_not = made.as_ref().err().map(|e| format!("BPF_MAP_CREATE: {e}"));
        if !crate::kernel::can_run("a prune test on a kernel map", why_not) {
            return None;
        }
        made.ok()
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
