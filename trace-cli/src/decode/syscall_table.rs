//! Syscall numbers to names, for the architecture rtrace runs on: its native table and
//! its 32-bit tasks' (i386 on x86_64, arm on arm64). Each is the `syscalls` crate's
//! (generated from the kernel's own) with the names perf and strace give where the
//! crate's differ or it has none. Also the tracefs event name, which differs from the
//! table's name for a few calls (perf keeps the same aliases).

use trace_common::maps::{ARM_PRIVATE_BASE, ARM_PRIVATE_INDEX, COMPAT_BASE, SYSCALL_INDEXES};

/// Syscall indexes run below this: the native table, then the 32-bit one from
/// `COMPAT_BASE` (see `trace_common::maps`).
pub const MAX_NR: u32 = SYSCALL_INDEXES;

/// One table: the `syscalls` crate's, and the names that take its numbers over.
struct Table {
    crate_name: fn(u32) -> Option<&'static str>,
    crate_number: fn(&str) -> Option<u32>,
    /// (number, name): where perf and strace name a call otherwise than the crate
    /// (the crate's name is then no name of this table), or name one it lacks.
    names: &'static [(u32, &'static str)],
    /// Numbers (first, last) the crate names that this architecture has no call for.
    absent: &'static [(u32, u32)],
}

/// The table of one of the `syscalls` crate's architectures, with `names` over it.
macro_rules! table {
    ($arch:ident, $names:expr) => {
        table!($arch, $names, &[])
    };
    ($arch:ident, $names:expr, $absent:expr) => {
        Table {
            crate_name: |nr| syscalls::$arch::Sysno::new(nr as usize).map(|s| s.name()),
            crate_number: |name| {
                name.parse::<syscalls::$arch::Sysno>()
                    .ok()
                    .map(|s| s.id() as u32)
            },
            names: $names,
            absent: $absent,
        }
    };
}

impl Table {
    fn name(&self, nr: u32) -> Option<&'static str> {
        match self.names.iter().find(|(n, _)| *n == nr) {
            Some((_, name)) => Some(name),
            None => (self.crate_name)(nr).filter(|_| !self.is_absent(nr)),
        }
    }

    fn number(&self, name: &str) -> Option<u32> {
        if let Some((nr, _)) = self.names.iter().find(|(_, n)| *n == name) {
            return Some(*nr);
        }
        (self.crate_number)(name)
            .filter(|nr| self.names.iter().all(|(n, _)| n != nr) && !self.is_absent(*nr))
    }

    fn is_absent(&self, nr: u32) -> bool {
        self.absent
            .iter()
            .any(|&(first, last)| (first..=last).contains(&nr))
    }
}

/// An architecture: its native table and its 32-bit tasks', and where its kernel names
/// a native call's tracefs events otherwise than every architecture does
/// ([`EVENT_ALIASES`]): (table name, event name).
struct Arch {
    native: Table,
    compat: Table,
    events: &'static [(&'static str, &'static str)],
    /// What the kernel's `SYSCALL_DEFINE` puts before an event's name to name the
    /// native call's function (arch/*/include/asm/syscall_wrapper.h).
    functions: &'static str,
}

impl Arch {
    fn name(&self, idx: u32) -> Option<&'static str> {
        match idx {
            ..COMPAT_BASE => self.native.name(idx),
            // ARM's private calls, in the last indexes (see `ARM_PRIVATE_INDEX`): the
            // 32-bit table names them by their own number.
            ARM_PRIVATE_INDEX..SYSCALL_INDEXES => {
                self.compat.name(ARM_PRIVATE_BASE + idx - ARM_PRIVATE_INDEX)
            }
            COMPAT_BASE..ARM_PRIVATE_INDEX => self.compat.name(idx - COMPAT_BASE),
            _ => None,
        }
    }

    fn number(&self, name: &str) -> Option<u32> {
        self.native.number(name)
    }

    /// The index of a 32-bit task's call, as the kernel side makes it.
    #[cfg(test)]
    fn compat_number(&self, name: &str) -> Option<u32> {
        let nr = self.compat.number(name)?;
        match nr.checked_sub(ARM_PRIVATE_BASE) {
            Some(n) if n < trace_common::maps::ARM_PRIVATE_SLOTS => Some(ARM_PRIVATE_INDEX + n),
            _ => Some(COMPAT_BASE + nr),
        }
    }
}

#[cfg(any(test, target_arch = "x86_64"))]
const X86_64: Arch = Arch {
    native: table!(x86_64, &[]),
    compat: table!(x86, &[]),
    events: &[],
    functions: "__x64_sys_",
};

#[cfg(any(test, target_arch = "aarch64"))]
const AARCH64: Arch = Arch {
    // The crate takes the generic unistd.h's `__NR3264_fstatat`; arm64's own table,
    // perf, strace and the tracefs event say newfstatat.
    // 403..=423 are the time64 calls of 32-bit architectures (the generic unistd.h has
    // them only where longs are 32 bits): on arm64 they are ENOSYS, not calls.
    native: table!(aarch64, &[(79, "newfstatat")], &[(403, 423)]),
    // ARM's private calls (`__ARM_NR_BASE` 0xf0000 + n), which the crate's table,
    // made from syscall.tbl, lacks: strace's names.
    compat: table!(
        arm,
        &[
            (0xf0001, "breakpoint"),
            (0xf0002, "cacheflush"),
            (0xf0003, "usr26"),
            (0xf0004, "usr32"),
            (0xf0005, "set_tls"),
            (0xf0006, "get_tls"),
        ]
    ),
    // arm64's kernel defines these two under other names (mm/fadvise.c's
    // fadvise64_64; arch/arm64's own personality wrapper), and so names their events.
    events: &[
        ("fadvise64", "fadvise64_64"),
        ("personality", "arm64_personality"),
    ],
    functions: "__arm64_sys_",
};

#[cfg(target_arch = "x86_64")]
const THIS: &Arch = &X86_64;
#[cfg(target_arch = "aarch64")]
const THIS: &Arch = &AARCH64;

/// The name of a syscall index (native or 32-bit).
pub fn name(idx: u32) -> Option<&'static str> {
    THIS.name(idx)
}

/// The native index of a syscall name.
pub fn number(name: &str) -> Option<u32> {
    THIS.number(name)
}

/// The 32-bit table's index of a syscall name.
#[cfg(test)]
pub fn compat_number(name: &str) -> Option<u32> {
    THIS.compat_number(name)
}

/// Table name -> the name under `events/syscalls/sys_enter_<name>` when they differ.
const EVENT_ALIASES: &[(&str, &str)] = &[
    ("stat", "newstat"),
    ("fstat", "newfstat"),
    ("lstat", "newlstat"),
    ("uname", "newuname"),
    ("umount2", "umount"),
    ("sendfile", "sendfile64"),
    ("_sysctl", "sysctl"),
    // 32-bit tables' names
    ("ugetrlimit", "getrlimit"),
    ("_llseek", "llseek"),
    ("mmap2", "mmap_pgoff"),
    ("_newselect", "select"),
];

/// The table name for a tracefs event name (`newstat` -> `stat`), if they differ.
pub fn table_name_of_event(event: &str) -> Option<&'static str> {
    THIS.table_name_of_event(event)
}

/// The name under `events/syscalls/sys_enter_<name>` of a table's name.
pub fn event_name(name: &str) -> &str {
    THIS.event_name(name)
}

/// The kernel function that runs a native call, by its table name
/// (`openat` -> `__x64_sys_openat`): fentry's target.
pub fn function_name(name: &str) -> String {
    THIS.function_name(name)
}

impl Arch {
    fn function_name(&self, name: &str) -> String {
        format!("{}{}", self.functions, self.event_name(name))
    }

    fn aliases(&self) -> impl Iterator<Item = &(&'static str, &'static str)> {
        self.events.iter().chain(EVENT_ALIASES)
    }

    fn table_name_of_event(&self, event: &str) -> Option<&'static str> {
        self.aliases()
            .find(|(_, e)| *e == event)
            .map(|(table, _)| *table)
    }

    fn event_name<'a>(&self, name: &'a str) -> &'a str {
        self.aliases()
            .find(|(table, _)| *table == name)
            .map_or(name, |(_, event)| event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x86_64_names() {
        assert_eq!(name(0), Some("read"));
        assert_eq!(name(257), Some("openat"));
        assert_eq!(name(231), Some("exit_group"));
        assert_eq!(number("execve"), Some(59));
        assert_eq!(name(100_000), None);
        // i386: exit_group is 252, openat 295
        assert_eq!(name(1024 + 252), Some("exit_group"));
        assert_eq!(compat_number("openat"), Some(1024 + 295));
    }

    /// arm64's names are perf's and strace's, on any host.
    #[test]
    fn aarch64_names() {
        let a = &AARCH64;
        assert_eq!(a.name(56), Some("openat"));
        assert_eq!(a.name(94), Some("exit_group"));
        assert_eq!(a.number("execve"), Some(221));
        // 79 is x86_64's newfstatat (262): the same name, so the same beautifier and
        // `-e newfstatat` (which matches names) selects it.
        assert_eq!(a.name(79), Some("newfstatat"));
        assert_eq!(a.name(79), X86_64.name(262));
        assert_eq!(a.number("newfstatat"), Some(79));
        assert_eq!(event_name(a.name(79).unwrap()), "newfstatat");
        // The crate's name is no longer one of the table's.
        assert_eq!(a.number("fstatat"), None);
        assert!((0..MAX_NR).all(|idx| a.name(idx) != Some("fstatat")));
        assert_eq!(a.name(80), Some("fstat"));
        // Its events' names where arm64's kernel differs.
        assert_eq!(a.event_name(a.name(223).unwrap()), "fadvise64_64");
        assert_eq!(a.table_name_of_event("fadvise64_64"), Some("fadvise64"));
        assert_eq!(a.event_name(a.name(92).unwrap()), "arm64_personality");
        assert_eq!(a.event_name("fstat"), "newfstat");
        assert_eq!(X86_64.event_name("fadvise64"), "fadvise64");
        assert_eq!(X86_64.event_name("personality"), "personality");
        // Their functions, named as SYSCALL_DEFINE names them.
        assert_eq!(a.function_name("openat"), "__arm64_sys_openat");
        assert_eq!(
            a.function_name("personality"),
            "__arm64_sys_arm64_personality"
        );
        assert_eq!(X86_64.function_name("stat"), "__x64_sys_newstat");
        // The 32-bit architectures' time64 calls are no calls of arm64's.
        assert_eq!(a.name(403), None);
        assert_eq!(a.name(423), None);
        assert_eq!(a.number("clock_gettime64"), None);
        assert_eq!(a.name(424), Some("pidfd_send_signal"));
        assert_eq!(a.compat_number("clock_gettime64"), Some(COMPAT_BASE + 403));
    }

    /// A 32-bit arm task's calls on arm64: the arm table, ARM's private calls included.
    #[test]
    fn arm_names() {
        let a = &AARCH64;
        // arm: exit_group is 248, openat 322, fstatat64 327.
        assert_eq!(a.name(COMPAT_BASE + 248), Some("exit_group"));
        assert_eq!(a.compat_number("openat"), Some(COMPAT_BASE + 322));
        assert_eq!(a.name(COMPAT_BASE + 327), Some("fstatat64"));
        // The kernel side gives these the last indexes.
        let private = |n: u32| a.name(ARM_PRIVATE_INDEX + n);
        assert_eq!(private(1), Some("breakpoint"));
        assert_eq!(private(2), Some("cacheflush"));
        assert_eq!(private(3), Some("usr26"));
        assert_eq!(private(4), Some("usr32"));
        assert_eq!(private(5), Some("set_tls"));
        assert_eq!(private(6), Some("get_tls"));
        assert_eq!(private(7), None);
        assert_eq!(a.compat_number("cacheflush"), Some(ARM_PRIVATE_INDEX + 2));
        // A native task's number that high is no call: not taken for an arm one.
        assert_eq!(a.name(0xf0002), None);
        assert_eq!(a.name(COMPAT_BASE + 0xf0002), None);
        // The arm table ends well below the private calls' indexes.
        assert!((ARM_PRIVATE_INDEX - COMPAT_BASE..1024).all(|nr| a.compat.name(nr).is_none()));
        // Not native calls.
        assert_eq!(a.number("cacheflush"), None);
        // x86 has no such calls.
        assert_eq!(X86_64.name(ARM_PRIVATE_INDEX + 5), None);
    }

    #[test]
    fn aliases() {
        assert_eq!(event_name("stat"), "newstat");
        assert_eq!(event_name("openat"), "openat");
    }
}
