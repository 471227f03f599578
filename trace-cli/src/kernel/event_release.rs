//! Closing tracepoint perf events without waiting for them.
//!
//! The last close of a tracepoint's perf event unregisters the kernel's probe and then
//! waits for its grace periods, under one lock for all such events (`perf_trace_destroy`
//! holds `event_mutex` across `tracepoint_synchronize_unregister`): tens of milliseconds
//! an event, one after the other, and a process's exit waits for the closes of its fds.
//! What makes a program stop is its BPF link, whose close is quick; so rtrace closes
//! the links itself ([`super::cookie_link::CookieLink::detach`]), and the events, which
//! no program runs on any more, are handed to a short-lived process of their own that
//! closes them while rtrace goes on and exits.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Closes `events` in a detached process, once this one has closed its own copies; in
/// this process, waiting, when no process can be made.
pub fn close_in_background(events: Vec<OwnedFd>) {
    if events.is_empty() {
        return;
    }
    let mut keep: Vec<RawFd> = events.iter().map(AsRawFd::as_raw_fd).collect();
    keep.sort_unstable();
    // The closer waits for this pipe's end of file: until then this process may hold
    // the events, and the last close, the slow one, must be the closer's.
    let mut pipe = [0; 2];
    // SAFETY: pipe2 writes two fds into the array it is given.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    let [read_end, write_end] = pipe;
    // SAFETY: the child makes only async-signal-safe calls (fork, setsid, close,
    // close_range, read, _exit) on memory made before the fork, and never returns.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: as above.
        unsafe { closer(&keep, read_end, write_end) }
    }
    drop(events);
    // SAFETY: fds this function made and owns.
    unsafe {
        libc::close(write_end);
        libc::close(read_end);
    }
    if pid > 0 {
        let mut status = 0;
        // The first child only starts the closer, and ends at once.
        // SAFETY: our own child, waited for once.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
}

/// The forked child: leaves the session (a terminal's ^C is not for it) and starts the
/// closer, which keeps nothing but the events and the pipe's read end, waits for the
/// pipe's end of file, closes the events and ends.
unsafe fn closer(keep: &[RawFd], read_end: RawFd, write_end: RawFd) -> ! {
    // SAFETY: async-signal-safe calls on fds this process holds.
    unsafe {
        libc::setsid();
        if libc::fork() != 0 {
            libc::_exit(0);
        }
        libc::close(write_end);
        let mut from: RawFd = 0;
        for &fd in keep {
            close_range(from, fd - 1, read_end);
            from = fd + 1;
        }
        close_range(from, RawFd::MAX, read_end);
        let mut byte = 0u8;
        while libc::read(read_end, (&raw mut byte).cast(), 1) < 0
            && *libc::__errno_location() == libc::EINTR
        {}
        for &fd in keep {
            libc::close(fd);
        }
        libc::_exit(0);
    }
}

/// Closes the fds `first..=last`, but `spare`.
unsafe fn close_range(first: RawFd, last: RawFd, spare: RawFd) {
    let span = |a: RawFd, b: RawFd| {
        if a <= b {
            // SAFETY: close_range on fds of this process; a failure leaves them open,
            // which costs nothing but the fds.
            unsafe { libc::syscall(libc::SYS_close_range, a as u32, b as u32, 0u32) };
        }
    };
    if (first..=last).contains(&spare) {
        span(first, spare - 1);
        span(spare + 1, last);
    } else {
        span(first, last);
    }
}
