//! The reader's place in the scheduler.
//!
//! The programs never wait for the reader: once the ring is full, records are lost.
//! When every core is busy (the traced program's threads, a build beside it) the
//! scheduler gives the reader its share like any other thread's, which is too little
//! to keep up with a program that makes millions of calls, and the ring overflows.
//! So the reader's thread is raised `RAISE` nice levels for the event loop. It runs
//! when there are records to read (and on its 100 ms timer), so what it takes is the
//! trace's own cost, paid now instead of as lost records. The command was forked before, at the
//! level rtrace was started with, and nothing rtrace starts later inherits it (the
//! level is the thread's, and it is put back before the final read). A level set on
//! one thread is right here because the event loop's runtime is single-threaded: the
//! loop never moves to a thread that was not raised. A runtime with worker threads
//! would have to raise each of them.
//!
//! An rtrace that was itself niced (`nice -n 10 rtrace …`) is left where it was put,
//! and so is one not allowed to raise itself (no CAP_SYS_NICE in a container).

use std::io;

/// How many nice levels the reader is raised by: with the weights of the kernel's
/// fair scheduler, about nine times the share of a thread at the level below.
const RAISE: i32 = 10;

/// The calling thread's nice level, raised for as long as it lives.
pub(super) struct Raised {
    was: i32,
}

/// Why the reader's level was left alone, for `-v`.
#[derive(Debug)]
pub(super) enum Kept {
    /// rtrace runs at a level someone chose.
    Chosen(i32),
    /// The kernel refused.
    Refused(io::Error),
}

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kept::Chosen(n) => write!(f, "rtrace runs at nice {n}, as it was started"),
            Kept::Refused(e) => write!(f, "raising it was refused: {e}"),
        }
    }
}

/// Raises the calling thread (the event loop's) unless rtrace was started niced.
pub(super) fn raise() -> Result<Raised, Kept> {
    let was = current().map_err(Kept::Refused)?;
    if was != 0 {
        return Err(Kept::Chosen(was));
    }
    set(was - RAISE).map_err(Kept::Refused)?;
    Ok(Raised { was })
}

impl Drop for Raised {
    fn drop(&mut self) {
        let _ = set(self.was);
    }
}

/// This thread's nice level (getpriority's -1 is a level too: errno tells).
fn current() -> io::Result<i32> {
    // SAFETY: errno is this thread's; getpriority has no other preconditions.
    unsafe {
        *libc::__errno_location() = 0;
        let n = libc::getpriority(libc::PRIO_PROCESS, thread_id());
        if n == -1 && *libc::__errno_location() != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n)
    }
}

fn set(level: i32) -> io::Result<()> {
    // SAFETY: no preconditions; on Linux PRIO_PROCESS with a thread id is that thread.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, thread_id(), level) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn thread_id() -> libc::id_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as libc::id_t }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raised_thread_is_put_back_and_a_niced_one_is_left_alone() {
        // A thread of its own: the level is per thread, and the test runner's others
        // must not see it change.
        std::thread::spawn(|| {
            let start = current().unwrap();
            match raise() {
                Ok(raised) => {
                    assert_eq!(current().unwrap(), start - RAISE);
                    drop(raised);
                    assert_eq!(current().unwrap(), start);
                }
                // Not root, or started niced: nothing may have moved.
                Err(_) => assert_eq!(current().unwrap(), start),
            }
            // A level someone chose: not 0, and one this thread may go to (down).
            let chosen = if start >= 5 { start.min(18) + 1 } else { 5 };
            set(chosen).unwrap();
            assert!(matches!(raise(), Err(Kept::Chosen(n)) if n == chosen));
            assert_eq!(current().unwrap(), chosen);
        })
        .join()
        .unwrap();
    }
}
