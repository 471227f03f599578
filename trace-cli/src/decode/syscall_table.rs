//! Syscall numbers to names, for the architecture rtrace runs on (the `syscalls` crate's
//! tables, generated from the kernel's own). Also the tracefs event name, which differs
//! from the table's name for a few calls (perf keeps the same aliases).

use trace_common::maps::{COMPAT_BASE, SYSCALL_INDEXES};

#[cfg(target_arch = "x86_64")]
use syscalls::{x86::Sysno as CompatSysno, x86_64::Sysno};

#[cfg(target_arch = "aarch64")]
use syscalls::{aarch64::Sysno, arm::Sysno as CompatSysno};

/// Syscall indexes run below this: the native table, then the 32-bit one from
/// `COMPAT_BASE` (see `trace_common::maps`).
pub const MAX_NR: u32 = SYSCALL_INDEXES;

/// The name of a syscall index (native or 32-bit).
pub fn name(idx: u32) -> Option<&'static str> {
    if idx >= COMPAT_BASE {
        return CompatSysno::new((idx - COMPAT_BASE) as usize).map(|s| s.name());
    }
    Sysno::new(idx as usize).map(|s| s.name())
}

/// The native index of a syscall name.
pub fn number(name: &str) -> Option<u32> {
    name.parse::<Sysno>().ok().map(|s| s.id() as u32)
}

/// The 32-bit table's index of a syscall name.
#[cfg(test)]
pub fn compat_number(name: &str) -> Option<u32> {
    name.parse::<CompatSysno>()
        .ok()
        .map(|s| COMPAT_BASE + s.id() as u32)
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
    EVENT_ALIASES
        .iter()
        .find(|(_, e)| *e == event)
        .map(|(table, _)| *table)
}

pub fn event_name(name: &str) -> &str {
    EVENT_ALIASES
        .iter()
        .find(|(table, _)| *table == name)
        .map_or(name, |(_, event)| event)
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

    #[test]
    fn aliases() {
        assert_eq!(event_name("stat"), "newstat");
        assert_eq!(event_name("openat"), "openat");
    }
}
