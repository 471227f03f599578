//! Which files the symbolizer keeps parsed: at most [`FILES_MAX`], each known by what it
//! is (device, inode, size, modification time), not by its path. A path that names
//! another file, or the same file changed, is parsed again, but not more often than
//! every [`REPARSE_NS`]: a file being written changes at every write, and reading it
//! again for each of its addresses is what kept one descriptor per read before. Pure:
//! `resolve` stats the files and tells the symbolizer what to drop.

use std::sync::Arc;

use rustc_hash::FxHashMap;

/// Files kept parsed at once (each holds a descriptor and a mapping of the file).
pub const FILES_MAX: usize = 64;

/// A changed file is parsed again at most this often (CLOCK_MONOTONIC ns).
pub const REPARSE_NS: u64 = 1_000_000_000;

/// What a file is, as `stat` tells it: another key means other contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileKey {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
}

#[derive(Debug)]
struct Held {
    key: FileKey,
    /// When it was (last) parsed.
    parsed_at: u64,
    /// When an address was last looked up in it, for dropping the least used.
    used_at: u64,
}

/// The files held, by the path the symbolizer knows each by.
#[derive(Debug, Default)]
pub struct HeldFiles {
    held: FxHashMap<Arc<str>, Held>,
}

/// What to do before looking an address up in `path`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Admit {
    /// Paths whose parsed data must be dropped first (the path itself when its file
    /// changed, the least used one when too many are held).
    pub drop: Vec<Arc<str>>,
}

impl HeldFiles {
    /// `path`, whose file is now `key`, is about to be looked in at `now`.
    pub fn admit(&mut self, path: &Arc<str>, key: FileKey, now: u64) -> Admit {
        let mut admit = Admit::default();
        if let Some(h) = self.held.get_mut(path) {
            h.used_at = now;
            if h.key != key && now.saturating_sub(h.parsed_at) >= REPARSE_NS {
                // Changed, and not re-read lately: parse it again.
                h.key = key;
                h.parsed_at = now;
                admit.drop.push(path.clone());
            }
            return admit;
        }
        if self.held.len() >= FILES_MAX
            && let Some(oldest) = self
                .held
                .iter()
                .min_by_key(|(_, h)| h.used_at)
                .map(|(p, _)| p.clone())
        {
            self.held.remove(&oldest);
            admit.drop.push(oldest);
        }
        self.held.insert(
            path.clone(),
            Held {
                key,
                parsed_at: now,
                used_at: now,
            },
        );
        admit
    }

    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ino: u64, mtime_ns: i128) -> FileKey {
        FileKey {
            dev: 1,
            ino,
            size: 4096,
            mtime_ns,
        }
    }

    #[test]
    fn a_file_is_parsed_once_while_it_does_not_change() {
        let mut h = HeldFiles::default();
        let p: Arc<str> = "/bin/a".into();
        assert_eq!(h.admit(&p, key(1, 5), 0), Admit::default());
        assert_eq!(h.admit(&p, key(1, 5), 10 * REPARSE_NS), Admit::default());
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn a_file_being_written_is_parsed_again_at_most_every_reparse_interval() {
        let mut h = HeldFiles::default();
        let p: Arc<str> = "/tmp/out".into();
        h.admit(&p, key(1, 0), 0);
        let mut reparsed = 0;
        // Written every millisecond for three intervals.
        for t in 1..3000u64 {
            let now = t * 1_000_000;
            reparsed += h.admit(&p, key(1, i128::from(t)), now).drop.len();
        }
        assert_eq!(reparsed, 2);
        // Replaced by another file of the same name: read again (once the interval passed).
        assert_eq!(
            h.admit(&p, key(2, 0), 10 * REPARSE_NS).drop,
            vec![p.clone()]
        );
    }

    #[test]
    fn the_least_used_file_is_dropped_past_the_bound() {
        let mut h = HeldFiles::default();
        let paths: Vec<Arc<str>> = (0..FILES_MAX + 1)
            .map(|i| format!("/lib/{i}.so").into())
            .collect();
        for (i, p) in paths[..FILES_MAX].iter().enumerate() {
            h.admit(p, key(i as u64, 0), i as u64);
        }
        // The first is used again: the second is now the least used.
        h.admit(&paths[0], key(0, 0), 1000);
        let admit = h.admit(&paths[FILES_MAX], key(99, 0), 1001);
        assert_eq!(admit.drop, vec![paths[1].clone()]);
        assert_eq!(h.len(), FILES_MAX);
    }
}
