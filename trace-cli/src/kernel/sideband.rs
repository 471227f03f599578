//! The kernel's memory-map records, as perf records them beside its samples: "dummy"
//! software perf events that count nothing but write a record for each mmap (code
//! and data), exec, fork and exit, timed on CLOCK_MONOTONIC like the eBPF programs'
//! records. rtrace reads their rings itself (aya reads only BPF maps): no wake-ups,
//! read when a record must be named.
//!
//! For a command or `-p`, as perf does, one event per target thread and CPU, inherited
//! by the threads and children it makes: only the targets write records, so another
//! busy process cannot fill the ring. The events of one CPU share one ring (the first
//! one's; the others' output is sent there), so the rings' memory does not grow with
//! the targets, only the descriptors do (threads × CPUs). For `-a`, and when a target
//! has too many threads for that, one event per CPU for every task, with a larger ring.

use std::{
    io,
    mem::{size_of, zeroed},
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    ptr::NonNull,
    sync::atomic::{Ordering, fence},
};

use aya_obj::generated::{
    PERF_EVENT_IOC_SET_OUTPUT, PERF_FLAG_FD_CLOEXEC, perf_event_attr, perf_event_mmap_page,
    perf_event_sample_format::{PERF_SAMPLE_TID, PERF_SAMPLE_TIME},
    perf_sw_ids::PERF_COUNT_SW_DUMMY,
    perf_type_id::PERF_TYPE_SOFTWARE,
};

use crate::{
    pids::targets::threads_of,
    symbols::records::{self, MapEvent},
};

/// Data pages per CPU (a power of two) when only the targets write: 128 KiB, some
/// thousand records between reads.
const TARGET_DATA_PAGES: usize = 32;

/// Data pages per CPU when every task writes (`-a`): 512 KiB, as a busy machine's
/// processes start and map libraries faster than the targets alone.
const EVERY_TASK_DATA_PAGES: usize = 128;

/// Events opened at most for the targets (threads × CPUs, one descriptor each); past
/// it, the events of every task are read instead and other processes' records dropped.
pub const TARGET_EVENTS_MAX: usize = 4096;

/// Whose records are written.
#[derive(Clone, Copy, Debug)]
pub enum Scope<'a> {
    /// Every task (`-a`).
    EveryTask,
    /// These processes, their threads and their descendants.
    Processes(&'a [u32]),
}

/// One CPU's ring: a metadata page, then the data pages; the event that owns it, and
/// the events whose output goes there too.
struct CpuRing {
    _fd: OwnedFd,
    _more: Vec<OwnedFd>,
    base: NonNull<u8>,
    len: usize,
    data_size: u64,
}

impl Drop for CpuRing {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `open_cpu` mapped, once.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// The dummy event of task `tid` (with its children and threads), or of every task
/// (`tid` -1), on `cpu`.
fn open_event(tid: i32, cpu: u32) -> io::Result<OwnedFd> {
    // SAFETY: perf_event_attr is plain integers; all-zero is its default.
    let mut attr: perf_event_attr = unsafe { zeroed() };
    attr.size = size_of::<perf_event_attr>() as u32;
    attr.type_ = PERF_TYPE_SOFTWARE as u32;
    attr.config = PERF_COUNT_SW_DUMMY as u64;
    attr.sample_type = PERF_SAMPLE_TID as u64 | PERF_SAMPLE_TIME as u64;
    attr.set_sample_id_all(1);
    attr.set_mmap(1);
    attr.set_mmap2(1);
    attr.set_mmap_data(1);
    attr.set_comm(1);
    attr.set_comm_exec(1);
    attr.set_task(1);
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
    // A target's new threads and children get the event too (a thread's mmap is
    // written to its own events only).
    attr.set_inherit(u64::from(tid != -1));
    // Wake no one: the ring is read when rtrace needs it, never polled.
    attr.set_watermark(1);
    attr.__bindgen_anon_2.wakeup_watermark = u32::MAX;
    // SAFETY: a valid attr of the size it states; `tid` or every task (-1) on `cpu`;
    // no group.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const perf_event_attr,
            tid as libc::c_int,
            cpu as libc::c_int,
            -1,
            PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the syscall returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(ret as i32) })
}

/// Maps the ring of event `fd`, `pages` data pages.
fn map_ring(fd: OwnedFd, page: usize, pages: usize) -> io::Result<CpuRing> {
    let len = (pages + 1) * page;
    // SAFETY: mapping the event's ring, shared and writable (rtrace moves data_tail).
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(CpuRing {
        _fd: fd,
        _more: Vec::new(),
        base: NonNull::new(base.cast()).ok_or_else(io::Error::last_os_error)?,
        len,
        data_size: (pages * page) as u64,
    })
}

/// Sends the records of event `fd` to the ring of `ring`'s event (same CPU).
fn share_ring(ring: &mut CpuRing, fd: OwnedFd) -> io::Result<()> {
    // SAFETY: both are perf event fds that live on; the ioctl takes the target's fd.
    let ret = unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            PERF_EVENT_IOC_SET_OUTPUT as _,
            ring._fd.as_raw_fd(),
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    ring._more.push(fd);
    Ok(())
}

impl CpuRing {
    fn meta(&self) -> *mut perf_event_mmap_page {
        self.base.as_ptr().cast()
    }

    /// Appends every record waiting to `out`, and frees their room.
    fn drain(&self, page: usize, buf: &mut Vec<u8>, out: &mut Vec<MapEvent>) {
        let meta = self.meta();
        // SAFETY: the metadata page stays mapped while self lives; the kernel writes
        // data_head, rtrace data_tail, each read and written whole.
        let head = unsafe { std::ptr::read_volatile(&raw const (*meta).data_head) };
        fence(Ordering::Acquire);
        let mut tail = unsafe { std::ptr::read_volatile(&raw const (*meta).data_tail) };
        // SAFETY: the data pages follow the metadata page.
        let data = unsafe {
            std::slice::from_raw_parts(self.base.as_ptr().add(page), self.data_size as usize)
        };
        while tail + 8 <= head {
            let at = |i: u64| data[((tail + i) % self.data_size) as usize];
            let size = u16::from_ne_bytes([at(6), at(7)]) as u64;
            if size < 8 || tail + size > head {
                break;
            }
            buf.clear();
            buf.extend((0..size).map(at));
            if let Some(ev) = records::parse(buf) {
                out.push(ev);
            }
            tail += size;
        }
        fence(Ordering::Release);
        // SAFETY: as above; the kernel may now reuse what was read.
        unsafe { std::ptr::write_volatile(&raw mut (*meta).data_tail, tail) };
    }
}

/// The memory-map records of every CPU.
pub struct Sideband {
    rings: Vec<CpuRing>,
    page: usize,
    buf: Vec<u8>,
    /// Every task writes, not only the targets: their records are to be picked out.
    every_task: bool,
}

impl Sideband {
    /// Opens the events of `scope` on `cpus`; from now on every mmap, exec, fork and
    /// exit of its tasks is kept.
    pub fn open(cpus: &[u32], scope: Scope<'_>) -> io::Result<Self> {
        // SAFETY: no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let tids: Option<Vec<u32>> = match scope {
            Scope::EveryTask => None,
            Scope::Processes(pids) => {
                let tids: Vec<u32> = pids
                    .iter()
                    .flat_map(|&p| threads_of(p).unwrap_or_else(|_| vec![p]))
                    .collect();
                (tids.len() * cpus.len() <= TARGET_EVENTS_MAX).then_some(tids)
            }
        };
        let rings = match &tids {
            Some(tids) => cpus
                .iter()
                .filter_map(|&cpu| Self::open_targets(tids, cpu, page).transpose())
                .collect::<io::Result<_>>()?,
            None => cpus
                .iter()
                .map(|&cpu| map_ring(open_event(-1, cpu)?, page, EVERY_TASK_DATA_PAGES))
                .collect::<io::Result<_>>()?,
        };
        Ok(Self {
            rings,
            page,
            buf: Vec::with_capacity(4096),
            every_task: tids.is_none(),
        })
    }

    /// The events of `tids` on `cpu`, all written to one ring; none when every one of
    /// those threads has exited already.
    fn open_targets(tids: &[u32], cpu: u32, page: usize) -> io::Result<Option<CpuRing>> {
        let mut ring: Option<CpuRing> = None;
        for &tid in tids {
            let fd = match open_event(tid as i32, cpu) {
                Ok(fd) => fd,
                // Gone since it was listed: it writes nothing more.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => continue,
                Err(e) => return Err(e),
            };
            match &mut ring {
                Some(r) => share_ring(r, fd)?,
                None => ring = Some(map_ring(fd, page, TARGET_DATA_PAGES)?),
            }
        }
        Ok(ring)
    }

    /// Every task's records are read, not only the targets' (`-a`, or too many
    /// target threads): the caller keeps those it needs.
    pub fn every_task(&self) -> bool {
        self.every_task
    }

    /// Every record waiting on every CPU, oldest first.
    pub fn drain(&mut self, out: &mut Vec<MapEvent>) {
        for ring in &self.rings {
            ring.drain(self.page, &mut self.buf, out);
        }
        out.sort_by_key(MapEvent::time);
    }
}
