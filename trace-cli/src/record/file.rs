//! The file `rtrace record` writes and `rtrace -i` reads: a first line naming the
//! format, a header (JSON: the recording kernel, the syscall formats, the events'
//! formats, the targets' fds and directories at the start), then the ring buffer's
//! records as the programs wrote them, each after its length (u32, little-endian).
//! The records are native-endian: a file is read on a machine of the same byte order.

use std::{
    collections::BTreeMap,
    io::{self, BufRead, Read, Write},
};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::decode::fd_table::ProcSeed;

pub const MAGIC: &str = "rtrace-record 1";

#[derive(Debug, Error)]
pub enum RecordError {
    #[error("{path}: not an rtrace record file (it does not start with \"{MAGIC}\")")]
    NotRecord { path: String },
    #[error("{path}: {why}")]
    Bad { path: String, why: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

/// A process's fds and directory when recording began.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SavedSeed {
    pub pid: u32,
    pub cwd: Option<Vec<u8>>,
    pub before_ns: u64,
    pub after_ns: u64,
    pub fds: Vec<(i32, Vec<u8>)>,
    pub same_view: bool,
}

impl SavedSeed {
    /// `inherited`: rtrace's own fds, which a seed without fds of its own stands for.
    pub fn from_seed(s: &ProcSeed, inherited: &[(i32, Box<[u8]>)]) -> Self {
        let fds = s.fds.as_deref().unwrap_or(inherited);
        Self {
            pid: s.pid,
            cwd: s.path.as_deref().map(<[u8]>::to_vec),
            before_ns: s.before_ns,
            after_ns: s.after_ns,
            fds: fds.iter().map(|(fd, p)| (*fd, p.to_vec())).collect(),
            same_view: s.same_view,
        }
    }

    pub fn to_seed(&self) -> ProcSeed {
        ProcSeed {
            pid: self.pid,
            path: self.cwd.clone().map(Vec::into_boxed_slice),
            before_ns: self.before_ns,
            after_ns: self.after_ns,
            fds: Some(
                self.fds
                    .iter()
                    .map(|(fd, p)| (*fd, p.clone().into_boxed_slice()))
                    .collect(),
            ),
            same_view: self.same_view,
        }
    }
}

/// A tracepoint event that was recorded, in the order of its index.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SavedEvent {
    pub category: String,
    pub name: String,
    pub format: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Header {
    /// `uname -r` and machine of the recording kernel.
    pub kernel: String,
    pub machine: String,
    /// The syscalls that were traced (`None`: all).
    pub selection: Option<Vec<u32>>,
    /// `events/syscalls/sys_enter_<name>/format` texts, by name.
    pub formats: BTreeMap<String, String>,
    pub events: Vec<SavedEvent>,
    pub seeds: Vec<SavedSeed>,
    /// Whether the events' pids were the recorder's own (its pid namespace was the
    /// initial one).
    pub names_pids: bool,
}

pub fn write_header(out: &mut impl Write, header: &Header) -> io::Result<()> {
    writeln!(out, "{MAGIC}")?;
    let json = serde_json::to_vec(header).map_err(io::Error::other)?;
    out.write_all(&(json.len() as u32).to_le_bytes())?;
    out.write_all(&json)
}

pub fn write_item(out: &mut impl Write, item: &[u8]) -> io::Result<()> {
    out.write_all(&(item.len() as u32).to_le_bytes())?;
    out.write_all(item)
}

/// Reads the first line and the header.
pub fn read_header(input: &mut impl BufRead, path: &str) -> Result<Header, RecordError> {
    let io_err = |source| RecordError::Io {
        path: path.to_string(),
        source,
    };
    let mut first = Vec::new();
    input
        .by_ref()
        .take(64)
        .read_until(b'\n', &mut first)
        .map_err(io_err)?;
    if first.strip_suffix(b"\n") != Some(MAGIC.as_bytes()) {
        return Err(RecordError::NotRecord {
            path: path.to_string(),
        });
    }
    let len = read_len(input)
        .map_err(io_err)?
        .ok_or_else(|| RecordError::Bad {
            path: path.to_string(),
            why: "it ends before its header".into(),
        })?;
    let mut json = vec![0; len];
    input.read_exact(&mut json).map_err(io_err)?;
    serde_json::from_slice(&json).map_err(|e| RecordError::Bad {
        path: path.to_string(),
        why: format!("its header is not readable: {e}"),
    })
}

fn read_len(input: &mut impl Read) -> io::Result<Option<usize>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => Ok(Some(u32::from_le_bytes(len) as usize)),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

/// The next record into `buf`; false at the end. A record cut short (the recorder was
/// killed while writing) ends the file.
pub fn read_item(input: &mut impl Read, buf: &mut Vec<u8>) -> io::Result<bool> {
    let Some(len) = read_len(input)? else {
        return Ok(false);
    };
    buf.resize(len, 0);
    match input.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_reads_back_as_written() {
        let header = Header {
            kernel: "6.18.0".into(),
            machine: "x86_64".into(),
            selection: Some(vec![0, 257]),
            formats: [("openat".to_string(), "format…".to_string())].into(),
            events: vec![SavedEvent {
                category: "sched".into(),
                name: "sched_process_exit".into(),
                format: "ID: 1".into(),
            }],
            seeds: vec![SavedSeed {
                pid: 7,
                cwd: Some(b"/tmp".to_vec()),
                before_ns: 1,
                after_ns: 2,
                fds: vec![(0, b"/dev/null".to_vec())],
                same_view: true,
            }],
            names_pids: true,
        };
        let mut bytes = Vec::new();
        write_header(&mut bytes, &header).unwrap();
        write_item(&mut bytes, b"one").unwrap();
        write_item(&mut bytes, b"second").unwrap();
        // Cut in the middle of a third: the file ends after the second.
        bytes.extend_from_slice(&9u32.to_le_bytes());
        bytes.extend_from_slice(b"thi");
        let mut input = &bytes[..];
        assert_eq!(read_header(&mut input, "f").unwrap(), header);
        let mut buf = Vec::new();
        assert!(read_item(&mut input, &mut buf).unwrap());
        assert_eq!(buf, b"one");
        assert!(read_item(&mut input, &mut buf).unwrap());
        assert_eq!(buf, b"second");
        assert!(!read_item(&mut input, &mut buf).unwrap());
    }

    #[test]
    fn another_file_is_refused() {
        let mut input = &b"hello\n"[..];
        assert_eq!(
            read_header(&mut input, "x.txt").unwrap_err().to_string(),
            "x.txt: not an rtrace record file (it does not start with \"rtrace-record 1\")"
        );
    }
}
