//! How many entries the BPF hash maps of a process hold: each map it has open (its
//! /proc fdinfo names the map's id, type and key size) opened by id and walked key by
//! key with bpf(2), as `bpftool map dump` would.

use std::{
    fs, io,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
};

const BPF_MAP_GET_NEXT_KEY: libc::c_long = 4;
const BPF_MAP_GET_FD_BY_ID: libc::c_long = 14;
/// BPF_MAP_TYPE_HASH, BPF_MAP_TYPE_PERCPU_HASH, BPF_MAP_TYPE_LRU_HASH.
const HASH_TYPES: [u32; 3] = [1, 5, 9];

fn bpf(cmd: libc::c_long, attr: &mut [u64; 6]) -> io::Result<i64> {
    // SAFETY: attr is a zero-padded bpf_attr large enough for the commands used here.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr.as_mut_ptr(),
            std::mem::size_of_val(attr) as u32,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn open_by_id(id: u32) -> io::Result<OwnedFd> {
    let mut attr = [0u64; 6];
    attr[0] = u64::from(id);
    let fd = bpf(BPF_MAP_GET_FD_BY_ID, &mut attr)?;
    // SAFETY: a new descriptor that we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn count(fd: &OwnedFd, key_size: usize) -> usize {
    let mut key = vec![0u8; key_size.max(1)];
    let mut next = vec![0u8; key_size.max(1)];
    let mut n = 0;
    let mut first = true;
    loop {
        let mut attr = [0u64; 6];
        attr[0] = fd.as_raw_fd() as u64;
        attr[1] = if first { 0 } else { key.as_ptr() as u64 };
        attr[2] = next.as_mut_ptr() as u64;
        if bpf(BPF_MAP_GET_NEXT_KEY, &mut attr).is_err() {
            return n;
        }
        first = false;
        n += 1;
        std::mem::swap(&mut key, &mut next);
    }
}

/// The entries of every hash map process `pid` holds, summed.
pub fn hash_entries(pid: u32) -> usize {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return 0;
    };
    let mut seen = Vec::new();
    let mut total = 0;
    for entry in dir.filter_map(Result::ok) {
        let Ok(info) = fs::read_to_string(entry.path()) else {
            continue;
        };
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse::<u32>().ok())
        };
        let (Some(id), Some(kind), Some(key_size)) =
            (field("map_id:"), field("map_type:"), field("key_size:"))
        else {
            continue;
        };
        if !HASH_TYPES.contains(&kind) || seen.contains(&id) {
            continue;
        }
        seen.push(id);
        if let Ok(fd) = open_by_id(id) {
            total += count(&fd, key_size as usize);
        }
    }
    total
}
