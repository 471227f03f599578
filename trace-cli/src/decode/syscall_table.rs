//! Syscall numbers to names, for the architecture rtrace runs on (the `syscalls` crate's
//! tables, generated from the kernel's own). Also the tracefs event name, which differs
//! from the table's name for a few calls (perf keeps the same aliases).

#[cfg(target_arch = "x86_64")]
use syscalls::x86_64::Sysno;

#[cfg(target_arch = "aarch64")]
use syscalls::aarch64::Sysno;

/// Numbers below this are looked up in the table (the native tables end well before).
pub const MAX_NR: u32 = 1024;

pub fn name(nr: u32) -> Option<&'static str> {
    Sysno::new(nr as usize).map(|s| s.name())
}

pub fn number(name: &str) -> Option<u32> {
    name.parse::<Sysno>().ok().map(|s| s.id() as u32)
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
    }

    #[test]
    fn aliases() {
        assert_eq!(event_name("stat"), "newstat");
        assert_eq!(event_name("openat"), "openat");
    }
}
