//! The traced command: forked, held on a pipe until the programs are attached and its
//! pid is a target, then released to exec. As perf does, it starts as a child of rtrace
//! in rtrace's process group, so the terminal's Ctrl-C reaches both.

use std::{
    ffi::{CString, OsStr, OsString},
    io,
    os::{
        fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
        unix::ffi::OsStrExt,
    },
    path::{Path, PathBuf},
};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum WorkloadError {
    #[error("cannot run '{name}': command not found")]
    NotFound { name: String },
    #[error("cannot run '{name}': {source}")]
    Exec {
        name: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot start the workload: {0}")]
    Spawn(#[source] io::Error),
    #[error("argument holds a NUL byte: {0:?}")]
    Nul(OsString),
}

impl WorkloadError {
    /// The exit status a shell would give: 127 for a command that is not there, 126
    /// for one that is there but cannot be run (not executable, a directory…).
    pub fn exit_code(&self) -> i32 {
        match self {
            WorkloadError::Exec { source, .. } if source.kind() != io::ErrorKind::NotFound => 126,
            _ => 127,
        }
    }
}

pub struct Workload {
    pub pid: u32,
    name: String,
    go: Option<OwnedFd>,
    exec_error: OwnedFd,
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Resolves the program like execvp: a name with a `/` as is, otherwise the first
/// executable file of that name on PATH. Done before the fork, so the trace shows the
/// one execve that runs it rather than a probe of each PATH directory.
pub fn resolve_program(name: &OsStr, path_var: Option<&OsStr>) -> Option<PathBuf> {
    if name.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(name));
    }
    let path_var = path_var.unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    std::env::split_paths(path_var)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fds is a valid two-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned two new descriptors that we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Workload {
    /// Forks the command and leaves it waiting for [`Workload::release`]; `path_var`
    /// is `PATH`, where it is looked up.
    /// With `stdout_to_stderr` (the trace goes to stdout: `-o -`), the command's stdout
    /// is rtrace's stderr, so that the two never mix.
    pub fn spawn_held(
        argv: &[OsString],
        path_var: Option<&OsStr>,
        stdout_to_stderr: bool,
    ) -> Result<Self, WorkloadError> {
        let name = argv[0].to_string_lossy().into_owned();
        let program = resolve_program(&argv[0], path_var)
            .ok_or_else(|| WorkloadError::NotFound { name: name.clone() })?;
        let cstr = |s: &OsStr| CString::new(s.as_bytes()).map_err(|_| WorkloadError::Nul(s.into()));
        let program = cstr(program.as_os_str())?;
        let args: Vec<CString> = argv.iter().map(|a| cstr(a)).collect::<Result<_, _>>()?;
        let mut arg_ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        arg_ptrs.push(std::ptr::null());
        // A script without `#!` is run by the shell, as a shell (and execvp, and perf)
        // would: `sh PROGRAM ARGS...`.
        let sh_ptrs: Vec<*const libc::c_char> = [SH.as_ptr(), program.as_ptr()]
            .into_iter()
            .chain(arg_ptrs[1..].iter().copied())
            .collect();

        // What each reset signal becomes in the command, decided before the fork.
        let dispositions = RESET_SIGNALS.map(|sig| {
            if crate::signals::inherited_ignored(sig) {
                (sig, libc::SIG_IGN)
            } else {
                (sig, libc::SIG_DFL)
            }
        });
        let (go_r, go_w) = pipe_cloexec().map_err(WorkloadError::Spawn)?;
        let (err_r, err_w) = pipe_cloexec().map_err(WorkloadError::Spawn)?;

        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: rtrace is single-threaded here; the child only makes async-signal-safe
        // calls (close, dup2, setrlimit, prctl, getppid, read, signal, execv, write,
        // _exit) on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(WorkloadError::Spawn(io::Error::last_os_error()));
        }
        if pid == 0 {
            let fds = HeldFds {
                go: go_r.as_raw_fd(),
                go_other_end: go_w.as_raw_fd(),
                err: err_w.as_raw_fd(),
                err_other_end: err_r.as_raw_fd(),
                stdout_to_stderr,
            };
            // SAFETY: see above.
            unsafe {
                child_wait_and_exec(parent, fds, &dispositions, &program, &arg_ptrs, &sh_ptrs)
            }
        }
        drop(go_r);
        drop(err_w);
        Ok(Self {
            pid: pid as u32,
            name,
            go: Some(go_w),
            exec_error: err_r,
        })
    }

    /// Lets the command exec; returns once it has (or has failed to).
    pub fn release(&mut self) -> Result<(), WorkloadError> {
        if let Some(go) = self.go.take() {
            let byte = [1u8];
            // SAFETY: writing one byte from a valid buffer to our pipe end.
            unsafe { libc::write(go.as_raw_fd(), byte.as_ptr().cast(), 1) };
        }
        let mut errno = [0u8; 4];
        let n = loop {
            // SAFETY: reading into a valid 4-byte buffer.
            let n =
                unsafe { libc::read(self.exec_error.as_raw_fd(), errno.as_mut_ptr().cast(), 4) };
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break n;
        };
        if n == 4 {
            return Err(WorkloadError::Exec {
                name: self.name.clone(),
                source: io::Error::from_raw_os_error(i32::from_ne_bytes(errno)),
            });
        }
        // EOF: the exec succeeded and closed the CLOEXEC pipe.
        Ok(())
    }
}

impl Drop for Workload {
    /// A workload never released (rtrace is ending on an error) is not left behind:
    /// closing the go pipe makes it exit without running the command; it is reaped
    /// here so that no zombie outlives the session either.
    fn drop(&mut self) {
        if let Some(go) = self.go.take() {
            drop(go);
            let mut status = 0;
            // SAFETY: waiting for our own child; status is a valid out-parameter.
            unsafe { libc::waitpid(self.pid as libc::pid_t, &mut status, 0) };
        }
    }
}

/// The shell that runs a script without `#!`.
const SH: &std::ffi::CStr = c"/bin/sh";

/// The pipe ends as the held child sees them.
struct HeldFds {
    go: RawFd,
    go_other_end: RawFd,
    err: RawFd,
    err_other_end: RawFd,
    /// The trace has stdout (`-o -`): the command writes its own to stderr.
    stdout_to_stderr: bool,
}

/// Signals whose dispositions the child sets: Rust's runtime ignores SIGPIPE, and an
/// ignored signal stays ignored across exec (std::process::Command resets it too); the
/// stopping signals have rtrace's handler, and get back what rtrace inherited (ignored
/// in a script's background job, the default otherwise).
const RESET_SIGNALS: [libc::c_int; 5] = [
    libc::SIGPIPE,
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
];

/// The child: wait for the go byte, then exec. Never returns. While held it must die
/// with rtrace, whatever ends rtrace: it closes its copies of the pipes' other ends (so
/// that rtrace's exit is an EOF on `go`), asks for SIGKILL when rtrace dies, and
/// checks that rtrace did not die before that request took hold.
unsafe fn child_wait_and_exec(
    parent: libc::pid_t,
    fds: HeldFds,
    dispositions: &[(libc::c_int, libc::sighandler_t)],
    program: &CString,
    argv: &[*const libc::c_char],
    sh_argv: &[*const libc::c_char],
) -> ! {
    unsafe {
        libc::close(fds.go_other_end);
        libc::close(fds.err_other_end);
        if fds.stdout_to_stderr {
            libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO);
        }
        // The open-files limit the user gave, not the one rtrace raised for itself.
        crate::kernel::resources::restore_fd_limit();
        for &(sig, disposition) in dispositions {
            libc::signal(sig, disposition);
        }
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(127);
        }
        let mut byte = 0u8;
        loop {
            let n = libc::read(fds.go, (&mut byte as *mut u8).cast(), 1);
            if n == 1 {
                break;
            }
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            // rtrace went away without releasing us: do not run untraced.
            libc::_exit(127);
        }
        // Released and traced: from here on the command is the user's, and lives on
        // whatever happens to rtrace.
        libc::prctl(libc::PR_SET_PDEATHSIG, 0, 0, 0, 0);
        libc::execv(program.as_ptr(), argv.as_ptr());
        if *libc::__errno_location() == libc::ENOEXEC {
            libc::execv(SH.as_ptr(), sh_argv.as_ptr());
        }
        let errno = *libc::__errno_location();
        libc::write(fds.err, (&errno as *const i32).cast(), 4);
        libc::_exit(127);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_execvp() {
        let path = OsStr::new("/nonexistent:/bin:/usr/bin");
        let sh = resolve_program(OsStr::new("sh"), Some(path)).unwrap();
        assert!(sh.ends_with("sh") && sh.is_absolute());
        assert_eq!(
            resolve_program(OsStr::new("./x"), Some(path)),
            Some(PathBuf::from("./x"))
        );
        assert_eq!(
            resolve_program(OsStr::new("no-such-command-here"), Some(path)),
            None
        );
    }
}
