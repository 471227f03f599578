//! `rtrace record`: the session's second consumer of the ring's records. Each record
//! goes to the file as it came, after its length (see [`super::file`]); nothing is
//! decoded until the replay.

use crate::output::{Consumer, Sink};

pub struct Recorder {
    written: u64,
    /// `--max-events`: records written at most.
    max: Option<u64>,
}

impl Recorder {
    pub fn new(max: Option<u64>) -> Self {
        Self { written: 0, max }
    }
}

impl Consumer for Recorder {
    fn take(&mut self, item: &[u8], out: &mut Sink) -> bool {
        self.written += 1;
        super::file::write_item(out, item).is_err()
    }

    /// A record keeps every entry as it came: the replay shows them.
    fn flush_pending(&mut self, _except: Option<u32>, _out: &mut Sink) -> bool {
        false
    }

    fn max_reached(&self) -> bool {
        self.max.is_some_and(|max| self.written >= max)
    }
}
