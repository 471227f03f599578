//! Where the fields of the structs a call reads or writes lie, read once into plain
//! values: the line (structs.rs, mod.rs) and `--json` (output/json_structs.rs) write
//! these, so the layouts are known in one place. Pure: bytes in; None when the bytes
//! are too short for the struct.

use std::net::{Ipv4Addr, Ipv6Addr};

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

/// A socket address, by its family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SockAddr<'a> {
    Inet {
        port: u16,
        addr: Ipv4Addr,
    },
    Inet6 {
        port: u16,
        addr: Ipv6Addr,
    },
    /// A local socket without a name (only the family: its length says so).
    Unnamed,
    /// A local socket's path, up to its NUL.
    Local(&'a [u8]),
    /// A local socket's abstract name (after its leading NUL, bytes of any kind).
    Abstract(&'a [u8]),
    /// Another family, or one too short for its address: the family alone.
    Family(i32),
}

pub fn sockaddr(b: &[u8]) -> Option<SockAddr<'_>> {
    let family = i32::from(u16::from_ne_bytes([*b.first()?, *b.get(1)?]));
    let port = || u16::from_be_bytes([b[2], b[3]]);
    Some(match family {
        libc::AF_INET if b.len() >= 8 => SockAddr::Inet {
            port: port(),
            addr: Ipv4Addr::new(b[4], b[5], b[6], b[7]),
        },
        libc::AF_INET6 if b.len() >= 24 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(&b[8..24]);
            SockAddr::Inet6 {
                port: port(),
                addr: Ipv6Addr::from(a),
            }
        }
        libc::AF_UNIX if b.len() == 2 => SockAddr::Unnamed,
        libc::AF_UNIX => match b[2..].split_first() {
            Some((0, name)) => SockAddr::Abstract(name),
            _ => {
                let path = &b[2..];
                SockAddr::Local(&path[..path.iter().position(|&c| c == 0).unwrap_or(path.len())])
            }
        },
        f => SockAddr::Family(f),
    })
}

/// A time as the kernel writes it in a struct: seconds and nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Time {
    pub sec: i64,
    pub nsec: i64,
}

/// `struct statx` (include/uapi/linux/stat.h), 256 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Statx {
    pub mask: u32,
    pub blksize: u32,
    pub attributes: u64,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
    pub ino: u64,
    pub size: u64,
    pub blocks: u64,
    pub attributes_mask: u64,
    pub atime: Time,
    pub btime: Time,
    pub ctime: Time,
    pub mtime: Time,
    pub rdev_major: u32,
    pub rdev_minor: u32,
    pub dev_major: u32,
    pub dev_minor: u32,
}

pub fn statx(b: &[u8]) -> Option<Statx> {
    if b.len() < 256 {
        return None;
    }
    // struct statx_timestamp: s64 seconds, u32 nanoseconds, s32 reserved.
    let time = |at: usize| Time {
        sec: u64_at(b, at) as i64,
        nsec: i64::from(u32_at(b, at + 8)),
    };
    Some(Statx {
        mask: u32_at(b, 0),
        blksize: u32_at(b, 4),
        attributes: u64_at(b, 8),
        nlink: u32_at(b, 16),
        uid: u32_at(b, 20),
        gid: u32_at(b, 24),
        mode: u32::from(u16::from_ne_bytes([b[28], b[29]])),
        ino: u64_at(b, 32),
        size: u64_at(b, 40),
        blocks: u64_at(b, 48),
        attributes_mask: u64_at(b, 56),
        atime: time(64),
        btime: time(80),
        ctime: time(96),
        mtime: time(112),
        rdev_major: u32_at(b, 128),
        rdev_minor: u32_at(b, 132),
        dev_major: u32_at(b, 136),
        dev_minor: u32_at(b, 140),
    })
}

/// The kernel's `struct sigaction` on a 64-bit kernel: four 8-byte words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SigAction {
    pub handler: u64,
    pub flags: u64,
    pub restorer: u64,
    pub mask: u64,
}

pub fn sigaction(b: &[u8]) -> Option<SigAction> {
    if b.len() < 32 {
        return None;
    }
    Some(SigAction {
        handler: u64_at(b, 0),
        flags: u64_at(b, 8),
        restorer: u64_at(b, 16),
        mask: u64_at(b, 24),
    })
}

/// getdents64's entries (`struct linux_dirent64`: u64 ino, s64 off, u16 reclen, u8
/// type, the name up to its NUL), by name. It stops at the end of the bytes or at an
/// entry that does not fit in them; [`Dirents::more`] says whether bytes were left.
pub struct Dirents<'a> {
    b: &'a [u8],
    at: usize,
}

pub fn dirents(b: &[u8]) -> Dirents<'_> {
    Dirents { b, at: 0 }
}

impl<'a> Iterator for Dirents<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        const NAME_AT: usize = 19;
        let at = self.at;
        let reclen = self.b.get(at + 16..at + 18)?;
        let reclen = usize::from(u16::from_ne_bytes([reclen[0], reclen[1]]));
        let rec = self.b.get(at..at + reclen).filter(|_| reclen > NAME_AT)?;
        self.at += reclen;
        let name = &rec[NAME_AT..];
        Some(&name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())])
    }
}

impl Dirents<'_> {
    /// Whether bytes are left that were not given out (more entries, or one cut short).
    pub fn more(&self) -> bool {
        self.at < self.b.len()
    }
}

/// poll's `struct pollfd`s: fd, events and revents, 8 bytes each.
pub fn pollfds(b: &[u8]) -> impl ExactSizeIterator<Item = (i32, u16, u16)> + '_ {
    b.chunks_exact(8).map(|e| {
        (
            i32::from_ne_bytes([e[0], e[1], e[2], e[3]]),
            u16::from_ne_bytes([e[4], e[5]]),
            u16::from_ne_bytes([e[6], e[7]]),
        )
    })
}

/// execve's argv and envp as read: each string ends with its NUL; an empty one is an
/// argument too.
pub fn strings(b: &[u8]) -> impl Iterator<Item = &[u8]> {
    let all = b.strip_suffix(&[0]).unwrap_or(b);
    all.split(|&c| c == 0).filter(move |_| !all.is_empty())
}
