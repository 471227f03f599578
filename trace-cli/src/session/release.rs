//! Letting the held command run, once everything is attached, and what follows it:
//! `-D`'s delay, and reaping the command when it ends.

use std::{
    io,
    os::fd::{FromRawFd, OwnedFd},
    time::Duration,
};

use crate::{config::Config, kernel::loader::SyscallHooks, workload::Workload};

use super::{EventRuntime, SessionError, io_err, probes::Probes};

/// Releases the held command and, with `-D`, waits the delay before attaching the
/// syscall programs: the command's pidfd, which turns readable when it exits, and the
/// time from which events are shown.
pub(super) fn start(
    workload: Option<&mut Workload>,
    events: &mut EventRuntime,
    probes: &mut Probes,
    hooks: &SyscallHooks,
    cfg: &Config,
) -> Result<(Option<OwnedFd>, u64), SessionError> {
    let pidfd = release(workload)?;
    // Events before this time are not shown (-D).
    let shown_from_ns = match cfg.delay {
        Some(d) => delay(events, d, probes, hooks, cfg)?,
        None => 0,
    };
    if cfg.verbose > 0 {
        say!("rtrace: tracing started");
    }
    Ok((pidfd, shown_from_ns))
}

/// Releases the held command; its pidfd. A command that cannot be released is reaped.
fn release(workload: Option<&mut Workload>) -> Result<Option<OwnedFd>, SessionError> {
    let Some(w) = workload else {
        return Ok(None);
    };
    let fd = pidfd_open(w.pid).map_err(io_err("pidfd_open on the workload"))?;
    if let Err(e) = w.release() {
        reap(w.pid);
        return Err(e.into());
    }
    Ok(Some(fd))
}

/// `-D`: waits the delay, then attaches the syscall programs; the time from which
/// events are shown.
fn delay(
    EventRuntime { runtime, stops }: &mut EventRuntime,
    delay: Duration,
    probes: &mut Probes,
    hooks: &SyscallHooks,
    cfg: &Config,
) -> Result<u64, SessionError> {
    // A stop during the delay ends it: nothing is attached, and the event loop
    // that follows relays the signal to the command and ends the session.
    let stopped = runtime.block_on(async {
        tokio::select! {
            _ = tokio::time::sleep(delay) => false,
            _ = async {
                if stops.requested().await.is_none() {
                    stops.next().await;
                }
            } => true,
        }
    });
    if !stopped {
        probes.attach_syscalls(hooks, cfg)?;
    }
    // The events attached before the delay show nothing from within it, however
    // it ended.
    Ok(crate::clock::monotonic_ns())
}

fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor that we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Reaps the workload; its exit status the way a shell reports it.
pub(super) fn reap(pid: u32) -> Option<i32> {
    let mut status = 0;
    // SAFETY: status is a valid out-parameter.
    let rc = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
    if rc != pid as libc::pid_t {
        return None;
    }
    if libc::WIFEXITED(status) {
        Some(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        Some(128 + libc::WTERMSIG(status))
    } else {
        None
    }
}
