//! What each traced fd refers to, for `fd: 3</etc/hostname>`. Kept only when `close`
//! is traced (otherwise a reused fd would show a stale path, as perf also reasons):
//! learnt from traced opens and dups, forgotten at close, and seeded from
//! /proc/<pid>/fd for fds opened before tracing began.

use std::collections::HashMap;

use trace_common::SyscallRecord;

use crate::decode::{SyscallInfo, beauty::Beauty};

pub struct FdTable {
    enabled: bool,
    /// (pid, fd) -> path; None caches "not known" so /proc is asked once.
    paths: HashMap<(u32, i32), Option<Box<str>>>,
    proc_root: &'static str,
}

const OPENS: &[&str] = &["open", "openat", "openat2", "creat"];
const DUPS: &[&str] = &["dup", "dup2", "dup3"];

impl FdTable {
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            paths: HashMap::new(),
            proc_root: "/proc",
        }
    }

    fn fd_args<'a>(
        info: &'a SyscallInfo,
        rec: &'a SyscallRecord,
    ) -> impl Iterator<Item = i32> + 'a {
        info.beauties
            .iter()
            .zip(rec.args.iter())
            .filter(|(b, _)| matches!(b, Beauty::Fd | Beauty::Dfd))
            .map(|(_, &raw)| raw as u32 as i32)
            .filter(|&fd| fd >= 0)
    }

    /// Learns, from /proc, the fds this record shows that are not known yet.
    pub fn prepare(&mut self, rec: &SyscallRecord, info: &SyscallInfo) {
        if !self.enabled || !rec.has_entry() {
            return;
        }
        for fd in Self::fd_args(info, rec) {
            let root = self.proc_root;
            self.paths.entry((rec.pid, fd)).or_insert_with(|| {
                std::fs::read_link(format!("{root}/{}/fd/{fd}", rec.pid))
                    .ok()
                    .map(|p| p.to_string_lossy().into())
            });
        }
    }

    pub fn path(&self, pid: u32, fd: i32) -> Option<&str> {
        self.paths.get(&(pid, fd))?.as_deref()
    }

    /// Follows what the call did to the fd table, once its line is printed.
    pub fn update(&mut self, rec: &SyscallRecord, info: &SyscallInfo, filename: Option<&[u8]>) {
        if !self.enabled || !rec.has_exit() {
            return;
        }
        let name = info.name.as_str();
        let ret = rec.ret;
        if name == "close" && ret == 0 {
            self.paths.remove(&(rec.pid, rec.args[0] as u32 as i32));
        } else if OPENS.contains(&name) && ret >= 0 {
            let path = filename.map(|f| String::from_utf8_lossy(f).into());
            self.paths.insert((rec.pid, ret as i32), path);
        } else if (DUPS.contains(&name)
            || (name == "fcntl"
                && matches!(rec.args[1] as i32, libc::F_DUPFD | libc::F_DUPFD_CLOEXEC)))
            && ret >= 0
        {
            let old = self
                .paths
                .get(&(rec.pid, rec.args[0] as u32 as i32))
                .cloned()
                .flatten();
            self.paths.insert((rec.pid, ret as i32), old);
        } else if name == "exit_group" {
            let pid = rec.pid;
            self.paths.retain(|(p, _), _| *p != pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use trace_common::record::{KIND_SYSCALL, REC_HAS_ENTRY, REC_HAS_EXIT};

    use super::*;
    use crate::decode::format::{ArgKind, ArgSpec};

    fn info(name: &str, args: &[(&str, &str)]) -> SyscallInfo {
        SyscallInfo::new(
            name,
            Some(
                args.iter()
                    .map(|(n, t)| ArgSpec {
                        name: n.to_string(),
                        kind: crate::decode::format::kind_of(t),
                        ty: t.to_string(),
                    })
                    .collect(),
            ),
        )
    }

    fn rec(args: [u64; 6], ret: i64) -> SyscallRecord {
        SyscallRecord {
            kind: KIND_SYSCALL,
            flags: REC_HAS_ENTRY | REC_HAS_EXIT,
            nr: 0,
            tid: 1,
            pid: 4_000_000,
            enter_ns: 1,
            exit_ns: 2,
            args,
            ret,
            comm: [0; 16],
            aug_len: [0; 2],
            aug_arg: [0xff; 2],
            _pad: [0; 2],
        }
    }

    #[test]
    fn follows_open_dup_and_close() {
        let mut t = FdTable::new(true);
        let openat = info(
            "openat",
            &[
                ("dfd", "int"),
                ("filename", "const char *"),
                ("flags", "int"),
            ],
        );
        t.update(&rec([0; 6], 3), &openat, Some(b"/etc/hostname"));
        assert_eq!(t.path(4_000_000, 3), Some("/etc/hostname"));
        t.update(
            &rec([3, 0, 0, 0, 0, 0], 7),
            &info("dup", &[("fildes", "unsigned int")]),
            None,
        );
        assert_eq!(t.path(4_000_000, 7), Some("/etc/hostname"));
        let close = info("close", &[("fd", "unsigned int")]);
        t.update(&rec([3, 0, 0, 0, 0, 0], 0), &close, None);
        assert_eq!(t.path(4_000_000, 3), None);
        assert_eq!(t.path(4_000_000, 7), Some("/etc/hostname"));
        // A pid with no /proc entry: nothing learnt, and asked once.
        t.prepare(&rec([9, 0, 0, 0, 0, 0], 0), &close);
        assert_eq!(t.path(4_000_000, 9), None);
        let _ = ArgKind::U64;
    }

    #[test]
    fn disabled_learns_nothing() {
        let mut t = FdTable::new(false);
        let openat = info("openat", &[("dfd", "int"), ("filename", "const char *")]);
        t.update(&rec([0; 6], 3), &openat, Some(b"/x"));
        assert_eq!(t.path(4_000_000, 3), None);
    }

    #[test]
    fn seeds_from_proc() {
        let mut t = FdTable::new(true);
        let read = info("read", &[("fd", "unsigned int")]);
        let mut r = rec([0; 6], 0);
        r.pid = std::process::id();
        let f = std::fs::File::open("/proc/self/stat").unwrap();
        use std::os::fd::AsRawFd;
        r.args[0] = f.as_raw_fd() as u64;
        t.prepare(&r, &read);
        assert!(t.path(r.pid, f.as_raw_fd()).unwrap().ends_with("/stat"));
    }
}
