//! bpf(2) itself, for the commands rtrace makes without aya: a tracepoint link with a
//! cookie (`cookie_link`), a tracing program's link to its function
//! (`function_hooks`), a test run of the view program (`view`) and the prune walk's
//! own cursor over a pid map (`map_ops`). The one unsafe call is here.

use std::{
    io,
    mem::{size_of, zeroed},
    os::fd::{FromRawFd, OwnedFd},
};

use aya_obj::generated::{bpf_attr, bpf_cmd};

/// An all-zero `union bpf_attr`: what every command expects in the fields it does
/// not use.
pub fn attr() -> bpf_attr {
    // SAFETY: bpf_attr is a union of plain integers; all-zero is its default.
    unsafe { zeroed() }
}

/// Runs `cmd`: its return value (0, or a number the command returns), or the error.
/// The kernel may write into `attr` (a test run's `retval`).
pub fn call(cmd: bpf_cmd, attr: &mut bpf_attr) -> io::Result<libc::c_long> {
    // SAFETY: attr is a whole, initialised bpf_attr of the size passed; the pointers
    // inside it are the caller's, to memory that outlives the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd as libc::c_int,
            attr as *mut bpf_attr,
            size_of::<bpf_attr>() as libc::c_uint,
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Runs a command that makes an fd (a link): the fd, owned.
pub fn new_fd(cmd: bpf_cmd, attr: &mut bpf_attr) -> io::Result<OwnedFd> {
    let fd = call(cmd, attr)?;
    let fd = i32::try_from(fd).map_err(|_| io::Error::other("bpf(2) returned no fd"))?;
    // SAFETY: the command returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
