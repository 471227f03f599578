//! A BPF program on a tracepoint with a cookie (`bpf_get_attach_cookie` in the program):
//! a perf event on the tracepoint and a BPF link from the program to it, carrying the
//! cookie (Linux 5.15). aya 0.14 attaches tracepoints without one; this is the same
//! pair of calls with aya's own kernel bindings, the cookie set.

use std::{
    io,
    mem::{size_of, zeroed},
    os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd},
};

use aya_obj::generated::{
    PERF_FLAG_FD_CLOEXEC, bpf_attach_type::BPF_PERF_EVENT, bpf_cmd::BPF_LINK_CREATE,
    perf_event_attr, perf_event_sample_format::PERF_SAMPLE_RAW, perf_type_id::PERF_TYPE_TRACEPOINT,
};

use super::sys_bpf;

/// The perf event and the link; dropping them detaches the program.
pub struct CookieLink {
    link: OwnedFd,
    event: OwnedFd,
}

impl CookieLink {
    /// The link's fd and the event's, in that order: closing the link takes the
    /// program off the event; the event's last close releases it.
    pub fn into_fds(self) -> [OwnedFd; 2] {
        [self.link, self.event]
    }
}

fn fd_of(ret: libc::c_long) -> io::Result<OwnedFd> {
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the syscall returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(ret as i32) })
}

/// Attaches `prog` to the tracepoint with id `tracepoint_id` (its tracefs `id` file),
/// `cookie` what the program's `bpf_get_attach_cookie` returns.
pub fn attach(prog: BorrowedFd<'_>, tracepoint_id: u64, cookie: u64) -> io::Result<CookieLink> {
    // SAFETY: perf_event_attr is plain integers; all-zero is its default.
    let mut attr: perf_event_attr = unsafe { zeroed() };
    attr.size = size_of::<perf_event_attr>() as u32;
    attr.type_ = PERF_TYPE_TRACEPOINT as u32;
    attr.config = tracepoint_id;
    attr.sample_type = PERF_SAMPLE_RAW as u64;
    attr.__bindgen_anon_2.wakeup_events = 1;
    // Every task (-1) on CPU 0: a BPF program on a tracepoint runs on every CPU.
    // SAFETY: a valid attr of the size it states; no group fd.
    let event = fd_of(unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const perf_event_attr,
            -1,
            0,
            -1,
            PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
        )
    })?;
    let mut battr = sys_bpf::attr();
    // Writing union fields is safe; the zeroed rest is what the kernel expects.
    battr.link_create.__bindgen_anon_1.prog_fd = prog.as_raw_fd() as u32;
    battr.link_create.__bindgen_anon_2.target_fd = event.as_raw_fd() as u32;
    battr.link_create.attach_type = BPF_PERF_EVENT as u32;
    battr.link_create.__bindgen_anon_3.perf_event.bpf_cookie = cookie;
    let link = sys_bpf::new_fd(BPF_LINK_CREATE, &mut battr)?;
    Ok(CookieLink { link, event })
}
