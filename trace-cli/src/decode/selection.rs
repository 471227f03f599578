//! `-e/--expr/--event`: which syscalls to trace. A comma list of names, globs (`open*`),
//! perf's aliases (`newstat` for `stat`…) and strace's groups (`file`, `string`); a
//! leading `!` selects everything but the list.

use thiserror::Error;

use crate::decode::syscall_table;

#[derive(Debug, Error, PartialEq)]
pub enum SelectionError {
    #[error("-e '{0}' selects no syscall")]
    Empty(String),
}

#[derive(Debug, Default, PartialEq)]
pub struct Selection {
    /// Selected syscall numbers, ascending.
    pub nrs: Vec<u32>,
    /// Names that matched nothing (warned about, then skipped).
    pub unknown: Vec<String>,
}

/// Syscalls that take a file name (strace's %file).
const FILE_GROUP: &[&str] = &[
    "access",
    "acct",
    "chdir",
    "chmod",
    "chown",
    "chroot",
    "creat",
    "execve",
    "execveat",
    "faccessat",
    "faccessat2",
    "fanotify_mark",
    "fchmodat",
    "fchmodat2",
    "fchownat",
    "fsconfig",
    "getxattr",
    "inotify_add_watch",
    "lchown",
    "lgetxattr",
    "link",
    "linkat",
    "listxattr",
    "llistxattr",
    "lremovexattr",
    "lsetxattr",
    "lstat",
    "mkdir",
    "mkdirat",
    "mknod",
    "mknodat",
    "mount",
    "name_to_handle_at",
    "newfstatat",
    "open",
    "open_tree",
    "openat",
    "openat2",
    "pivot_root",
    "quotactl",
    "readlink",
    "readlinkat",
    "removexattr",
    "rename",
    "renameat",
    "renameat2",
    "rmdir",
    "setxattr",
    "stat",
    "statfs",
    "statx",
    "swapoff",
    "swapon",
    "symlink",
    "symlinkat",
    "truncate",
    "umount2",
    "unlink",
    "unlinkat",
    "uselib",
    "utime",
    "utimensat",
    "utimes",
];

/// Syscalls with a string argument (perf's `string` group): the file ones and more.
const STRING_EXTRA: &[&str] = &[
    "add_key",
    "delete_module",
    "finit_module",
    "fgetxattr",
    "fremovexattr",
    "fsetxattr",
    "init_module",
    "memfd_create",
    "mq_open",
    "mq_timedsend",
    "mq_unlink",
    "request_key",
    "sethostname",
    "setdomainname",
];

/// `*` any run of characters, `?` one character.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// The table name a user's word stands for (perf's aliases go both ways).
fn canonical(word: &str) -> &str {
    syscall_table::table_name_of_event(word).unwrap_or(word)
}

fn all_syscalls() -> impl Iterator<Item = (u32, &'static str)> {
    (0..syscall_table::MAX_NR).filter_map(|nr| Some((nr, syscall_table::name(nr)?)))
}

pub fn parse(expr: &str) -> Result<Selection, SelectionError> {
    let (negate, list) = match expr.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, expr),
    };
    let mut chosen = std::collections::BTreeSet::new();
    let mut unknown = Vec::new();
    for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let before = chosen.len();
        let group: Option<Vec<&str>> = match word {
            "file" | "%file" => Some(FILE_GROUP.to_vec()),
            "string" => Some(FILE_GROUP.iter().chain(STRING_EXTRA).copied().collect()),
            _ => None,
        };
        let mut matched = false;
        for (nr, name) in all_syscalls() {
            let hit = match &group {
                Some(g) => g.contains(&name),
                None if word.contains(['*', '?']) => glob_match(word, name),
                None => canonical(word) == name,
            };
            if hit {
                chosen.insert(nr);
                matched = true;
            }
        }
        if !matched && chosen.len() == before {
            unknown.push(word.to_string());
        }
    }
    let nrs: Vec<u32> = if negate {
        all_syscalls()
            .map(|(nr, _)| nr)
            .filter(|nr| !chosen.contains(nr))
            .collect()
    } else {
        chosen.into_iter().collect()
    };
    if nrs.is_empty() {
        return Err(SelectionError::Empty(expr.to_string()));
    }
    Ok(Selection { nrs, unknown })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of the native part of a selection.
    fn names(s: &Selection) -> Vec<&'static str> {
        s.nrs
            .iter()
            .filter(|&&nr| nr < trace_common::maps::COMPAT_BASE)
            .map(|&nr| syscall_table::name(nr).unwrap())
            .collect()
    }

    #[test]
    fn globs() {
        assert!(glob_match("open*", "openat"));
        assert!(glob_match("open*", "open"));
        assert!(!glob_match("open*", "fsopen"));
        assert!(!glob_match("*stat", "newfstatat"));
        assert!(glob_match("*stat*", "newfstatat"));
        assert!(!glob_match("rename?", "renameat"));
        assert!(glob_match("renamea?", "renameat"));
    }

    #[test]
    fn lists_globs_and_negation() {
        let s = parse("openat,close").unwrap();
        assert_eq!(names(&s), ["close", "openat"]);
        let s = parse("open*").unwrap();
        assert!(names(&s).contains(&"openat") && names(&s).contains(&"open_tree"));
        assert!(!names(&s).contains(&"close"));
        let all = all_syscalls().count();
        let s = parse("!openat,close").unwrap();
        // Both tables: native and 32-bit.
        assert_eq!(s.nrs.len(), all - 4);
        assert!(!names(&s).contains(&"openat"));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn aliases_groups_and_unknown_names() {
        assert_eq!(names(&parse("newstat").unwrap()), ["stat"]);
        assert_eq!(names(&parse("stat").unwrap()), ["stat"]);
        let file = parse("file").unwrap();
        assert!(names(&file).contains(&"openat") && !names(&file).contains(&"read"));
        let string = parse("string").unwrap();
        assert!(string.nrs.len() > file.nrs.len());
        let s = parse("openat,nosuchcall").unwrap();
        assert_eq!(s.unknown, ["nosuchcall"]);
        assert_eq!(
            parse("nosuchcall"),
            Err(SelectionError::Empty("nosuchcall".into()))
        );
    }
}
