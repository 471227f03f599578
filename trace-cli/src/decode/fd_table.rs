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
//!
//! The table does no I/O: /proc is read in `pids::fd_seed`, and the file system is
//! asked through [`Canon`].

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use trace_common::{
    SyscallRecord,
    record::{REC_FD_INODES, REC_SAME_VIEW, REC_VIEW_KNOWN},
};

use crate::decode::{
    SyscallInfo,
    fd_effect::{FdEffect, FdName, NewFd, SIGNALFD},
};

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

/// ioctl's FIOCLEX and FIONCLEX: an fd's close-on-exec flag, as F_SETFD sets it.
const FIOCLEX: u64 = 0x5451;
const FIONCLEX: u64 = 0x5450;
/// close_range's flag that marks the fds close-on-exec instead of closing them.
const CLOSE_RANGE_CLOEXEC: u64 = 4;
const AT_FDCWD: i32 = -100;

type Path = Option<Box<[u8]>>;

/// What an fd refers to, and when the table learnt it: a process killed by a signal
/// makes no exit_group, so its fds stay behind, and a new process given the same pid
/// must not take them for its own.
#[derive(Clone)]
struct Known {
    /// Shared: a fork's child and a dup's new fd take it without a copy.
    path: Option<Arc<[u8]>>,
    /// The time of the call that opened, dup'ed or passed it on (0: read at start).
    since_ns: u64,
    /// Closed by a successful exec.
    on_exec: bool,
}

/// One process's fds. Kept per process, so that what a process's fork, exec or end
/// does costs as many steps as it has fds, not as all the processes together have.
type Fds = HashMap<i32, Known>;

/// What the table asks of the file system, to show a path as /proc (and perf) does.
/// The real one is `pids::fd_seed::ProcCanon`; tests give a fake.
pub trait Canon {
    /// Whether `pid` sees the file system as rtrace does (same root, same mount
    /// namespace), so that rtrace may resolve its paths' symbolic links. Asked once
    /// per process the table meets without knowing it.
    fn same_view(&self, pid: u32) -> bool;
    /// `path` with its symbolic links and `..` resolved; `None` when it cannot be
    /// (it is gone).
    fn canonical(&self, path: &[u8]) -> Option<Box<[u8]>>;
}

/// A file system the table may not look into (a record's, replayed): every path stays
/// as the program gave it, joined to its working directory.
pub struct AsGiven;

impl Canon for AsGiven {
    fn same_view(&self, _: u32) -> bool {
        false
    }

    fn canonical(&self, _: &[u8]) -> Option<Box<[u8]>> {
        None
    }
}

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

/// A process's working directory and open fds, read from /proc when tracing started
/// (by `pids::fd_seed::read`, or from a record file's header).
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
    /// pid -> fd -> path; None: an fd whose path is not known.
    paths: HashMap<u32, Fds>,
    /// The time of the call [`FdTable::update`] is applying.
    now_ns: u64,
    cwds: HashMap<u32, Cwd>,
    /// Per pid: does it see the file system as rtrace does (same root, same mount
    /// namespace), so that rtrace may resolve its paths' symbolic links?
    same_view: HashMap<u32, bool>,
    /// vfork children that took their parent's fds and directory as it forked
    /// (`record::KIND_VFORK_CHILD`), until the parent's return, which then adds nothing.
    linked: rustc_hash::FxHashSet<u32>,
    canon: Box<dyn Canon>,
}

impl FdTable {
    /// `enabled`: close is traced; `cwd_enabled`: every call in [`CWD_CALLS`] is;
    /// `canon`: how paths are resolved.
    pub fn new(enabled: bool, cwd_enabled: bool, canon: impl Canon + 'static) -> Self {
        Self {
            enabled,
            cwd_enabled: enabled && cwd_enabled,
            paths: HashMap::default(),
            now_ns: 0,
            cwds: HashMap::default(),
            same_view: HashMap::default(),
            linked: Default::default(),
            canon: Box::new(canon),
        }
    }

    /// Starts from the working directories and fds read when tracing began; a seed
    /// without fds of its own has `inherited`, the fds rtrace was started with. (An fd
    /// met later is never looked up in /proc: by the time its record is read, /proc
    /// may show what the process did after the call.)
    pub fn seed_procs(&mut self, seeds: Vec<ProcSeed>, inherited: &[(i32, Box<[u8]>)]) {
        for s in seeds {
            // Asked when the seed was read, while the process was surely there; its
            // children inherit it.
            self.same_view.insert(s.pid, s.same_view);
            if self.enabled {
                for (fd, path) in s.fds.as_deref().unwrap_or(inherited) {
                    let known = Known {
                        path: Some(path.as_ref().into()),
                        since_ns: 0,
                        on_exec: false,
                    };
                    self.paths.entry(s.pid).or_default().insert(*fd, known);
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
        self.paths.get(&pid)?.get(&fd)?.path.as_deref()
    }

    pub(crate) fn cwd(&self, pid: u32) -> Option<&[u8]> {
        self.cwds.get(&pid)?.path.as_deref()
    }

    /// What the call `rec` did to `rec.pid`'s fds and working directory, once its line
    /// is printed (or left out). `path_arg`: its first string argument, read whole;
    /// `pair`: the two fds a pipe or socketpair wrote, when they could be read.
    pub fn update(
        &mut self,
        rec: &SyscallRecord,
        info: &SyscallInfo,
        path_arg: Option<&[u8]>,
        pair: Option<[i32; 2]>,
    ) {
        if !self.enabled {
            return;
        }
        self.now_ns = rec.first_ns();
        let effect = info.fd_effect;
        if effect == FdEffect::ExitGroup {
            // It never returns: its entry is the end of the process.
            self.forget_fds(rec.pid);
            self.cwds.remove(&rec.pid);
            self.same_view.remove(&rec.pid);
            return;
        }
        if !rec.has_exit() {
            return;
        }
        let (pid, ret, fd0) = (rec.pid, rec.ret, rec.args[0] as u32 as i32);
        let cwd = self.cwd_enabled;
        match effect {
            FdEffect::Close if ret == 0 => {
                if let Some(fds) = self.paths.get_mut(&pid) {
                    fds.remove(&fd0);
                }
            }
            FdEffect::CloseRange if ret == 0 => self.close_range(pid, rec.args),
            FdEffect::NewFd(new) if ret >= 0 => {
                let path = named(new.name, path_arg, inodes(rec).map(|i| i[1]));
                self.set_fd(pid, ret as i32, path, new.on_exec.of(&rec.args));
            }
            FdEffect::NewFdPair(new) if ret == 0 => self.new_pair(rec, pair, new),
            // With an fd of its own, signalfd changes that fd's mask: it stays what it was.
            FdEffect::Signalfd(on_exec) if ret >= 0 && fd0 == -1 => {
                let path = named(SIGNALFD, None, None);
                self.set_fd(pid, ret as i32, path, on_exec.of(&rec.args));
            }
            FdEffect::Ioctl if ret == 0 => match rec.args[1] & 0xffff_ffff {
                FIOCLEX => self.mark_cloexec(pid, fd0, true),
                FIONCLEX => self.mark_cloexec(pid, fd0, false),
                _ => {}
            },
            FdEffect::Exec if ret == 0 => self.exec(pid),
            FdEffect::Open { dfd, flags } if ret >= 0 => self.opened(rec, dfd, flags, path_arg),
            FdEffect::Dup if ret >= 0 => self.dup(pid, fd0, ret as i32, false),
            FdEffect::Dup3 if ret >= 0 => self.dup(pid, fd0, ret as i32, cloexec(rec.args[2])),
            FdEffect::Fcntl => self.fcntl(rec),
            FdEffect::Chdir if cwd && ret == 0 => {
                self.saw_view(rec);
                let to = path_arg.and_then(|p| self.resolved(pid, None, p));
                self.changed_dir(rec, to);
            }
            FdEffect::Fchdir if cwd && ret == 0 => {
                let to = self.path(pid, fd0).map(Into::into);
                self.changed_dir(rec, to);
            }
            FdEffect::Clone if ret > 0 => {
                let has = |flag: i32| rec.args[0] & flag as u64 != 0;
                self.forked(rec, has(libc::CLONE_THREAD), has(libc::CLONE_NEWNS));
            }
            FdEffect::Fork if ret > 0 => self.forked(rec, false, false),
            _ => {}
        }
    }

    /// An open of `path_arg` that returned a new fd; `dfd` and `flags`: which
    /// arguments hold the directory fd and the open flags.
    fn opened(
        &mut self,
        rec: &SyscallRecord,
        dfd: Option<usize>,
        flags: Option<usize>,
        path_arg: Option<&[u8]>,
    ) {
        let dfd = dfd.map(|i| rec.args[i] as u32 as i32);
        self.saw_view(rec);
        let path = path_arg.and_then(|p| self.resolved(rec.pid, dfd, p));
        let on_exec = flags.is_some_and(|i| cloexec(rec.args[i]));
        self.set_fd(rec.pid, rec.ret as i32, path, on_exec);
    }

    /// `fd` of `pid` now refers to `path`, closed on exec or not.
    fn set_fd(&mut self, pid: u32, fd: i32, path: Option<impl Into<Arc<[u8]>>>, on_exec: bool) {
        let known = Known {
            path: path.map(Into::into),
            since_ns: self.now_ns,
            on_exec,
        };
        self.paths.entry(pid).or_default().insert(fd, known);
    }

    /// Whether `fd` of `pid` is closed on exec (an fd whose path is not known has
    /// nothing an exec could close).
    fn mark_cloexec(&mut self, pid: u32, fd: i32, on_exec: bool) {
        if let Some(k) = self.paths.get_mut(&pid).and_then(|fds| fds.get_mut(&fd)) {
            k.on_exec = on_exec;
        }
    }

    /// Nothing of `pid`'s fds is known any more.
    fn forget_fds(&mut self, pid: u32) {
        self.paths.remove(&pid);
    }

    /// `new` of `pid` refers to what `old` does.
    fn dup(&mut self, pid: u32, old: i32, new: i32, on_exec: bool) {
        let path = self
            .paths
            .get(&pid)
            .and_then(|fds| fds.get(&old))
            .and_then(|k| k.path.clone());
        self.set_fd(pid, new, path, on_exec);
    }

    /// close_range(first, last, flags): closes the fds or marks them close-on-exec.
    fn close_range(&mut self, pid: u32, args: [u64; 6]) {
        let (first, last) = (args[0] as u32, args[1] as u32);
        let in_range = |fd: i32| (first..=last).contains(&(fd as u32));
        let Some(fds) = self.paths.get_mut(&pid) else {
            return;
        };
        if args[2] & CLOSE_RANGE_CLOEXEC != 0 {
            for (_, k) in fds.iter_mut().filter(|(fd, _)| in_range(**fd)) {
                k.on_exec = true;
            }
        } else {
            fds.retain(|fd, _| !in_range(*fd));
        }
    }

    /// A pipe or socketpair of `rec.pid` that made the fds `pair`.
    fn new_pair(&mut self, rec: &SyscallRecord, pair: Option<[i32; 2]>, new: NewFd) {
        let pid = rec.pid;
        match pair {
            Some(fds) => {
                let inodes = inodes(rec);
                let on_exec = new.on_exec.of(&rec.args);
                for (i, fd) in fds.into_iter().enumerate() {
                    let path = named(new.name, None, inodes.map(|ino| ino[i]));
                    self.set_fd(pid, fd, path, on_exec);
                }
            }
            // Which two numbers it took is not known: none of this process's paths
            // can be trusted any more.
            None => self.forget_fds(pid),
        }
    }

    /// fcntl's dups and F_SETFD.
    fn fcntl(&mut self, rec: &SyscallRecord) {
        let (pid, fd, ret) = (rec.pid, rec.args[0] as u32 as i32, rec.ret);
        match rec.args[1] as i32 {
            libc::F_DUPFD if ret >= 0 => self.dup(pid, fd, ret as i32, false),
            libc::F_DUPFD_CLOEXEC if ret >= 0 => self.dup(pid, fd, ret as i32, true),
            libc::F_SETFD if ret == 0 => {
                self.mark_cloexec(pid, fd, rec.args[2] & libc::FD_CLOEXEC as u64 != 0)
            }
            _ => {}
        }
    }

    /// A successful exec: the new program starts without the close-on-exec fds.
    fn exec(&mut self, pid: u32) {
        if let Some(fds) = self.paths.get_mut(&pid) {
            fds.retain(|_, k| !k.on_exec);
        }
    }

    /// What the kernel side said of the view `rec.pid` had at the call's exit
    /// (`REC_VIEW_KNOWN`): it holds from then on, in place of what /proc would say
    /// later, when a short-lived process is gone. Records without it (older record
    /// files, a kernel whose fields were not found) leave /proc to be asked.
    fn saw_view(&mut self, rec: &SyscallRecord) {
        if rec.flags & REC_VIEW_KNOWN != 0 {
            self.same_view
                .insert(rec.pid, rec.flags & REC_SAME_VIEW != 0);
        }
    }

    /// `path` as /proc (and perf) shows it: symbolic links and `..` resolved, when
    /// `pid` sees the file system as rtrace does; else, or when the path is gone, as
    /// the program gave it.
    fn canonical(&mut self, pid: u32, path: Box<[u8]>) -> Box<[u8]> {
        let canon = &self.canon;
        let same = *self
            .same_view
            .entry(pid)
            .or_insert_with(|| canon.same_view(pid));
        if !same {
            return path;
        }
        canon.canonical(&path).unwrap_or(path)
    }

    /// Where `path`, given to a call of `pid` with directory fd `dfd`, leads, as /proc
    /// shows it.
    fn resolved(&mut self, pid: u32, dfd: Option<i32>, path: &[u8]) -> Path {
        let path = self.resolve(pid, dfd, path)?;
        Some(self.canonical(pid, path))
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

    /// A child its parent waits for (`record::KIND_VFORK_CHILD`, sent as the parent
    /// forked at `at_ns`, before any record of the child's): the parent makes no call
    /// until the child has exec'd or exited, so what it is known to have now is what
    /// the child starts with. (Whether the child sees the file system as its parent
    /// does waits for the parent's return, which has the clone's flags.)
    pub fn vfork_child(&mut self, parent: u32, child: u32, at_ns: u64) {
        if !self.enabled || parent == child || !self.linked.insert(child) {
            return;
        }
        self.inherit_fds(parent, child, at_ns);
        if self.cwd_enabled {
            let path = self.cwds.get(&parent).and_then(|c| c.path.clone());
            let since_ns = at_ns;
            self.cwds.insert(
                child,
                Cwd {
                    path,
                    since_ns,
                    read_between: None,
                },
            );
        }
    }

    /// A fork or clone of `rec.pid` made `rec.ret`: a thread of it, or a new process
    /// (in a mount namespace of its own when `new_ns`).
    fn forked(&mut self, rec: &SyscallRecord, thread: bool, new_ns: bool) {
        let child = rec.ret as u32;
        if !thread {
            if let Some(&same) = self.same_view.get(&rec.pid) {
                self.same_view.insert(child, same && !new_ns);
            }
            // A child its parent waited for has its fds already, and has changed them
            // since: a closed one must not come back.
            if !self.linked.remove(&child) {
                self.inherit_fds(rec.pid, child, rec.entry_ns());
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

    /// A new process, made at `forked_ns` (0: not known), starts with its parent's
    /// fds (the ones it has not changed already, if its own records came first). What
    /// the table holds for its pid from before then was a dead process's.
    fn inherit_fds(&mut self, parent: u32, child: u32, forked_ns: u64) {
        let mut fds = self.paths.remove(&child).unwrap_or_default();
        fds.retain(|_, k| k.since_ns >= forked_ns);
        for (fd, k) in self.paths.get(&parent).into_iter().flatten() {
            fds.entry(*fd).or_insert_with(|| Known {
                since_ns: forked_ns,
                ..k.clone()
            });
        }
        if !fds.is_empty() {
            self.paths.insert(child, fds);
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

/// The inode numbers the kernel side read for the fds `rec`'s call made (see
/// `record::REC_FD_INODES`): of a pair's two fds, or (the second) of the returned one.
pub fn inodes(rec: &SyscallRecord) -> Option<[u64; 2]> {
    (rec.flags & REC_FD_INODES != 0).then_some([rec.args[4], rec.args[5]])
}

/// What /proc calls a new fd named `name`: `arg` the call's first string argument,
/// `inode` the number the kernel side read.
pub fn named(name: FdName, arg: Option<&[u8]>, inode: Option<u64>) -> Path {
    match name {
        FdName::Unknown => None,
        FdName::Fixed(name) => Some(name.as_bytes().into()),
        FdName::ByInode(kind) => inode.map(|ino| format!("{kind}:[{ino}]").into_bytes().into()),
        FdName::Memfd => arg.map(|n| [b"/memfd:", n, b" (deleted)"].concat().into()),
    }
}

/// Whether open flags ask for close-on-exec.
fn cloexec(flags: u64) -> bool {
    flags & libc::O_CLOEXEC as u64 != 0
}

#[cfg(test)]
mod tests {
    use trace_common::record::{KIND_SYSCALL, REC_FD_INODES, REC_HAS_ENTRY, REC_HAS_EXIT};

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

    use super::AsGiven as Blind;

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
        let mut t = FdTable::new(true, true, Blind);
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
        let mut t = FdTable::new(true, true, Blind);
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
    fn new_fds_are_named_as_proc_names_them() {
        let mut t = FdTable::new(true, true, Blind);
        let pid = 4_000_000;
        let with_inodes = |args: [u64; 6], ret: i64| {
            let mut r = rec(args, ret);
            r.flags |= REC_FD_INODES;
            r
        };
        let name = |t: &FdTable, fd: i32| {
            t.path(pid, fd)
                .map(|p| String::from_utf8_lossy(p).into_owned())
        };
        // A pipe's two ends are one inode; a socketpair's are two.
        let pipe2 = info("pipe2", &[("fildes", "int *"), ("flags", "int")]);
        t.update(
            &with_inodes([0, 0, 0, 0, 4711, 4711], 0),
            &pipe2,
            None,
            Some([3, 4]),
        );
        assert_eq!(name(&t, 3).as_deref(), Some("pipe:[4711]"));
        assert_eq!(name(&t, 4).as_deref(), Some("pipe:[4711]"));
        let socketpair = info(
            "socketpair",
            &[
                ("family", "int"),
                ("type", "int"),
                ("protocol", "int"),
                ("usockvec", "int *"),
            ],
        );
        t.update(
            &with_inodes([1, 1, 0, 0, 20, 21], 0),
            &socketpair,
            None,
            Some([5, 6]),
        );
        assert_eq!(name(&t, 5).as_deref(), Some("socket:[20]"));
        assert_eq!(name(&t, 6).as_deref(), Some("socket:[21]"));
        let socket = info(
            "socket",
            &[("family", "int"), ("type", "int"), ("protocol", "int")],
        );
        t.update(&with_inodes([2, 1, 0, 0, 0, 99], 7), &socket, None, None);
        assert_eq!(name(&t, 7).as_deref(), Some("socket:[99]"));
        // Without the inode (an older record, a kernel without the fields): no name.
        t.update(&rec([2, 1, 0, 0, 0, 99], 7), &socket, None, None);
        assert_eq!(name(&t, 7), None);
        // Anonymous inodes are named by their call; a memfd by its name argument.
        let eventfd2 = info("eventfd2", &[("count", "unsigned int"), ("flags", "int")]);
        t.update(&rec([0, 0o2000000, 0, 0, 0, 0], 8), &eventfd2, None, None);
        assert_eq!(name(&t, 8).as_deref(), Some("anon_inode:[eventfd]"));
        let epoll = info("epoll_create1", &[("flags", "int")]);
        t.update(&rec([0; 6], 9), &epoll, None, None);
        assert_eq!(name(&t, 9).as_deref(), Some("anon_inode:[eventpoll]"));
        let memfd = info(
            "memfd_create",
            &[("uname", "const char *"), ("flags", "unsigned int")],
        );
        t.update(&rec([0; 6], 10), &memfd, Some(b"hello world"), None);
        assert_eq!(
            name(&t, 10).as_deref(),
            Some("/memfd:hello world (deleted)")
        );
        // signalfd4(-1, …) makes one; signalfd4(fd, …) changes fd's mask, fd stays.
        let signalfd4 = info(
            "signalfd4",
            &[
                ("ufd", "int"),
                ("user_mask", "sigset_t *"),
                ("sizemask", "size_t"),
                ("flags", "int"),
            ],
        );
        t.update(
            &rec([u32::MAX as u64, 0, 8, 0, 0, 0], 11),
            &signalfd4,
            None,
            None,
        );
        assert_eq!(name(&t, 11).as_deref(), Some("anon_inode:[signalfd]"));
        t.update(&rec([3, 0, 8, 0, 0, 0], 3), &signalfd4, None, None);
        assert_eq!(name(&t, 3).as_deref(), Some("pipe:[4711]"));
        // The close-on-exec eventfd is gone after an exec; the epoll fd is not.
        let execve = info("execve", &[("filename", "const char *")]);
        t.update(&rec([0; 6], 0), &execve, Some(b"/bin/true"), None);
        assert_eq!(name(&t, 8), None);
        assert_eq!(name(&t, 9).as_deref(), Some("anon_inode:[eventpoll]"));
    }

    #[test]
    fn close_range_and_fioclex_are_followed() {
        let mut t = FdTable::new(true, true, Blind);
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

    #[test]
    fn disabled_learns_nothing() {
        let mut t = FdTable::new(false, true, Blind);
        let openat = info("openat", &[("dfd", "int"), ("filename", "const char *")]);
        t.update(&rec([0; 6], 3), &openat, Some(b"/x"), None);
        assert_eq!(t.path(4_000_000, 3), None);
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
        let mut t = FdTable::new(true, true, Blind);
        t.seed_procs(
            vec![ProcSeed {
                pid: PID,
                path: Some(path.into()),
                before_ns: 100,
                after_ns: 110,
                fds: Some(Vec::new()),
                same_view: false,
            }],
            &[],
        );
        t
    }

    #[test]
    fn a_relative_open_is_taken_from_its_directory_fd() {
        let mut t = FdTable::new(true, true, Blind);
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
        let mut t = FdTable::new(true, true, Blind);
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
        let mut t = FdTable::new(true, true, Blind);
        t.update(
            &rec([CWD, 0, 0, 0, 0, 0], 5),
            &openat(),
            Some(b"libelf1"),
            None,
        );
        assert_eq!(t.path(PID, 5), None);
        // Nor when the working directory is not followed (chdir not traced).
        let mut t = FdTable::new(true, false, Blind);
        t.seed_procs(
            vec![ProcSeed {
                pid: PID,
                path: Some(b"/tmp"[..].into()),
                before_ns: 0,
                after_ns: 0,
                fds: Some(Vec::new()),
                same_view: false,
            }],
            &[],
        );
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
        assert!(t.same_view.contains_key(&77) && t.paths.contains_key(&77));
        t.update(&e, &exit, None, None);
        assert!(t.cwd(77).is_none());
        assert!(!t.same_view.contains_key(&77) && !t.paths.contains_key(&77));
    }

    /// A file system where `/home/u/link` is a symbolic link to `/srv/real`, seen as
    /// rtrace sees it by every process but `OTHER`.
    struct Linked;
    const OTHER: u32 = 4_000_100;
    impl Canon for Linked {
        fn same_view(&self, pid: u32) -> bool {
            pid != OTHER
        }
        fn canonical(&self, path: &[u8]) -> Option<Box<[u8]>> {
            let rest = path.strip_prefix(b"/home/u/link")?;
            Some([&b"/srv/real"[..], rest].concat().into())
        }
    }

    #[test]
    fn paths_are_canonical_for_a_process_that_sees_what_rtrace_sees() {
        let mut t = FdTable::new(true, true, Linked);
        let o = openat();
        t.update(
            &rec([CWD, 0, 0, 0, 0, 0], 3),
            &o,
            Some(b"/home/u/link/f"),
            None,
        );
        assert_eq!(t.path(PID, 3), Some(&b"/srv/real/f"[..]));
        // What cannot be resolved (gone) stays as given.
        t.update(&rec([CWD, 0, 0, 0, 0, 0], 4), &o, Some(b"/home/u/x"), None);
        assert_eq!(t.path(PID, 4), Some(&b"/home/u/x"[..]));
        // A process in a view of its own: as it gave it.
        let mut r = rec([CWD, 0, 0, 0, 0, 0], 3);
        r.pid = OTHER;
        t.update(&r, &o, Some(b"/home/u/link/f"), None);
        assert_eq!(t.path(OTHER, 3), Some(&b"/home/u/link/f"[..]));
        // A chdir is resolved too, and a relative open then starts from there.
        let chdir = info("chdir", &[("filename", "const char *")]);
        t.seed_procs(vec![seed_at(PID, b"/home/u")], &[]);
        t.update(&at(200, 210, [0; 6], 0), &chdir, Some(b"link"), None);
        assert_eq!(t.cwd(PID), Some(&b"/srv/real"[..]));
        t.update(&at(300, 310, [CWD, 0, 0, 0, 0, 0], 5), &o, Some(b"g"), None);
        assert_eq!(t.path(PID, 5), Some(&b"/srv/real/g"[..]));
    }

    #[test]
    fn the_view_the_kernel_saw_at_the_call_wins_over_proc() {
        let mut t = FdTable::new(true, true, Linked);
        let o = openat();
        // A child that /proc no longer knows (gone before its records were read): the
        // kernel saw it share rtrace's view when it opened.
        let mut r = rec([CWD, 0, 0, 0, 0, 0], 3);
        r.pid = OTHER;
        r.flags |= REC_VIEW_KNOWN | REC_SAME_VIEW;
        t.update(&r, &o, Some(b"/home/u/link/f"), None);
        assert_eq!(t.path(OTHER, 3), Some(&b"/srv/real/f"[..]));
        // One that /proc would call the same, chroot'd when it opened: as it gave it.
        let mut r = rec([CWD, 0, 0, 0, 0, 0], 4);
        r.flags |= REC_VIEW_KNOWN;
        t.update(&r, &o, Some(b"/home/u/link/f"), None);
        assert_eq!(t.path(PID, 4), Some(&b"/home/u/link/f"[..]));
        // And after it returned to rtrace's view (a later open says so).
        r.flags |= REC_SAME_VIEW;
        r.ret = 5;
        t.update(&r, &o, Some(b"/home/u/link/f"), None);
        assert_eq!(t.path(PID, 5), Some(&b"/srv/real/f"[..]));
    }

    /// `pid` in `cwd`, seeing the file system as rtrace does.
    fn seed_at(pid: u32, cwd: &[u8]) -> ProcSeed {
        ProcSeed {
            pid,
            path: Some(cwd.into()),
            before_ns: 0,
            after_ns: 0,
            fds: Some(Vec::new()),
            same_view: true,
        }
    }

    #[test]
    fn a_vfork_child_starts_with_its_parents_fds_and_directory_before_the_parent_returns() {
        // The parent (PID, in /srv, fd 4 open) waits in vfork; the record naming the
        // child, then the child's own, all come before the parent's return (which,
        // before, was the only thing that gave the child anything).
        let vfork = info("vfork", &[]);
        let close = info("close", &[("fd", "unsigned int")]);
        let mut t = seeded(b"/srv");
        t.update(
            &at(150, 160, [CWD, 0, 0, 0, 0, 0], 4),
            &openat(),
            Some(b"/etc/hosts"),
            None,
        );
        t.vfork_child(PID, 77, 205);
        assert_eq!(t.path(77, 4), Some(&b"/etc/hosts"[..]));
        let mut open = at(220, 230, [CWD, 0, 0, 0, 0, 0], 3);
        open.pid = 77;
        t.update(&open, &openat(), Some(b".git/config"), None);
        assert_eq!(t.path(77, 3), Some(&b"/srv/.git/config"[..]));
        let mut closed = at(240, 250, [4, 0, 0, 0, 0, 0], 0);
        closed.pid = 77;
        t.update(&closed, &close, None, None);
        // The parent's return: the fd the child closed stays closed, its own stays.
        t.update(&at(200, 300, [0; 6], 77), &vfork, None, None);
        assert_eq!(t.path(77, 4), None);
        assert_eq!(t.path(77, 3), Some(&b"/srv/.git/config"[..]));
        assert!(t.linked.is_empty());
        // A task named as its own parent (a thread) takes nothing.
        t.vfork_child(PID, PID, 400);
        assert!(t.linked.is_empty());
    }

    /// A process killed by a signal makes no exit_group, so its fds stay behind. A new
    /// process that gets the same pid later starts with its parent's fds, not the dead
    /// one's; what the new child opened itself before its parent's return stays.
    #[test]
    fn a_reused_pid_starts_with_its_parents_fds_not_a_dead_processes() {
        let fork = info("fork", &[]);
        let mut t = seeded(b"/srv");
        let child = |mut r: SyscallRecord| {
            r.pid = 77;
            r
        };
        for (at_ns, fd, path) in [(200, 3, &b"/tmp/dead3"[..]), (220, 5, b"/tmp/dead5")] {
            let open = child(at(at_ns, at_ns + 5, [CWD, 0, 0, 0, 0, 0], fd));
            t.update(&open, &openat(), Some(path), None);
        }
        assert_eq!(t.path(77, 5), Some(&b"/tmp/dead5"[..]));
        // Pid 77 is killed. The parent opens fd 3, then forks; the kernel gives the
        // new child pid 77, and the child opens fd 6 before the parent's return.
        t.update(
            &at(300, 305, [CWD, 0, 0, 0, 0, 0], 3),
            &openat(),
            Some(b"/etc/hosts"),
            None,
        );
        let own = child(at(420, 425, [CWD, 0, 0, 0, 0, 0], 6));
        t.update(&own, &openat(), Some(b"/srv/mine"), None);
        t.update(&at(400, 430, [0; 6], 77), &fork, None, None);
        assert_eq!(t.path(77, 3), Some(&b"/etc/hosts"[..]));
        assert_eq!(t.path(77, 5), None);
        assert_eq!(t.path(77, 6), Some(&b"/srv/mine"[..]));
        // A vfork child given a dead process's pid likewise.
        let dead = child(at(500, 505, [CWD, 0, 0, 0, 0, 0], 9));
        t.update(&dead, &openat(), Some(b"/tmp/dead9"), None);
        t.vfork_child(PID, 77, 600);
        assert_eq!(t.path(77, 9), None);
        assert_eq!(t.path(77, 3), Some(&b"/etc/hosts"[..]));
    }

    #[test]
    fn a_child_in_a_new_mount_namespace_is_not_resolved() {
        let clone = info("clone", &[("clone_flags", "unsigned long")]);
        let mut t = FdTable::new(true, true, Linked);
        t.seed_procs(vec![seed_at(PID, b"/")], &[]);
        let new_ns = libc::CLONE_NEWNS as u64;
        t.update(&at(10, 20, [new_ns, 0, 0, 0, 0, 0], 77), &clone, None, None);
        let mut child = at(30, 40, [CWD, 0, 0, 0, 0, 0], 3);
        child.pid = 77;
        t.update(&child, &openat(), Some(b"/home/u/link/f"), None);
        assert_eq!(t.path(77, 3), Some(&b"/home/u/link/f"[..]));
        // A plain fork shares its parent's view.
        t.update(&at(50, 60, [0x11, 0, 0, 0, 0, 0], 78), &clone, None, None);
        child.pid = 78;
        t.update(&child, &openat(), Some(b"/home/u/link/f"), None);
        assert_eq!(t.path(78, 3), Some(&b"/srv/real/f"[..]));
    }

    #[test]
    fn a_seed_without_fds_has_the_inherited_ones() {
        let mut t = FdTable::new(true, true, Blind);
        let seed = |pid, fds| ProcSeed {
            pid,
            path: None,
            before_ns: 0,
            after_ns: 0,
            fds,
            same_view: false,
        };
        let inherited = [(1, Box::from(&b"/dev/pts/0"[..]))];
        let own = vec![(3, Box::from(&b"/etc/hostname"[..]))];
        t.seed_procs(vec![seed(PID, None), seed(77, Some(own))], &inherited);
        assert_eq!(t.path(PID, 1), Some(&b"/dev/pts/0"[..]));
        assert_eq!(
            (t.path(77, 1), t.path(77, 3)),
            (None, Some(&b"/etc/hostname"[..]))
        );
    }
}
