//! Where lines go: stderr by default (as perf trace), or `-o FILE`.

pub mod callchain;
pub mod fault;
pub mod formatter;
pub mod histogram;
pub mod json;
pub mod json_args;
pub mod json_structs;
pub mod json_write;
pub mod line;
pub mod printer;
pub mod show;
pub mod summary;
pub mod task_names;
pub mod timeline;

use std::{
    fs::{self, File},
    io::{self, BufWriter, Write},
    path::Path,
};

/// What the session does with the records it drains from the ring: prints them
/// ([`printer::Printer`]) or records them (`record::Recorder`).
pub trait Consumer {
    /// Takes one record; true when the output failed.
    fn take(&mut self, item: &[u8], out: &mut Sink) -> bool;
    /// Shows what is still blocked (but `except`'s) as unfinished; true when the output
    /// failed.
    fn flush_pending(&mut self, except: Option<u32>, out: &mut Sink) -> bool;
    /// `--max-events` were taken: nothing more is.
    fn max_reached(&self) -> bool;
    /// Between batches of records: catch up with what runs beside the ring.
    fn keep_up(&mut self) {}
    /// Tracing is over at `now_ns` (the programs' clock; `None` in a replay): what the
    /// timeline still holds is written and it is closed. Why it failed, if it did.
    fn end(&mut self, _now_ns: Option<u64>) -> Option<String> {
        None
    }
    /// Records about memory maps the kernel could not keep.
    fn locations_lost(&self) -> u64 {
        0
    }
}

/// Opens `-o FILE`. As perf does, an existing non-empty regular file is first renamed
/// FILE.old; anything else that is there already (a terminal, a FIFO, `/dev/stderr` and
/// other links) is written in place, appended to, and a directory is refused.
pub fn open_output(path: &Path) -> io::Result<File> {
    let target = fs::metadata(path).ok();
    if target.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    let plain_file = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file());
    if !plain_file && target.is_some() {
        return fs::OpenOptions::new().append(true).open(path);
    }
    if plain_file && target.is_some_and(|m| m.len() > 0) {
        let mut old = path.as_os_str().to_owned();
        old.push(".old");
        fs::rename(path, &old)?;
    }
    File::create(path)
}

/// The trace's destination, buffered. The first write error is kept: from then on
/// every write fails at once, and the session asks [`Sink::failure`] to stop.
pub struct Sink {
    w: BufWriter<Box<dyn Write>>,
    failed: Option<io::Error>,
}

impl Sink {
    fn new(w: Box<dyn Write>) -> Self {
        Self {
            w: BufWriter::with_capacity(64 << 10, w),
            failed: None,
        }
    }

    /// The write error that ended the output, if one did.
    pub fn failure(&self) -> Option<&io::Error> {
        self.failed.as_ref()
    }

    fn keep<T>(&mut self, r: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &r
            && self.failed.is_none()
        {
            self.failed = Some(match e.raw_os_error() {
                Some(code) => io::Error::from_raw_os_error(code),
                None => io::Error::new(e.kind(), e.to_string()),
            });
        }
        r
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.failed.is_some() {
            return Err(io::Error::other("the trace's output has failed"));
        }
        let r = self.w.write(buf);
        self.keep(r)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.failed.is_some() {
            return Err(io::Error::other("the trace's output has failed"));
        }
        let r = self.w.flush();
        self.keep(r)
    }
}

/// `-o`'s name for standard output.
pub const STDOUT: &str = "-";

pub fn sink(path: Option<&Path>) -> io::Result<Sink> {
    let w: Box<dyn Write> = match path {
        // `-o -`: the trace to stdout (`rtrace --json -o - -- cmd | jq`).
        Some(p) if p == STDOUT => Box::new(io::stdout()),
        Some(p) => Box::new(open_output(p)?),
        None => Box::new(io::stderr()),
    };
    Ok(Sink::new(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_write_error_is_kept() {
        let mut s = Sink::new(Box::new(fs::File::create("/dev/full").unwrap()));
        s.write_all(b"fits in the buffer\n").unwrap();
        assert!(s.failure().is_none());
        assert!(s.flush().is_err());
        assert_eq!(s.failure().unwrap().raw_os_error(), Some(libc::ENOSPC));
        assert!(s.write_all(b"more").is_err());
        assert_eq!(s.failure().unwrap().raw_os_error(), Some(libc::ENOSPC));
    }

    #[test]
    fn only_plain_files_are_rotated() {
        let dir = std::env::temp_dir().join(format!("rtrace-out2-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let e = open_output(&dir).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EISDIR));
        assert!(dir.is_dir() && !dir.with_extension("old").exists());
        // A link to a file (as /dev/stderr is to a redirected stderr): appended to, the
        // link left where it is.
        let file = dir.join("log");
        fs::write(&file, "kept\n").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        open_output(&link).unwrap().write_all(b"added\n").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&file).unwrap(), "kept\nadded\n");
        assert!(!dir.join("link.old").exists());
        // A device: written in place.
        open_output(Path::new("/dev/null"))
            .unwrap()
            .write_all(b"x")
            .unwrap();
        assert!(Path::new("/dev/null").exists() && !Path::new("/dev/null.old").exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn existing_output_becomes_old() {
        let dir = std::env::temp_dir().join(format!("rtrace-out-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let f = dir.join("trace.txt");
        fs::write(&f, "before\n").unwrap();
        let mut w = open_output(&f).unwrap();
        w.write_all(b"after\n").unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("trace.txt.old")).unwrap(),
            "before\n"
        );
        assert_eq!(fs::read_to_string(&f).unwrap(), "after\n");
        fs::remove_dir_all(&dir).unwrap();
    }
}
