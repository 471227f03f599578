//! What each traced fd refers to, for `fd: 3</etc/hostname>`. Kept only when `close`
//! is traced (otherwise a reused fd would show a stale path, as perf also reasons):
//! learnt from traced opens and dups, forgotten at close, and seeded from
//! /proc/<pid>/fd for fds opened before tracing began.
//!
//! A relative path is taken from where the open started: the directory fd's path, or
//! the process's working directory. The working directory is known only when every
//! call that changes or passes it on is traced (chdir, fchdir, the forks, exit_group):
//! it is read from /proc once when tracing starts, passed from parent to child at
//! fork, and followed through chdir and fchdir. When it cannot be known, the fd gets
//! no path rather than a wrong one.

use rustc_hash::FxHashMap as HashMap;

use procfs::process::{FDTarget, Process};
use trace_common::SyscallRecord;

use crate::decode::{SyscallInfo, beauty::Beauty};

/// The calls whose records the working directory needs.
pub const CWD_CALLS: &[&str] = &[
    "chdir",
    "fchdir",
    "clone",
    "clone3",
    "fork",
    "vfork",
    "exit_group",
];

const OPENS: &[&str] = &["open", "openat", "openat2", "creat"];
/// Calls that return a new fd of something without a path rtrace can name (a socket, an
/// eventfd, a pidfd…): the number is reused, so what rtrace knew of it is gone.
const NEW_FDS: &[&str] = &[
    "socket",
    "accept",
    "accept4",
    "eventfd",
    "eventfd2",
    "epoll_create",
    "epoll_create1",
    "signalfd",
    "signalfd4",
    "timerfd_create",
    "inotify_init",
    "inotify_init1",
    "fanotify_init",
    "memfd_create",
    "memfd_secret",
    "pidfd_open",
    "pidfd_getfd",
    "userfaultfd",
    "perf_event_open",
    "io_uring_setup",
    "open_by_handle_at",
    "open_tree",
    "fsopen",
    "fsmount",
    "fspick",
    "mq_open",
    "landlock_create_ruleset",
];
/// Calls that write two new fds into the caller's memory.
const NEW_FD_PAIRS: &[&str] = &["pipe", "pipe2", "socketpair"];
/// ioctl's FIOCLEX and FIONCLEX: an fd's close-on-exec flag, as F_SETFD sets it.
const FIOCLEX: u64 = 0x5451;
const FIONCLEX: u64 = 0x5450;
/// close_range's flag that marks the fds close-on-exec instead of closing them.
const CLOSE_RANGE_CLOEXEC: u64 = 4;
const DUPS: &[&str] = &["dup", "dup2", "dup3"];
const FORKS: &[&str] = &["clone", "clone3", "fork", "vfork"];
const AT_FDCWD: i32 = -100;

type Path = Option<Box<[u8]>>;

/// A process's working directory as rtrace knows it.
#[derive(Clone, Debug)]
struct Cwd {
    path: Path,
    /// When this knowledge begins: a record of the same pid that started earlier
    /// belongs to an older process with that number.
    since_ns: u64,
    /// For a directory read from /proc: the times just before and after the read.
    /// A change that ended before it is in `path` already; one that began after it
    /// is not; one in between leaves the directory unknown.
    read_between: Option<(u64, u64)>,
}

/// A process's working directory and open fds, read from /proc when tracing started.
#[derive(Clone, Debug)]
pub struct ProcSeed {
    pub pid: u32,
    pub path: Path,
    pub before_ns: u64,
    pub after_ns: u64,
    /// `None`: take the fds rtrace was started with (the command rtrace runs, read
    /// while it is held, still has rtrace's close-on-exec pipes open).
    pub fds: Option<Vec<(i32, Box<[u8]>)>>,
    /// Whether it sees the file system as rtrace does (asked now: later it may be gone).
    pub same_view: bool,
}

/// Whether every call in `names` is traced by `selection` (`-e`'s indexes; `None`: all).
pub fn all_traced(selection: Option<&[u32]>, names: &[&str]) -> bool {
    selection.is_none_or(|nrs| {
        names.iter().all(|name| {
            crate::decode::syscall_table::number(name).is_none_or(|nr| nrs.contains(&nr))
        })
    })
}

/// CLOCK_MONOTONIC in nanoseconds, the clock of the records' times.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl ProcSeed {
    /// Reads the working directory and the fds of each process in `pids` from `/proc`;
    /// `command`'s fds are the ones rtrace was started with.
    pub fn read(pids: impl IntoIterator<Item = u32>, command: Option<u32>) -> Vec<ProcSeed> {
        pids.into_iter()
            .map(|pid| {
                let before_ns = monotonic_ns();
                let process = i32::try_from(pid).ok().and_then(|p| Process::new(p).ok());
                let path = process
                    .as_ref()
                    .and_then(|p| p.cwd().ok())
                    .map(|p| p.into_os_string().into_encoded_bytes().into_boxed_slice());
                let fds = (Some(pid) != command).then(|| {
                    process
                        .as_ref()
                        .and_then(|p| p.fd().ok())
                        .map(|fds| {
                            fds.filter_map(|f| {
                                let fd = f.ok()?.fd;
                                Some((fd, fd_link(pid, fd)?))
                            })
                            .collect()
                        })
                        .unwrap_or_default()
                });
                ProcSeed {
                    pid,
                    path,
                    before_ns,
                    after_ns: monotonic_ns(),
                    fds,
                    same_view: same_view(pid),
                }
            })
            .collect()
    }
}

/// What /proc/<pid>/fd/<fd> links to, as the kernel spells it (`/etc/hostname`,
/// `socket:[123]`, `pipe:[45]`, `anon_inode:[eventfd]`).
fn fd_link(pid: u32, fd: i32) -> Path {
    let info = Process::new(i32::try_from(pid).ok()?)
        .ok()?
        .fd_from_fd(fd)
        .ok()?;
    let text = match info.target {
        FDTarget::Path(p) => return Some(p.into_os_string().into_encoded_bytes().into()),
        FDTarget::Socket(i) => format!("socket:[{i}]"),
        FDTarget::Net(i) => format!("net:[{i}]"),
        FDTarget::Pipe(i) => format!("pipe:[{i}]"),
        FDTarget::AnonInode(k) => format!("anon_inode:{k}"),
        FDTarget::MemFD(name) => format!("/memfd:{name}"),
        FDTarget::Other(kind, i) => format!("{kind}:[{i}]"),
        FDTarget::Unknown(kind, rest) => format!("{kind}:{rest}"),
    };
    Some(text.into_bytes().into_boxed_slice())
}

/// The fds rtrace itself was started with, and what they refer to: the ones a command it
/// runs keeps after its exec (rtrace opens everything of its own close-on-exec). Taken
/// once, first thing in `main`, before rtrace opens anything.
static INHERITED: std::sync::OnceLock<Vec<(i32, Box<[u8]>)>> = std::sync::OnceLock::new();

/// The fds rtrace was started with (those a command it runs inherits).
pub fn inherited_fds() -> &'static [(i32, Box<[u8]>)] {
    INHERITED.get().map_or(&[][..], Vec::as_slice)
}

pub fn snapshot_inherited_fds() {
    let _ = INHERITED.set(open_fds());
}

/// This process's open fds and what they refer to. The numbers are listed first and the
/// listing closed: the /proc directories it held open are not fds of the process
/// (they were taken as inherited fds named `/proc/<pid>/fd`), and their numbers no longer
/// read. Each link is read by path, which holds no fd.
fn open_fds() -> Vec<(i32, Box<[u8]>)> {
    let numbers: Vec<i32> = Process::myself()
        .and_then(|p| p.fd())
        .map(|fds| fds.filter_map(|f| Some(f.ok()?.fd)).collect())
        .unwrap_or_default();
    numbers
        .into_iter()
        .filter_map(|fd| {
            let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
            Some((fd, link.into_os_string().into_encoded_bytes().into()))
        })
        .collect()
}

/// Whether `pid` has rtrace's root directory and mount namespace.
fn same_view(pid: u32) -> bool {
    fn mnt_ns(p: &Process) -> Option<u64> {
        let all = p.namespaces().ok()?;
        Some(all.0.get(std::ffi::OsStr::new("mnt"))?.identifier)
    }
    // rtrace's own, read once.
    static MINE: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let mine = *MINE.get_or_init(|| Process::myself().ok().as_ref().and_then(mnt_ns));
    let Some(other) = i32::try_from(pid).ok().and_then(|p| Process::new(p).ok()) else {
        return false;
    };
    let root_is_slash = other.root().is_ok_and(|r| r == std::path::Path::new("/"));
    root_is_slash && mine.is_some() && mine == mnt_ns(&other)
}

/// `base/rel`, without a `./` in front of `rel` or a `.` at its end.
fn join(base: &[u8], rel: &[u8]) -> Box<[u8]> {
    let mut rel = rel;
    while let Some(r) = rel.strip_prefix(b"./") {
        rel = r;
    }
    if rel == b"." || rel.is_empty() {
        return base.into();
    }
    let mut p = base.to_vec();
    if !p.ends_with(b"/") {
        p.push(b'/');
    }
    p.extend_from_slice(rel.strip_suffix(b"/.").unwrap_or(rel));
    p.into_boxed_slice()
}

pub struct FdTable {
    enabled: bool,
    cwd_enabled: bool,
    /// (pid, fd) -> path; None: an fd whose path is not known.
    paths: HashMap<(u32, i32), Path>,
    cwds: HashMap<u32, Cwd>,
    /// Per pid: does it see the file system as rtrace does (same root, same mount
    /// namespace), so that rtrace may resolve its paths' symbolic links?
    same_view: HashMap<u32, bool>,
    /// Fds known to be close-on-exec: a successful execve closes them.
    cloexec: rustc_hash::FxHashSet<(u32, i32)>,
}

impl FdTable {
    /// `enabled`: close is traced; `cwd_enabled`: every call in [`CWD_CALLS`] is.
    pub fn new(enabled: bool, cwd_enabled: bool) -> Self {
        Self {
            enabled,
            cwd_enabled: enabled && cwd_enabled,
            paths: HashMap::default(),
            cwds: HashMap::default(),
            same_view: HashMap::default(),
            cloexec: Default::default(),
        }
    }

    /// Starts from the working directories and fds read when tracing began. (An fd met
    /// later is never looked up in /proc: by the time its record is read, /proc may
    /// show what the process did after the call.)
    pub fn seed_procs(&mut self, seeds: Vec<ProcSeed>) {
        for s in seeds {
            // Asked when the seed was read, while the process was surely there; its
            // children inherit it.
            self.same_view.insert(s.pid, s.same_view);
            if self.enabled {
                let fds = match &s.fds {
                    Some(fds) => fds.as_slice(),
                    None => INHERITED.get().map_or(&[][..], Vec::as_slice),
                };
                for (fd, path) in fds {
                    self.paths.insert((s.pid, *fd), Some(path.clone()));
                }
            }
            if !self.cwd_enabled {
                continue;
            }
            self.cwds.insert(
                s.pid,
                Cwd {
                    path: s.path,
                    since_ns: 0,
                    read_between: Some((s.before_ns, s.after_ns)),
                },
            );
        }
    }

    pub fn path(&self, pid: u32, fd: i32) -> Option<&[u8]> {
        self.paths.get(&(pid, fd))?.as_deref()
    }

    fn cwd(&self, pid: u32) -> Option<&[u8]> {
        self.cwds.get(&pid)?.path.as_deref()
    }

    /// `fd` of `pid` now refers to `path`, closed on exec or not.
    fn set_fd(&mut self, pid: u32, fd: i32, path: Path, on_exec: bool) {
        self.paths.insert((pid, fd), path);
        if on_exec {
            self.cloexec.insert((pid, fd));
        } else {
            self.cloexec.remove(&(pid, fd));
        }
    }

    /// `path` as /proc (and perf) shows it: symbolic links and `..` resolved, when
    /// `pid` sees the file system as rtrace does; else, or when the path is gone, as
    /// the program gave it.
    fn canonical(&mut self, pid: u32, path: Box<[u8]>) -> Box<[u8]> {
        let same = *self.same_view.entry(pid).or_insert_with(|| same_view(pid));
        if !same {
            return path;
        }
        use std::os::unix::ffi::OsStrExt as _;
        match std::fs::canonicalize(std::ffi::OsStr::from_bytes(&path)) {
            Ok(p) => p.into_os_string().into_encoded_bytes().into_boxed_slice(),
            Err(_) => path,
        }
    }

    /// Where `path`, given to a call of `pid` with directory fd `dfd`, leads.
    fn resolve(&self, pid: u32, dfd: Option<i32>, path: &[u8]) -> Path {
        if path.starts_with(b"/") {
            return Some(path.into());
        }
        let base = match dfd {
            Some(fd) if fd != AT_FDCWD => self.path(pid, fd),
            _ => self.cwd(pid),
        }?;
        Some(join(base, path))
    }

    /// Follows what the call did to the fd table and the working directory, once its
    /// line is printed (or left out). `path_arg` is the call's first string argument.
    /// What the call `rec` did to `rec.pid`'s fds and working directory. `path_arg`: its
    /// first string argument, read whole; `pair`: the two fds a pipe or socketpair
    /// wrote, when they could be read.
    pub fn update(
        &mut self,
        rec: &SyscallRecord,
        info: &SyscallInfo,
        path_arg: Option<&[u8]>,
        pair: Option<[i32; 2]>,
    ) {
        let name = info.name.as_str();
        if self.enabled && name == "exit_group" {
            // It never returns: its entry is the end of the process.
            let pid = rec.pid;
            self.paths.retain(|(p, _), _| *p != pid);
            self.cloexec.retain(|(p, _)| *p != pid);
            self.cwds.remove(&pid);
            return;
        }
        if !self.enabled || !rec.has_exit() {
            return;
        }
        let ret = rec.ret;
        let dfd = info
            .beauties
            .iter()
            .position(|b| *b == Beauty::Dfd)
            .map(|i| rec.args[i] as u32 as i32);
        let fd0 = rec.args[0] as u32 as i32;
        let cloexec = |flags: u64| flags & libc::O_CLOEXEC as u64 != 0;
        if name == "close" && ret == 0 {
            self.paths.remove(&(rec.pid, fd0));
            self.cloexec.remove(&(rec.pid, fd0));
        } else if name == "close_range" && ret == 0 {
            let (first, last) = (rec.args[0] as u32, rec.args[1] as u32);
            let pid = rec.pid;
            let in_range = |fd: i32| (first..=last).contains(&(fd as u32));
            if rec.args[2] & CLOSE_RANGE_CLOEXEC != 0 {
                let marked: Vec<(u32, i32)> = self
                    .paths
                    .keys()
                    .filter(|(p, fd)| *p == pid && in_range(*fd))
                    .copied()
                    .collect();
                self.cloexec.extend(marked);
            } else {
                self.paths.retain(|(p, fd), _| *p != pid || !in_range(*fd));
                self.cloexec.retain(|(p, fd)| *p != pid || !in_range(*fd));
            }
        } else if NEW_FDS.contains(&name) && ret >= 0 {
            self.set_fd(rec.pid, ret as i32, None, false);
        } else if NEW_FD_PAIRS.contains(&name) && ret == 0 {
            match pair {
                Some(fds) => {
                    for fd in fds {
                        self.set_fd(rec.pid, fd, None, false);
                    }
                }
                // Which two numbers it took is not known: none of this process's
                // paths can be trusted any more.
                None => {
                    let pid = rec.pid;
                    self.paths.retain(|(p, _), _| *p != pid);
                    self.cloexec.retain(|(p, _)| *p != pid);
                }
            }
        } else if name == "ioctl"
            && ret == 0
            && matches!(rec.args[1] & 0xffff_ffff, FIOCLEX | FIONCLEX)
        {
            if rec.args[1] & 0xffff_ffff == FIOCLEX {
                self.cloexec.insert((rec.pid, fd0));
            } else {
                self.cloexec.remove(&(rec.pid, fd0));
            }
        } else if name.starts_with("execve") && ret == 0 {
            // The new program starts without the close-on-exec fds.
            let pid = rec.pid;
            let closed: Vec<(u32, i32)> = self
                .cloexec
                .iter()
                .filter(|(p, _)| *p == pid)
                .copied()
                .collect();
            for key in closed {
                self.paths.remove(&key);
                self.cloexec.remove(&key);
            }
        } else if OPENS.contains(&name) && ret >= 0 {
            let path = path_arg
                .and_then(|p| self.resolve(rec.pid, dfd, p))
                .map(|p| self.canonical(rec.pid, p));
            let flags = info
                .beauties
                .iter()
                .position(|b| *b == Beauty::OpenFlags)
                .map(|i| rec.args[i]);
            self.set_fd(rec.pid, ret as i32, path, flags.is_some_and(cloexec));
        } else if (DUPS.contains(&name)
            || (name == "fcntl"
                && matches!(rec.args[1] as i32, libc::F_DUPFD | libc::F_DUPFD_CLOEXEC)))
            && ret >= 0
        {
            let old = self.paths.get(&(rec.pid, fd0)).cloned().flatten();
            let on_exec = match name {
                "fcntl" => rec.args[1] as i32 == libc::F_DUPFD_CLOEXEC,
                "dup3" => cloexec(rec.args[2]),
                _ => false,
            };
            self.set_fd(rec.pid, ret as i32, old, on_exec);
        } else if name == "fcntl" && rec.args[1] as i32 == libc::F_SETFD && ret == 0 {
            if rec.args[2] & libc::FD_CLOEXEC as u64 != 0 {
                self.cloexec.insert((rec.pid, fd0));
            } else {
                self.cloexec.remove(&(rec.pid, fd0));
            }
        } else if self.cwd_enabled && ret == 0 && (name == "chdir" || name == "fchdir") {
            let to = match name {
                "chdir" => path_arg
                    .and_then(|p| self.resolve(rec.pid, None, p))
                    .map(|p| self.canonical(rec.pid, p)),
                _ => self
                    .path(rec.pid, rec.args[0] as u32 as i32)
                    .map(Into::into),
            };
            self.changed_dir(rec, to);
        } else if FORKS.contains(&name) && ret > 0 {
            let thread = name == "clone" && rec.args[0] & libc::CLONE_THREAD as u64 != 0;
            let child = ret as u32;
            if !thread {
                let new_ns = name == "clone" && rec.args[0] & libc::CLONE_NEWNS as u64 != 0;
                if let Some(&same) = self.same_view.get(&rec.pid) {
                    self.same_view.insert(child, same && !new_ns);
                }
                // A new process starts with its parent's fds (the ones it has not
                // changed already, if its own records came first).
                let parent: Vec<(i32, Path)> = self
                    .paths
                    .iter()
                    .filter(|((p, _), _)| *p == rec.pid)
                    .map(|((_, fd), path)| (*fd, path.clone()))
                    .collect();
                for (fd, path) in parent {
                    if let std::collections::hash_map::Entry::Vacant(e) =
                        self.paths.entry((child, fd))
                    {
                        e.insert(path);
                        if self.cloexec.contains(&(rec.pid, fd)) {
                            self.cloexec.insert((child, fd));
                        }
                    }
                }
            }
            if !self.cwd_enabled {
                return;
            }
            let older = self
                .cwds
                .get(&child)
                .is_none_or(|c| c.since_ns < rec.enter_ns);
            if !thread && rec.has_entry() && older {
                let path = self.cwds.get(&rec.pid).and_then(|c| c.path.clone());
                self.cwds.insert(
                    child,
                    Cwd {
                        path,
                        since_ns: rec.enter_ns,
                        read_between: None,
                    },
                );
            }
        }
    }

    /// A chdir or fchdir of `rec.pid` to `to` (None: somewhere not known).
    fn changed_dir(&mut self, rec: &SyscallRecord, to: Path) {
        let start = rec.has_entry().then_some(rec.enter_ns);
        let entry = self.cwds.entry(rec.pid).or_insert(Cwd {
            path: None,
            since_ns: start.unwrap_or(rec.exit_ns),
            read_between: None,
        });
        if let Some((before, after)) = entry.read_between {
            if rec.exit_ns < before {
                // Already in what /proc said.
                return;
            }
            if start.is_none_or(|s| s <= after) {
                // Perhaps in it, perhaps not.
                entry.path = None;
                entry.read_between = None;
                return;
            }
            entry.read_between = None;
        }
        entry.path = to;
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
            aug_cut: [0; 2],
        }
    }

    #[test]
    fn follows_open_dup_and_close() {
        let mut t = FdTable::new(true, true);
        let openat = info(
            "openat",
            &[
                ("dfd", "int"),
                ("filename", "const char *"),
                ("flags", "int"),
            ],
        );
        t.update(&rec([0; 6], 3), &openat, Some(b"/etc/hostname"), None);
        assert_eq!(t.path(4_000_000, 3), Some(&b"/etc/hostname"[..]));
        t.update(
            &rec([3, 0, 0, 0, 0, 0], 7),
            &info("dup", &[("fildes", "unsigned int")]),
            None,
            None,
        );
        assert_eq!(t.path(4_000_000, 7), Some(&b"/etc/hostname"[..]));
        let close = info("close", &[("fd", "unsigned int")]);
        t.update(&rec([3, 0, 0, 0, 0, 0], 0), &close, None, None);
        assert_eq!(t.path(4_000_000, 3), None);
        assert_eq!(t.path(4_000_000, 7), Some(&b"/etc/hostname"[..]));
        // An fd never seen is not known (never looked up in /proc late).
        assert_eq!(t.path(4_000_000, 9), None);
        let _ = ArgKind::U64;
    }

    #[test]
    fn a_new_fd_without_a_path_replaces_what_was_known_of_its_number() {
        let mut t = FdTable::new(true, true);
        let openat = info("openat", &[("dfd", "int"), ("filename", "const char *")]);
        let pid = 4_000_000;
        for fd in [3, 4, 5] {
            t.update(&rec([0; 6], fd), &openat, Some(b"/etc/hostname"), None);
        }
        // A pipe's two fds, as it wrote them; then a socket.
        let pipe2 = info("pipe2", &[("fildes", "int *"), ("flags", "int")]);
        t.update(&rec([0; 6], 0), &pipe2, None, Some([3, 4]));
        assert_eq!((t.path(pid, 3), t.path(pid, 4)), (None, None));
        assert_eq!(t.path(pid, 5), Some(&b"/etc/hostname"[..]));
        let socket = info("socket", &[("family", "int"), ("type", "int")]);
        t.update(&rec([0; 6], 5), &socket, None, None);
        assert_eq!(t.path(pid, 5), None);
        // A pipe whose fds could not be read: nothing of the process is trusted.
        t.update(&rec([0; 6], 6), &openat, Some(b"/etc/passwd"), None);
        t.update(&rec([0; 6], 0), &pipe2, None, None);
        assert_eq!(t.path(pid, 6), None);
    }

    #[test]
    fn close_range_and_fioclex_are_followed() {
        let mut t = FdTable::new(true, true);
        let openat = info("openat", &[("dfd", "int"), ("filename", "const char *")]);
        let pid = 4_000_000;
        for fd in [3, 4, 5, 9] {
            t.update(&rec([0; 6], fd), &openat, Some(b"/etc/hostname"), None);
        }
        let close_range = info(
            "close_range",
            &[
                ("fd", "unsigned int"),
                ("max_fd", "unsigned int"),
                ("flags", "unsigned int"),
            ],
        );
        t.update(&rec([4, 5, 0, 0, 0, 0], 0), &close_range, None, None);
        assert_eq!(t.path(pid, 3), Some(&b"/etc/hostname"[..]));
        assert_eq!((t.path(pid, 4), t.path(pid, 5)), (None, None));
        // CLOSE_RANGE_CLOEXEC and FIOCLEX mark; an exec then closes.
        t.update(
            &rec([9, u32::MAX as u64, 4, 0, 0, 0], 0),
            &close_range,
            None,
            None,
        );
        let ioctl = info("ioctl", &[("fd", "unsigned int"), ("cmd", "unsigned int")]);
        t.update(&rec([3, FIOCLEX, 0, 0, 0, 0], 0), &ioctl, None, None);
        assert_eq!(t.path(pid, 9), Some(&b"/etc/hostname"[..]));
        let execve = info("execve", &[("filename", "const char *")]);
        t.update(&rec([0; 6], 0), &execve, Some(b"/bin/true"), None);
        assert_eq!((t.path(pid, 3), t.path(pid, 9)), (None, None));
    }

    /// Run alone by the test below (other tests of this process open files meanwhile).
    #[test]
    #[ignore = "run by the_fds_listed_are_the_process_own_not_the_listing, in a process of its own"]
    fn open_fds_alone() {
        let me = std::process::id();
        let fds = open_fds();
        assert!(!fds.is_empty());
        for (fd, path) in &fds {
            assert!(
                !path.starts_with(format!("/proc/{me}").as_bytes()),
                "fd {fd}: {}",
                String::from_utf8_lossy(path)
            );
        }
    }

    #[test]
    fn the_fds_listed_are_the_process_own_not_the_listing() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "decode::fd_table::tests::open_fds_alone"])
            .args(["--ignored", "--test-threads=1", "--nocapture"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
    }

    #[test]
    fn disabled_learns_nothing() {
        let mut t = FdTable::new(false, true);
        let openat = info("openat", &[("dfd", "int"), ("filename", "const char *")]);
        t.update(&rec([0; 6], 3), &openat, Some(b"/x"), None);
        assert_eq!(t.path(4_000_000, 3), None);
    }

    #[test]
    fn fd_links_read_as_the_kernel_spells_them() {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        let (r, w) = std::io::pipe().unwrap();
        let sock = std::os::unix::net::UnixDatagram::unbound().unwrap();
        // SAFETY: eventfd with valid flags; the fd is closed below.
        let ev = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        let me = std::process::id();
        for fd in [
            file.as_raw_fd(),
            r.as_raw_fd(),
            w.as_raw_fd(),
            sock.as_raw_fd(),
            ev,
        ] {
            let want = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap();
            let got = fd_link(me, fd).unwrap();
            assert_eq!(&*got, want.as_os_str().as_encoded_bytes(), "fd {fd}");
        }
        // SAFETY: closing the eventfd made above.
        unsafe { libc::close(ev) };
        assert_eq!(fd_link(me, 1_000_000), None);
    }

    #[test]
    fn seeds_from_proc() {
        let mut t = FdTable::new(true, true);
        let f = std::fs::File::open("/proc/self/stat").unwrap();
        use std::os::fd::AsRawFd;
        let me = std::process::id();
        t.seed_procs(ProcSeed::read([me], None));
        assert!(t.path(me, f.as_raw_fd()).unwrap().ends_with(b"/stat"));
        assert!(t.cwd(me).is_some());
        // A child forked after: the parent's fds are its own.
        let clone = info("clone", &[("clone_flags", "unsigned long")]);
        let mut r = rec([0x11, 0, 0, 0, 0, 0], 4_000_001);
        r.pid = me;
        t.update(&r, &clone, None, None);
        assert!(
            t.path(4_000_001, f.as_raw_fd())
                .unwrap()
                .ends_with(b"/stat")
        );
        // The command rtrace runs: the fds rtrace was started with, not the held
        // child's pipes.
        let seed = &ProcSeed::read([me], Some(me))[0];
        assert!(seed.fds.is_none());
        // Asked when read (a command may be gone by the time the reader starts).
        assert!(seed.same_view);
        assert!(!ProcSeed::read([4_000_000], None)[0].same_view);
    }

    fn openat() -> SyscallInfo {
        info(
            "openat",
            &[
                ("dfd", "int"),
                ("filename", "const char *"),
                ("flags", "int"),
            ],
        )
    }

    fn at(enter_ns: u64, exit_ns: u64, args: [u64; 6], ret: i64) -> SyscallRecord {
        let mut r = rec(args, ret);
        r.enter_ns = enter_ns;
        r.exit_ns = exit_ns;
        r
    }

    const CWD: u64 = -100i64 as u64;
    const PID: u32 = 4_000_000;

    fn seeded(path: &[u8]) -> FdTable {
        let mut t = FdTable::new(true, true);
        t.seed_procs(vec![ProcSeed {
            pid: PID,
            path: Some(path.into()),
            before_ns: 100,
            after_ns: 110,
            fds: Some(Vec::new()),
            same_view: false,
        }]);
        t
    }

    #[test]
    fn a_relative_open_is_taken_from_its_directory_fd() {
        let mut t = FdTable::new(true, true);
        t.update(
            &rec([CWD, 0, 0, 0, 0, 0], 5),
            &openat(),
            Some(b"/usr/share/doc"),
            None,
        );
        t.update(
            &rec([5, 0, 0, 0, 0, 0], 6),
            &openat(),
            Some(b"libelf1"),
            None,
        );
        assert_eq!(t.path(PID, 6), Some(&b"/usr/share/doc/libelf1"[..]));
        t.update(
            &rec([6, 0, 0, 0, 0, 0], 7),
            &openat(),
            Some(b"./copyright"),
            None,
        );
        assert_eq!(
            t.path(PID, 7),
            Some(&b"/usr/share/doc/libelf1/copyright"[..])
        );
        t.update(&rec([6, 0, 0, 0, 0, 0], 8), &openat(), Some(b"."), None);
        assert_eq!(t.path(PID, 8), Some(&b"/usr/share/doc/libelf1"[..]));
        // A directory fd whose path is not known gives no path, never a partial one.
        t.update(&rec([9, 0, 0, 0, 0, 0], 10), &openat(), Some(b"x"), None);
        assert_eq!(t.path(PID, 10), None);
        // And dups take the right name.
        let fcntl = info("fcntl", &[("fd", "unsigned int"), ("cmd", "unsigned int")]);
        t.update(
            &rec([6, libc::F_DUPFD_CLOEXEC as u64, 0, 0, 0, 0], 11),
            &fcntl,
            None,
            None,
        );
        assert_eq!(t.path(PID, 11), Some(&b"/usr/share/doc/libelf1"[..]));
    }

    #[test]
    fn a_successful_exec_closes_the_close_on_exec_fds() {
        let mut t = FdTable::new(true, true);
        let o = openat();
        let cloexec = libc::O_CLOEXEC as u64;
        t.update(&rec([CWD, 0, cloexec, 0, 0, 0], 3), &o, Some(b"/a"), None);
        t.update(&rec([CWD, 0, 0, 0, 0, 0], 4), &o, Some(b"/b"), None);
        let fcntl = info(
            "fcntl",
            &[
                ("fd", "unsigned int"),
                ("cmd", "unsigned int"),
                ("arg", "unsigned long"),
            ],
        );
        t.update(
            &rec([4, libc::F_DUPFD_CLOEXEC as u64, 10, 0, 0, 0], 10),
            &fcntl,
            None,
            None,
        );
        t.update(
            &rec([4, libc::F_SETFD as u64, 1, 0, 0, 0], 0),
            &fcntl,
            None,
            None,
        );
        t.update(
            &rec([4, libc::F_SETFD as u64, 0, 0, 0, 0], 0),
            &fcntl,
            None,
            None,
        );
        let execve = info("execve", &[("filename", "const char *")]);
        t.update(&rec([0; 6], -2), &execve, Some(b"/nope"), None);
        assert_eq!(
            t.path(PID, 3),
            Some(&b"/a"[..]),
            "a failed exec closes nothing"
        );
        t.update(&rec([0; 6], 0), &execve, Some(b"/bin/true"), None);
        assert_eq!(t.path(PID, 3), None);
        assert_eq!(t.path(PID, 10), None);
        assert_eq!(t.path(PID, 4), Some(&b"/b"[..]), "its CLOEXEC was cleared");
    }

    #[test]
    fn a_relative_open_without_a_known_directory_has_no_path() {
        let mut t = FdTable::new(true, true);
        t.update(
            &rec([CWD, 0, 0, 0, 0, 0], 5),
            &openat(),
            Some(b"libelf1"),
            None,
        );
        assert_eq!(t.path(PID, 5), None);
        // Nor when the working directory is not followed (chdir not traced).
        let mut t = FdTable::new(true, false);
        t.seed_procs(vec![ProcSeed {
            pid: PID,
            path: Some(b"/tmp"[..].into()),
            before_ns: 0,
            after_ns: 0,
            fds: Some(Vec::new()),
            same_view: false,
        }]);
        t.update(&rec([CWD, 0, 0, 0, 0, 0], 5), &openat(), Some(b"f"), None);
        assert_eq!(t.path(PID, 5), None);
    }

    #[test]
    fn the_working_directory_follows_chdir_from_its_seed() {
        let chdir = info("chdir", &[("filename", "const char *")]);
        let mut t = seeded(b"/home/u");
        // Ended before /proc was read: already in the seed.
        t.update(&at(10, 20, [0; 6], 0), &chdir, Some(b"src"), None);
        t.update(
            &at(200, 210, [CWD, 0, 0, 0, 0, 0], 3),
            &openat(),
            Some(b"f"),
            None,
        );
        assert_eq!(t.path(PID, 3), Some(&b"/home/u/f"[..]));
        // Began after: followed.
        t.update(&at(300, 310, [0; 6], 0), &chdir, Some(b"src"), None);
        t.update(
            &at(400, 410, [CWD, 0, 0, 0, 0, 0], 4),
            &openat(),
            Some(b"f"),
            None,
        );
        assert_eq!(t.path(PID, 4), Some(&b"/home/u/src/f"[..]));
        t.update(&at(500, 510, [0; 6], 0), &chdir, Some(b"/etc"), None);
        t.update(
            &at(600, 610, [CWD, 0, 0, 0, 0, 0], 5),
            &openat(),
            Some(b"passwd"),
            None,
        );
        assert_eq!(t.path(PID, 5), Some(&b"/etc/passwd"[..]));
        // fchdir to a known fd.
        let fchdir = info("fchdir", &[("fd", "unsigned int")]);
        t.update(&at(700, 710, [4, 0, 0, 0, 0, 0], 0), &fchdir, None, None);
        t.update(
            &at(800, 810, [CWD, 0, 0, 0, 0, 0], 6),
            &openat(),
            Some(b"g"),
            None,
        );
        assert_eq!(t.path(PID, 6), Some(&b"/home/u/src/f/g"[..]));
    }

    #[test]
    fn a_chdir_during_the_read_leaves_the_directory_unknown() {
        let chdir = info("chdir", &[("filename", "const char *")]);
        let mut t = seeded(b"/home/u");
        t.update(&at(90, 105, [0; 6], 0), &chdir, Some(b"src"), None);
        t.update(
            &at(200, 210, [CWD, 0, 0, 0, 0, 0], 3),
            &openat(),
            Some(b"f"),
            None,
        );
        assert_eq!(t.path(PID, 3), None);
    }

    #[test]
    fn a_child_starts_in_its_parents_directory() {
        let clone = info("clone", &[("clone_flags", "unsigned long")]);
        let mut t = seeded(b"/srv");
        t.update(&at(200, 210, [0x11, 0, 0, 0, 0, 0], 77), &clone, None, None);
        let mut child = at(300, 310, [CWD, 0, 0, 0, 0, 0], 3);
        child.pid = 77;
        t.update(&child, &openat(), Some(b"data"), None);
        assert_eq!(t.path(77, 3), Some(&b"/srv/data"[..]));
        // A thread is not a new process.
        t.update(
            &at(400, 410, [libc::CLONE_THREAD as u64, 0, 0, 0, 0, 0], 78),
            &clone,
            None,
            None,
        );
        assert!(!t.cwds.contains_key(&78));
        // A child whose own chdir came first keeps it.
        let chdir = info("chdir", &[("filename", "const char *")]);
        let mut c = at(520, 530, [0; 6], 0);
        c.pid = 79;
        t.update(&c, &chdir, Some(b"/var"), None);
        t.update(&at(500, 540, [0x11, 0, 0, 0, 0, 0], 79), &clone, None, None);
        assert_eq!(t.cwd(79), Some(&b"/var"[..]));
        // exit_group forgets the process.
        let exit = info("exit_group", &[("error_code", "int")]);
        let mut e = at(600, 0, [0; 6], 0);
        e.flags = REC_HAS_ENTRY;
        e.pid = 77;
        t.update(&e, &exit, None, None);
        assert!(t.cwd(77).is_none());
    }
}
