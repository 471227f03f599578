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
