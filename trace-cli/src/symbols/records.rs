//! The kernel's memory-map records (perf's side-band records: `PERF_RECORD_MMAP2`,
//! `COMM` with its exec flag, `FORK`, `EXIT`, `LOST`), each followed by the task's ids
//! and its time (`sample_id_all` with TID and TIME), decoded from their bytes. Pure.

use super::spaces::{FileId, Mapping};

const RECORD_LOST: u32 = 2;
const RECORD_COMM: u32 = 3;
const RECORD_EXIT: u32 = 4;
const RECORD_FORK: u32 = 7;
const RECORD_MMAP2: u32 = 10;
/// `COMM` misc bit: the name changed because the task exec'd.
const MISC_COMM_EXEC: u16 = 1 << 13;

/// What one record says about a process's address space.
#[derive(Debug, PartialEq, Eq)]
pub enum MapEvent {
    Mapped { pid: u32, mapping: Mapping },
    Exec { pid: u32, time: u64 },
    Fork { parent: u32, child: u32, time: u64 },
    Exit { pid: u32, time: u64 },
    Lost(u64),
}

impl MapEvent {
    pub fn time(&self) -> u64 {
        match self {
            MapEvent::Mapped { mapping, .. } => mapping.since,
            MapEvent::Exec { time, .. }
            | MapEvent::Fork { time, .. }
            | MapEvent::Exit { time, .. } => *time,
            MapEvent::Lost(_) => 0,
        }
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// One whole record (header included); `None` for the kinds not asked for or cut short.
pub fn parse(b: &[u8]) -> Option<MapEvent> {
    let kind = u32_at(b, 0)?;
    let misc = u16_at(b, 4)?;
    // The time closes the sample id that follows every record but LOST's.
    let time = || u64_at(b, b.len().checked_sub(8)?);
    match kind {
        RECORD_MMAP2 => {
            let name = b.get(72..b.len().checked_sub(16)?)?;
            let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
            let start = u64_at(b, 16)?;
            Some(MapEvent::Mapped {
                pid: u32_at(b, 8)?,
                mapping: Mapping {
                    start,
                    end: start.checked_add(u64_at(b, 24)?)?,
                    pgoff: u64_at(b, 32)?,
                    name: String::from_utf8_lossy(&name[..end]).into(),
                    since: time()?,
                    file: Some(FileId {
                        dev: libc::makedev(u32_at(b, 40)?, u32_at(b, 44)?),
                        ino: u64_at(b, 48)?,
                    })
                    .filter(|f| f.ino != 0),
                    exec: u32_at(b, 64)? & libc::PROT_EXEC as u32 != 0,
                },
            })
        }
        RECORD_COMM if misc & MISC_COMM_EXEC != 0 => Some(MapEvent::Exec {
            pid: u32_at(b, 8)?,
            time: time()?,
        }),
        RECORD_FORK => {
            let (pid, ppid, tid) = (u32_at(b, 8)?, u32_at(b, 12)?, u32_at(b, 16)?);
            // A new thread shares its process's memory: only a new process matters.
            (pid == tid && pid != ppid).then_some(MapEvent::Fork {
                parent: ppid,
                child: pid,
                time: u64_at(b, 24)?,
            })
        }
        RECORD_EXIT => {
            let (pid, tid) = (u32_at(b, 8)?, u32_at(b, 16)?);
            (pid == tid).then_some(MapEvent::Exit {
                pid,
                time: u64_at(b, 24)?,
            })
        }
        RECORD_LOST => Some(MapEvent::Lost(u64_at(b, 16)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u32, misc: u16, body: &[u8], sample_id: (u32, u32, u64)) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&kind.to_ne_bytes());
        b.extend_from_slice(&misc.to_ne_bytes());
        b.extend_from_slice(&0u16.to_ne_bytes());
        b.extend_from_slice(body);
        b.extend_from_slice(&sample_id.0.to_ne_bytes());
        b.extend_from_slice(&sample_id.1.to_ne_bytes());
        b.extend_from_slice(&sample_id.2.to_ne_bytes());
        let size = b.len() as u16;
        b[6..8].copy_from_slice(&size.to_ne_bytes());
        b
    }

    #[test]
    fn mmap2_gives_the_mapping_and_its_time() {
        let mut body = Vec::new();
        for v in [42u32, 43] {
            body.extend_from_slice(&v.to_ne_bytes());
        }
        for v in [0x7f00_0000_0000u64, 0x3000, 0x1000] {
            body.extend_from_slice(&v.to_ne_bytes());
        }
        body.extend_from_slice(&8u32.to_ne_bytes()); // maj
        body.extend_from_slice(&1u32.to_ne_bytes()); // min
        body.extend_from_slice(&1837u64.to_ne_bytes()); // ino
        body.extend_from_slice(&0u64.to_ne_bytes()); // generation
        body.extend_from_slice(&5u32.to_ne_bytes()); // prot
        body.extend_from_slice(&2u32.to_ne_bytes()); // flags
        body.extend_from_slice(b"/usr/lib/libc.so.6\0\0\0\0\0\0"); // padded to 8
        let rec = header(RECORD_MMAP2, 2, &body, (42, 43, 123_456));
        assert_eq!(
            parse(&rec),
            Some(MapEvent::Mapped {
                pid: 42,
                mapping: Mapping {
                    start: 0x7f00_0000_0000,
                    end: 0x7f00_0000_3000,
                    pgoff: 0x1000,
                    name: "/usr/lib/libc.so.6".into(),
                    since: 123_456,
                    file: Some(FileId {
                        dev: libc::makedev(8, 1),
                        ino: 1837
                    }),
                    exec: true,
                }
            })
        );
    }

    #[test]
    fn exec_fork_and_exit_of_processes_not_threads() {
        let mut comm = Vec::new();
        comm.extend_from_slice(&9u32.to_ne_bytes());
        comm.extend_from_slice(&9u32.to_ne_bytes());
        comm.extend_from_slice(b"true\0\0\0\0");
        assert_eq!(
            parse(&header(RECORD_COMM, MISC_COMM_EXEC, &comm, (9, 9, 77))),
            Some(MapEvent::Exec { pid: 9, time: 77 })
        );
        assert_eq!(
            parse(&header(RECORD_COMM, 0, &comm, (9, 9, 77))),
            None,
            "a rename"
        );

        let task = |pid: u32, ppid: u32, tid: u32, time: u64| {
            let mut b = Vec::new();
            for v in [pid, ppid, tid, tid] {
                b.extend_from_slice(&v.to_ne_bytes());
            }
            b.extend_from_slice(&time.to_ne_bytes());
            b
        };
        assert_eq!(
            parse(&header(RECORD_FORK, 0, &task(20, 10, 20, 5), (20, 20, 5))),
            Some(MapEvent::Fork {
                parent: 10,
                child: 20,
                time: 5
            })
        );
        assert_eq!(
            parse(&header(RECORD_FORK, 0, &task(10, 10, 21, 5), (10, 21, 5))),
            None
        );
        assert_eq!(
            parse(&header(RECORD_EXIT, 0, &task(20, 10, 20, 8), (20, 20, 8))),
            Some(MapEvent::Exit { pid: 20, time: 8 })
        );
        assert_eq!(
            parse(&header(RECORD_EXIT, 0, &task(10, 10, 21, 8), (10, 21, 8))),
            None
        );
        assert_eq!(parse(&[1, 2, 3]), None);
    }
}
