//! Structs printed from a table of their fields (`{ .field: value, … }`, perf's style):
//! where each field lies in the native (x86-64, aarch64) layout and how it reads. The
//! structs of `structs.rs` need code of their own; these are only numbers, names and
//! nested times. Pure: bytes in, text out.

use std::fmt::Write as _;

use super::{SignalName, signal_name, tables, write_flags};
use tables::Table;

/// How one field reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// A signed 64-bit number (C `long`).
    I64,
    /// An unsigned 64-bit number.
    U64,
    /// An unsigned 32-bit number.
    U32,
    /// An unsigned 16-bit number.
    U16,
    /// A 64-bit address, in hex.
    Hex,
    /// `{ .tv_sec: s, .tv_nsec: ns }`: two 64-bit fields.
    Timespec,
    /// `{ .tv_sec: s, .tv_usec: us }`: two 64-bit fields.
    Timeval,
    /// Three unsigned 64-bit numbers: `[a, b, c]`.
    U64x3,
    /// Two 32-bit numbers in hex, as strace writes an fsid: `{ .val: [0x1a, 0] }`.
    Fsid,
    /// 64 bits of flags.
    Flags(&'static Table),
    /// A 64-bit value, named from the table when it is in it, else in hex.
    Named(&'static Table),
    /// A signal number, by name.
    Signal,
}

impl Field {
    pub fn size(self) -> usize {
        match self {
            Field::U16 => 2,
            Field::U32 => 4,
            Field::Fsid => 8,
            Field::Timespec | Field::Timeval => 16,
            Field::U64x3 => 24,
            _ => 8,
        }
    }
}

/// A struct: its size as the kernel reads or writes it, and its fields.
#[derive(Debug, PartialEq, Eq)]
pub struct Shape {
    pub size: u16,
    pub fields: &'static [(&'static str, usize, Field)],
    /// Leave out the fields that are zero (a struct mostly of options: clone_args).
    pub skip_zero: bool,
    /// What a 32-bit task passes.
    pub on_32_bit: On32,
}

/// Whether a 32-bit task's struct is laid out as the native one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum On32 {
    /// Its own layout: shown as the pointer.
    Other,
    /// The same (fixed-size fields).
    Same,
    /// The same in the calls named `…time64`, its own in the others.
    SameInTime64,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

/// Writes the struct; false when `b` is too short to hold it.
pub fn write_shape(out: &mut String, shape: &Shape, b: &[u8]) -> bool {
    if b.len() < usize::from(shape.size)
        || shape
            .fields
            .iter()
            .any(|(_, at, f)| at + f.size() > b.len())
    {
        return false;
    }
    out.push('{');
    let mut first = true;
    for &(name, at, field) in shape.fields {
        let zero = b[at..at + field.size()].iter().all(|&c| c == 0);
        if shape.skip_zero && zero && !first {
            continue;
        }
        out.push_str(if first { " ." } else { ", ." });
        first = false;
        out.push_str(name);
        out.push_str(": ");
        write_field(out, field, &b[at..at + field.size()]);
    }
    out.push_str(" }");
    true
}

fn write_field(out: &mut String, field: Field, b: &[u8]) {
    let _ = match field {
        Field::I64 => write!(out, "{}", u64_at(b, 0) as i64),
        Field::U64 => write!(out, "{}", u64_at(b, 0)),
        Field::U32 => write!(out, "{}", u32_at(b, 0)),
        Field::U16 => write!(out, "{}", u16::from_ne_bytes([b[0], b[1]])),
        Field::Hex => write!(out, "{:#x}", u64_at(b, 0)),
        Field::Timespec => write!(
            out,
            "{{ .tv_sec: {}, .tv_nsec: {} }}",
            u64_at(b, 0) as i64,
            u64_at(b, 8) as i64
        ),
        Field::Timeval => write!(
            out,
            "{{ .tv_sec: {}, .tv_usec: {} }}",
            u64_at(b, 0) as i64,
            u64_at(b, 8) as i64
        ),
        Field::U64x3 => write!(
            out,
            "[{}, {}, {}]",
            u64_at(b, 0),
            u64_at(b, 8),
            u64_at(b, 16)
        ),
        Field::Fsid => {
            // In hex, as strace writes it (a zero as 0).
            let hex = |v: u32| match v {
                0 => "0".to_string(),
                v => format!("{v:#x}"),
            };
            write!(
                out,
                "{{ .val: [{}, {}] }}",
                hex(u32_at(b, 0)),
                hex(u32_at(b, 4))
            )
        }
        Field::Flags(table) => {
            write_flags(out, u64_at(b, 0), table, false);
            Ok(())
        }
        Field::Named(table) => {
            let v = u64_at(b, 0);
            match table.entries.iter().find(|(k, _)| *k == v) {
                Some((_, name)) => write!(out, "{name}"),
                None => write!(out, "{v:#x}"),
            }
        }
        Field::Signal => match signal_name(u64_at(b, 0)) {
            Some(SignalName::Named(name)) => write!(out, "SIG{name}"),
            Some(SignalName::RealTime(n)) => write!(out, "SIGRT_{n}"),
            None => write!(out, "{}", u64_at(b, 0)),
        },
    };
}

/// `struct __kernel_itimerspec` (timer_settime, timerfd_settime and their gets).
pub static ITIMERSPEC: Shape = Shape {
    size: 32,
    fields: &[
        ("it_interval", 0, Field::Timespec),
        ("it_value", 16, Field::Timespec),
    ],
    skip_zero: false,
    on_32_bit: On32::SameInTime64,
};

/// `struct __kernel_old_itimerval` (setitimer, getitimer).
pub static ITIMERVAL: Shape = Shape {
    size: 32,
    fields: &[
        ("it_interval", 0, Field::Timeval),
        ("it_value", 16, Field::Timeval),
    ],
    skip_zero: false,
    on_32_bit: On32::Other,
};

/// `struct sysinfo` as a 64-bit kernel writes it.
pub static SYSINFO: Shape = Shape {
    size: 112,
    fields: &[
        ("uptime", 0, Field::I64),
        ("loads", 8, Field::U64x3),
        ("totalram", 32, Field::U64),
        ("freeram", 40, Field::U64),
        ("sharedram", 48, Field::U64),
        ("bufferram", 56, Field::U64),
        ("totalswap", 64, Field::U64),
        ("freeswap", 72, Field::U64),
        ("procs", 80, Field::U16),
        ("totalhigh", 88, Field::U64),
        ("freehigh", 96, Field::U64),
        ("mem_unit", 104, Field::U32),
    ],
    skip_zero: false,
    on_32_bit: On32::Other,
};

/// File system magic numbers, as strace names them.
static FS_MAGIC: Table = Table {
    prefix: "",
    entries: &[
        (0xef53, "EXT2_SUPER_MAGIC"),
        (0x0102_1994, "TMPFS_MAGIC"),
        (0x9fa0, "PROC_SUPER_MAGIC"),
        (0x6265_6572, "SYSFS_MAGIC"),
        (0x9123_683e, "BTRFS_SUPER_MAGIC"),
        (0x5846_5342, "XFS_SUPER_MAGIC"),
        (0x794c_7630, "OVERLAYFS_SUPER_MAGIC"),
        (0x6367_7270, "CGROUP2_SUPER_MAGIC"),
        (0x0027_e0eb, "CGROUP_SUPER_MAGIC"),
        (0x1cd1, "DEVPTS_SUPER_MAGIC"),
        (0x6969, "NFS_SUPER_MAGIC"),
        (0x7371_7368, "SQUASHFS_MAGIC"),
        (0x0102_1997, "V9FS_MAGIC"),
        (0x6573_5546, "FUSE_SUPER_MAGIC"),
        (0xcafe_4a11, "BPF_FS_MAGIC"),
        (0x7472_6163, "TRACEFS_MAGIC"),
        (0x6462_6720, "DEBUGFS_MAGIC"),
        (0x8584_58f6, "RAMFS_MAGIC"),
        (0x4d44, "MSDOS_SUPER_MAGIC"),
        (0x7363_6673, "SECURITYFS_MAGIC"),
        (0x4249_4e4d, "BINFMTFS_MAGIC"),
        (0x6e73_6673, "NSFS_MAGIC"),
        (0x5a3c_69f0, "AAFS_MAGIC"),
        (0x0904_1934, "ANON_INODE_FS_MAGIC"),
        (0x534f_434b, "SOCKFS_MAGIC"),
        (0x5049_5045, "PIPEFS_MAGIC"),
    ],
};

/// `statfs`'s `f_flags` (ST_*).
static STATFS_FLAGS: Table = Table {
    prefix: "",
    entries: &[
        (0x1, "ST_RDONLY"),
        (0x2, "ST_NOSUID"),
        (0x4, "ST_NODEV"),
        (0x8, "ST_NOEXEC"),
        (0x10, "ST_SYNCHRONOUS"),
        (0x20, "ST_VALID"),
        (0x40, "ST_MANDLOCK"),
        (0x400, "ST_NOATIME"),
        (0x800, "ST_NODIRATIME"),
        (0x1000, "ST_RELATIME"),
        (0x2000, "ST_NOSYMFOLLOW"),
    ],
};

/// `struct statfs` as a 64-bit kernel writes it (statfs, fstatfs).
pub static STATFS: Shape = Shape {
    size: 120,
    fields: &[
        ("f_type", 0, Field::Named(&FS_MAGIC)),
        ("f_bsize", 8, Field::I64),
        ("f_blocks", 16, Field::U64),
        ("f_bfree", 24, Field::U64),
        ("f_bavail", 32, Field::U64),
        ("f_files", 40, Field::U64),
        ("f_ffree", 48, Field::U64),
        ("f_fsid", 56, Field::Fsid),
        ("f_namelen", 64, Field::I64),
        ("f_frsize", 72, Field::I64),
        ("f_flags", 80, Field::Flags(&STATFS_FLAGS)),
    ],
    skip_zero: false,
    on_32_bit: On32::Other,
};

/// `struct clone_args` (clone3), the fields a caller set: the flags always.
pub static CLONE_ARGS: Shape = Shape {
    size: 88,
    fields: &[
        ("flags", 0, Field::Flags(&tables::CLONE_FLAGS)),
        ("pidfd", 8, Field::Hex),
        ("child_tid", 16, Field::Hex),
        ("parent_tid", 24, Field::Hex),
        ("exit_signal", 32, Field::Signal),
        ("stack", 40, Field::Hex),
        ("stack_size", 48, Field::U64),
        ("tls", 56, Field::Hex),
        ("set_tid", 64, Field::Hex),
        ("set_tid_size", 72, Field::U64),
        ("cgroup", 80, Field::U64),
    ],
    skip_zero: true,
    on_32_bit: On32::Same,
};

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }

    fn show(shape: &Shape, b: &[u8]) -> String {
        let mut s = String::new();
        assert!(write_shape(&mut s, shape, b));
        s
    }

    #[test]
    fn timers_show_interval_and_value() {
        assert_eq!(
            show(&ITIMERSPEC, &bytes(&[0, 0, 5, 250])),
            "{ .it_interval: { .tv_sec: 0, .tv_nsec: 0 }, .it_value: { .tv_sec: 5, .tv_nsec: 250 } }"
        );
        assert_eq!(
            show(&ITIMERVAL, &bytes(&[1, 0, 7, 500])),
            "{ .it_interval: { .tv_sec: 1, .tv_usec: 0 }, .it_value: { .tv_sec: 7, .tv_usec: 500 } }"
        );
        let mut s = String::new();
        assert!(
            !write_shape(&mut s, &ITIMERSPEC, &bytes(&[0, 0, 5])),
            "too short"
        );
    }

    #[test]
    fn clone_args_show_what_was_set() {
        let flags = (libc::CLONE_VM | libc::CLONE_VFORK) as u64;
        let b = bytes(&[flags, 0, 0, 0, 17, 0x7f00, 0x9000, 0, 0, 0, 0]);
        assert_eq!(
            show(&CLONE_ARGS, &b),
            "{ .flags: VM|VFORK, .exit_signal: SIGCHLD, .stack: 0x7f00, .stack_size: 36864 }"
        );
        // The flags are shown even when zero.
        assert_eq!(show(&CLONE_ARGS, &bytes(&[0; 11])), "{ .flags: 0 }");
    }

    #[test]
    fn statfs_names_the_file_system_and_its_flags() {
        let mut b = bytes(&[
            0xef53, 4096, 100, 50, 40, 1000, 900, 0, 255, 4096, 0x1020, 0, 0, 0, 0,
        ]);
        b[56..60].copy_from_slice(&0x4d20_8e3au32.to_ne_bytes());
        assert_eq!(
            show(&STATFS, &b),
            "{ .f_type: EXT2_SUPER_MAGIC, .f_bsize: 4096, .f_blocks: 100, .f_bfree: 50, \
             .f_bavail: 40, .f_files: 1000, .f_ffree: 900, .f_fsid: { .val: [0x4d208e3a, 0] }, \
             .f_namelen: 255, .f_frsize: 4096, .f_flags: ST_VALID|ST_RELATIME }"
        );
    }
}
