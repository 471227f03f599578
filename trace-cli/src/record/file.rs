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

use trace_common::{
    augment::{AUG_SLOT_BYTES, AUG_SLOTS},
    record::{EVENT_BYTES, STACK_FRAMES, SYSCALL_RECORD_SIZE},
};

use crate::decode::fd_table::ProcSeed;

pub const MAGIC: &str = "rtrace-record 1";

#[derive(Debug, Error)]
pub enum RecordError {
    #[error("{path}: not an rtrace record file (it does not start with \"{MAGIC}\")")]
    NotRecord { path: String },
    #[error("{path}: {why}")]
    Bad { path: String, why: String },
    /// The file ends inside its header or a record (see [`Reader`]).
    #[error("{path} is cut short after {records} records ({detail})")]
    Cut {
        path: String,
        records: u64,
        detail: String,
    },
    /// A length no record file has: what follows cannot be read.
    #[error(
        "{path} is damaged after {records} records: {what} claims {len} bytes, and rtrace writes at most {max}"
    )]
    Damaged {
        path: String,
        records: u64,
        what: String,
        len: u32,
        max: usize,
    },
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
    // What the reader would refuse is not written.
    if json.len() > MAX_HEADER {
        return Err(io::Error::other(format!(
            "the header is {} bytes, more than the {MAX_HEADER} a reader accepts",
            json.len()
        )));
    }
    out.write_all(&(json.len() as u32).to_le_bytes())?;
    out.write_all(&json)
}

pub fn write_item(out: &mut impl Write, item: &[u8]) -> io::Result<()> {
    out.write_all(&(item.len() as u32).to_le_bytes())?;
    out.write_all(item)
}

/// The largest record the eBPF programs write, as one ring-buffer item: a syscall
/// record with both augmentation slots full (what trace-ebpf's augment.rs assembles at
/// most). A call chain (the record and 2 × STACK_FRAMES frames: 2144 bytes) and a
/// tracepoint event (the record and EVENT_BYTES: 624) are smaller. A longer length
/// cannot come from `rtrace record`: the file is damaged, and the reader refuses it
/// before reading, so that replaying holds at most one such record in memory.
pub const MAX_RECORD: usize = SYSCALL_RECORD_SIZE + AUG_SLOTS * AUG_SLOT_BYTES;
const _: () = assert!(SYSCALL_RECORD_SIZE + 2 * STACK_FRAMES * 8 <= MAX_RECORD);
const _: () = assert!(SYSCALL_RECORD_SIZE + EVENT_BYTES <= MAX_RECORD);

/// The largest header read: it holds every syscall's format text (about 0.5 MiB as
/// JSON on x86_64), the events' formats and, for `-a`, every process's fds and
/// directory at the start (a few MiB on a busy machine); 64 MiB leaves room for far
/// more and still refuses a damaged length before it costs gigabytes.
pub const MAX_HEADER: usize = 64 << 20;

/// Reads a record file from any byte source, counting the records, so that a file cut
/// short or damaged says where. Every length is checked against its maximum before
/// anything is read, and the bytes are read as they come (never allocated ahead of
/// what the file holds), so that memory stays within one header and one record.
///
/// Where a file ends decides what it means: at a record boundary it is a clean end
/// (what a recording stopped by a signal leaves, or one killed between two writes);
/// inside a record or the header it is [`RecordError::Cut`], an error — the records
/// before it are all whole and are shown, but the file is not all there (a recorder
/// killed with SIGKILL mid-write, a copy that did not finish).
pub struct Reader<R> {
    input: R,
    path: String,
    records: u64,
}

impl<R: BufRead> Reader<R> {
    /// `path`: the file's name in messages.
    pub fn new(input: R, path: &str) -> Self {
        Self {
            input,
            path: path.to_string(),
            records: 0,
        }
    }

    /// Whole records read so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    fn io(&self, source: io::Error) -> RecordError {
        RecordError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn cut(&self, detail: String) -> RecordError {
        RecordError::Cut {
            path: self.path.clone(),
            records: self.records,
            detail,
        }
    }

    fn damaged(&self, what: String, len: u32, max: usize) -> RecordError {
        RecordError::Damaged {
            path: self.path.clone(),
            records: self.records,
            what,
            len,
            max,
        }
    }

    /// Reads the first line and the header.
    pub fn header(&mut self) -> Result<Header, RecordError> {
        let mut first = Vec::new();
        (&mut self.input)
            .take(64)
            .read_until(b'\n', &mut first)
            .map_err(|e| self.io(e))?;
        let magic = format!("{MAGIC}\n");
        if first.is_empty() {
            return Err(self.cut("it is empty".into()));
        }
        if first.len() < magic.len() && magic.as_bytes().starts_with(&first) {
            return Err(self.cut("inside its first line".into()));
        }
        if first != magic.as_bytes() {
            return Err(RecordError::NotRecord {
                path: self.path.clone(),
            });
        }
        let len = match self.read_len()? {
            Len::End => return Err(self.cut("before its header".into())),
            Len::Part(n) => {
                return Err(self.cut(format!("inside its header's length ({n} of 4 bytes)")));
            }
            Len::Whole(len) => len,
        };
        if len as usize > MAX_HEADER {
            return Err(self.damaged("its header".into(), len, MAX_HEADER));
        }
        let mut json = Vec::new();
        let got = self.read_body(len, &mut json)?;
        if got < len as usize {
            return Err(self.cut(format!("inside its header: {got} of its {len} bytes")));
        }
        serde_json::from_slice(&json).map_err(|e| RecordError::Bad {
            path: self.path.clone(),
            why: format!("its header is not readable: {e}"),
        })
    }

    /// The next record into `buf`; false at the end of the file.
    pub fn next(&mut self, buf: &mut Vec<u8>) -> Result<bool, RecordError> {
        let n = self.records + 1;
        let len = match self.read_len()? {
            Len::End => return Ok(false),
            Len::Part(got) => {
                return Err(self.cut(format!("inside record {n}'s length ({got} of 4 bytes)")));
            }
            Len::Whole(len) => len,
        };
        if len as usize > MAX_RECORD {
            return Err(self.damaged(format!("record {n}"), len, MAX_RECORD));
        }
        let got = self.read_body(len, buf)?;
        if got < len as usize {
            return Err(self.cut(format!("inside record {n}: {got} of its {len} bytes")));
        }
        self.records = n;
        Ok(true)
    }

    /// A length, or how much of one there was before the end.
    fn read_len(&mut self) -> Result<Len, RecordError> {
        let mut len = [0u8; 4];
        let mut got = 0;
        while got < len.len() {
            match self.input.read(&mut len[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        }
        Ok(match got {
            0 => Len::End,
            4 => Len::Whole(u32::from_le_bytes(len)),
            n => Len::Part(n),
        })
    }

    /// Up to `len` bytes into `buf` (replacing what it held), as they come: a length
    /// the file does not back costs no more than what is there. The bytes read.
    fn read_body(&mut self, len: u32, buf: &mut Vec<u8>) -> Result<usize, RecordError> {
        buf.clear();
        (&mut self.input)
            .take(u64::from(len))
            .read_to_end(buf)
            .map_err(|e| self.io(e))
    }
}

enum Len {
    /// No byte left: the end of the file.
    End,
    /// Fewer than 4 bytes before the end.
    Part(usize),
    Whole(u32),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
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
        }
    }

    /// A header and two records, "one" and "second".
    fn two_records() -> Vec<u8> {
        let mut bytes = Vec::new();
        write_header(&mut bytes, &header()).unwrap();
        write_item(&mut bytes, b"one").unwrap();
        write_item(&mut bytes, b"second").unwrap();
        bytes
    }

    /// Reads `bytes` to the end: the records, or the error's message.
    fn read_all(bytes: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let mut reader = Reader::new(bytes, "f");
        reader.header().map_err(|e| e.to_string())?;
        let mut records = Vec::new();
        let mut buf = Vec::new();
        while reader.next(&mut buf).map_err(|e| e.to_string())? {
            records.push(buf.clone());
        }
        assert_eq!(reader.records(), records.len() as u64);
        Ok(records)
    }

    #[test]
    fn a_file_reads_back_as_written() {
        let bytes = two_records();
        let mut reader = Reader::new(&bytes[..], "f");
        assert_eq!(reader.header().unwrap(), header());
        assert_eq!(
            read_all(&bytes).unwrap(),
            [b"one".to_vec(), b"second".to_vec()]
        );
    }

    #[test]
    fn an_end_at_a_record_boundary_is_clean() {
        let mut bytes = Vec::new();
        write_header(&mut bytes, &header()).unwrap();
        assert_eq!(read_all(&bytes).unwrap(), Vec::<Vec<u8>>::new());
        write_item(&mut bytes, b"one").unwrap();
        assert_eq!(read_all(&bytes).unwrap(), [b"one".to_vec()]);
    }

    #[test]
    fn a_cut_record_says_how_many_came_before() {
        let mut bytes = two_records();
        bytes.extend_from_slice(&9u32.to_le_bytes());
        bytes.extend_from_slice(b"thi");
        assert_eq!(
            read_all(&bytes).unwrap_err(),
            "f is cut short after 2 records (inside record 3: 3 of its 9 bytes)"
        );
        // Cut inside the length itself.
        let mut bytes = two_records();
        bytes.extend_from_slice(&[9, 0]);
        assert_eq!(
            read_all(&bytes).unwrap_err(),
            "f is cut short after 2 records (inside record 3's length (2 of 4 bytes))"
        );
    }

    #[test]
    fn a_cut_header_is_an_error() {
        let bytes = two_records();
        let header_end = MAGIC.len() + 1 + 4 + 10;
        assert_eq!(
            read_all(&bytes[..header_end]).unwrap_err(),
            format!(
                "f is cut short after 0 records (inside its header: 10 of its {} bytes)",
                bytes.len() - (MAGIC.len() + 1 + 4) - 2 * 4 - 3 - 6
            )
        );
        assert_eq!(
            read_all(&bytes[..MAGIC.len() + 1]).unwrap_err(),
            "f is cut short after 0 records (before its header)"
        );
        assert_eq!(
            read_all(&bytes[..MAGIC.len() + 3]).unwrap_err(),
            "f is cut short after 0 records (inside its header's length (2 of 4 bytes))"
        );
        assert_eq!(
            read_all(&bytes[..5]).unwrap_err(),
            "f is cut short after 0 records (inside its first line)"
        );
        assert_eq!(
            read_all(b"").unwrap_err(),
            "f is cut short after 0 records (it is empty)"
        );
    }

    #[test]
    fn a_huge_record_length_is_refused_before_reading() {
        let mut bytes = two_records();
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        bytes.extend_from_slice(b"a few bytes");
        assert_eq!(
            read_all(&bytes).unwrap_err(),
            format!(
                "f is damaged after 2 records: record 3 claims 4294967295 bytes, and rtrace writes at most {MAX_RECORD}"
            )
        );
        // The longest record there can be is read.
        let mut bytes = two_records();
        write_item(&mut bytes, &[7; MAX_RECORD]).unwrap();
        assert_eq!(read_all(&bytes).unwrap().len(), 3);
    }

    #[test]
    fn a_huge_header_length_is_refused_before_reading() {
        let mut bytes = format!("{MAGIC}\n").into_bytes();
        bytes.extend_from_slice(&(1u32 << 30).to_le_bytes());
        bytes.extend_from_slice(b"{}");
        assert_eq!(
            read_all(&bytes).unwrap_err(),
            format!(
                "f is damaged after 0 records: its header claims 1073741824 bytes, and rtrace writes at most {MAX_HEADER}"
            )
        );
        // Under the bound but past the end: cut, having read only what is there.
        let mut bytes = format!("{MAGIC}\n").into_bytes();
        bytes.extend_from_slice(&(MAX_HEADER as u32).to_le_bytes());
        bytes.extend_from_slice(b"{}");
        assert_eq!(
            read_all(&bytes).unwrap_err(),
            format!(
                "f is cut short after 0 records (inside its header: 2 of its {MAX_HEADER} bytes)"
            )
        );
    }

    #[test]
    fn a_header_past_the_bound_is_not_written() {
        let mut big = header();
        big.formats.insert("huge".into(), "x".repeat(MAX_HEADER));
        let mut bytes = Vec::new();
        let e = write_header(&mut bytes, &big).unwrap_err();
        assert!(e.to_string().starts_with("the header is "), "{e}");
    }

    #[test]
    fn all_ff_bytes_are_refused() {
        // As a whole file: not a record.
        let bytes = [0xff; 4096];
        assert_eq!(
            read_all(&bytes).unwrap_err(),
            "f: not an rtrace record file (it does not start with \"rtrace-record 1\")"
        );
        // After a good header: the first length is u32::MAX.
        let mut bytes = two_records();
        bytes.extend_from_slice(&[0xff; 4096]);
        assert!(
            read_all(&bytes)
                .unwrap_err()
                .starts_with("f is damaged after 2 records: record 3 claims 4294967295 bytes")
        );
    }

    #[test]
    fn another_file_is_refused() {
        assert_eq!(
            Reader::new(&b"hello\n"[..], "x.txt")
                .header()
                .unwrap_err()
                .to_string(),
            "x.txt: not an rtrace record file (it does not start with \"rtrace-record 1\")"
        );
    }
}
