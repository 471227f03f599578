//! What each process had mapped, and when: built from the kernel's memory-map records
//! (mmap, exec, fork, exit, each with its time) and from `/proc/PID/maps` for the
//! processes that existed at the start, so that an address can be named as it was at
//! the moment of a fault or a call, after the process changed its mappings, exec'd
//! or exited. Pure: the session feeds it; nothing here reads the kernel.

use std::{collections::BTreeMap, sync::Arc};

use rustc_hash::FxHashMap;

/// One mapping: `[start, end)` of the process's memory, backed by `name` from file
/// offset `pgoff` (perf's names for the others: `//anon`, `[stack]`, `[heap]`, `[vdso]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub name: Arc<str>,
    /// When it was mapped (CLOCK_MONOTONIC ns; 0 for what was there at the start).
    pub since: u64,
    /// The file mapped, as the kernel knew it then (none for memory with no file).
    pub file: Option<FileId>,
    /// Mapped executable: only code has symbols worth looking up. A data mapping (a
    /// file written through a shared mapping, say) is named `dso@offset`, as perf does.
    pub exec: bool,
}

/// A file by its device and inode: what a mapping holds even once its path names
/// another file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

/// Mappings whose addresses perf shows as they are, not as offsets into a file: memory
/// with no file behind it, by the names the kernel gives it.
const NO_FILE: [&str; 6] = [
    "//anon",
    "/dev/zero",
    "/anon_hugepage",
    "/SYSV",
    "[stack",
    "[heap]",
];

impl Mapping {
    /// Where `addr` falls in what backs the mapping: the file offset, or the address
    /// itself for memory with no file.
    pub fn offset_of(&self, addr: u64) -> u64 {
        if !NO_FILE.iter().any(|p| self.name.starts_with(p)) {
            addr - self.start + self.pgoff
        } else {
            addr
        }
    }

    /// Backed by a file that could be read (not anonymous memory, not `[vdso]`).
    pub fn has_file(&self) -> bool {
        !NO_FILE.iter().any(|p| self.name.starts_with(p)) && !self.name.starts_with('[')
    }
}

/// One program a process ran: its mappings from its exec (or from the start) on.
#[derive(Debug, Default)]
struct Image {
    from: u64,
    maps: Vec<Mapping>,
}

#[derive(Debug, Default)]
struct Space {
    /// Oldest first.
    images: Vec<Image>,
    /// When the process ended (its last thread exited).
    ended: Option<u64>,
}

/// How long a process's old mappings are kept after it exec'd or exited: records of
/// what it did before are read from the ring that long after, at most.
pub const KEEP_NS: u64 = 10_000_000_000;

/// How often, in the records' time, what is old is looked for: the look goes through
/// every mapping kept.
const SWEEP_NS: u64 = 1_000_000_000;

/// Every process's mappings over time, by pid (rtrace's pid namespace).
#[derive(Debug, Default)]
pub struct AddressSpaces {
    spaces: FxHashMap<u32, Space>,
    /// The newest time fed, for forgetting what is old.
    newest: u64,
    /// The `before` of the last sweep.
    swept_to: u64,
}

impl AddressSpaces {
    /// What `/proc/PID/maps` showed at the start.
    pub fn seed(&mut self, pid: u32, maps: Vec<Mapping>) {
        let space = self.spaces.entry(pid).or_default();
        space.images = vec![Image { from: 0, maps }];
    }

    pub fn mapped(&mut self, pid: u32, m: Mapping) {
        self.newest = self.newest.max(m.since);
        let space = self.spaces.entry(pid).or_default();
        if space.images.is_empty() {
            space.images.push(Image::default());
        }
        if let Some(image) = space.images.iter_mut().rev().find(|i| i.from <= m.since) {
            image.maps.push(m);
        }
    }

    /// The process exec'd a new program at `time`: its mappings start again.
    pub fn exec(&mut self, pid: u32, time: u64) {
        self.newest = self.newest.max(time);
        let space = self.spaces.entry(pid).or_default();
        space.images.push(Image {
            from: time,
            maps: Vec::new(),
        });
    }

    /// A new process `child` forked from `parent` at `time`: it starts with what the
    /// parent had mapped then.
    pub fn fork(&mut self, parent: u32, child: u32, time: u64) {
        self.newest = self.newest.max(time);
        let maps = self
            .spaces
            .get(&parent)
            .and_then(|s| s.images.iter().rev().find(|i| i.from <= time))
            .map(|i| i.maps.iter().filter(|m| m.since <= time).cloned().collect())
            .unwrap_or_default();
        self.spaces.insert(
            child,
            Space {
                images: vec![Image { from: time, maps }],
                ended: None,
            },
        );
    }

    /// The process ended at `time`; its mappings are forgotten later (see [`Self::forget_old`]).
    pub fn exit(&mut self, pid: u32, time: u64) {
        self.newest = self.newest.max(time);
        if let Some(s) = self.spaces.get_mut(&pid) {
            s.ended = Some(time);
        }
    }

    /// The mapping that held `addr` in process `pid` at `time`: the newest mapped then.
    pub fn find(&self, pid: u32, time: u64, addr: u64) -> Option<&Mapping> {
        let image = self
            .spaces
            .get(&pid)?
            .images
            .iter()
            .rev()
            .find(|i| i.from <= time)?;
        image
            .maps
            .iter()
            .rev()
            .find(|m| m.since <= time && m.start <= addr && addr < m.end)
    }

    /// Forgets the programs replaced, the processes ended and the mappings mapped over
    /// more than [`KEEP_NS`] before the newest time fed (at most once every [`SWEEP_NS`]).
    pub fn forget_old(&mut self) {
        let Some(before) = self.newest.checked_sub(KEEP_NS) else {
            return;
        };
        if before < self.swept_to.saturating_add(SWEEP_NS) && self.swept_to != 0 {
            return;
        }
        self.swept_to = before.max(1);
        self.spaces
            .retain(|_, s| s.ended.is_none_or(|t| t >= before));
        for s in self.spaces.values_mut() {
            // Keep the newest image begun before `before` and all later ones.
            let old = s.images.iter().filter(|i| i.from < before).count();
            if old > 1 {
                s.images.drain(..old - 1);
            }
            for image in &mut s.images {
                drop_mapped_over(&mut image.maps, before);
            }
        }
    }

    /// Mappings kept, all processes together.
    pub fn mappings(&self) -> usize {
        self.spaces
            .values()
            .flat_map(|s| &s.images)
            .map(|i| i.maps.len())
            .sum()
    }

    pub fn processes(&self) -> usize {
        self.spaces.len()
    }
}

/// Drops the mappings that later ones, all mapped before `before`, cover entirely: a
/// time from `before` on finds those later ones first. A process that maps the same
/// place again and again (a linker's output, an allocator's arenas) keeps one.
fn drop_mapped_over(maps: &mut Vec<Mapping>, before: u64) {
    let mut over = Cover::default();
    let mut keep = vec![true; maps.len()];
    // Newest first: `over` is what the mappings after the one looked at cover.
    for (i, m) in maps.iter().enumerate().rev() {
        if over.covers(m.start, m.end) {
            keep[i] = false;
        } else if m.since < before {
            over.add(m.start, m.end);
        }
    }
    let mut keep = keep.into_iter();
    maps.retain(|_| keep.next().unwrap_or(true));
}

/// A union of address ranges `[start, end)`, kept merged: start → end.
#[derive(Debug, Default)]
struct Cover(BTreeMap<u64, u64>);

impl Cover {
    fn covers(&self, start: u64, end: u64) -> bool {
        self.0
            .range(..=start)
            .next_back()
            .is_some_and(|(_, &e)| e >= end)
    }

    fn add(&mut self, mut start: u64, mut end: u64) {
        // Every range that overlaps or touches [start, end) joins it.
        let joined: Vec<(u64, u64)> = self
            .0
            .range(..=end)
            .rev()
            .take_while(|(_, e)| **e >= start)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in joined {
            self.0.remove(&s);
            start = start.min(s);
            end = end.max(e);
        }
        self.0.insert(start, end);
    }
}

/// One line of `/proc/PID/maps` (`start-end perms offset dev inode [path]`).
pub fn parse_maps_line(line: &str) -> Option<Mapping> {
    let mut fields = line.split_ascii_whitespace();
    let (start, end) = fields.next()?.split_once('-')?;
    let perms = fields.next()?;
    let pgoff = fields.next()?;
    let (major, minor) = fields.next()?.split_once(':')?;
    let inode: u64 = fields.next()?.parse().ok()?;
    // The path may hold spaces: all that follows the inode's column.
    let rest: Vec<&str> = fields.collect();
    let name = if rest.is_empty() {
        "//anon".to_string()
    } else {
        rest.join(" ")
    };
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        pgoff: u64::from_str_radix(pgoff, 16).ok()?,
        name: name.into(),
        since: 0,
        file: (inode != 0).then_some(FileId {
            dev: libc::makedev(
                u32::from_str_radix(major, 16).ok()?,
                u32::from_str_radix(minor, 16).ok()?,
            ),
            ino: inode,
        }),
        exec: perms.as_bytes().get(2) == Some(&b'x'),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: u64, end: u64, pgoff: u64, name: &str, since: u64) -> Mapping {
        Mapping {
            start,
            end,
            pgoff,
            name: name.into(),
            since,
            file: None,
            exec: true,
        }
    }

    #[test]
    fn an_address_is_named_by_the_mapping_it_had_at_that_time() {
        let mut s = AddressSpaces::default();
        s.mapped(7, m(0x1000, 0x3000, 0x2000, "/bin/a", 10));
        assert_eq!(s.find(7, 5, 0x1800), None, "not mapped yet");
        let hit = s.find(7, 20, 0x1800).unwrap();
        assert_eq!(hit.offset_of(0x1800), 0x2800);
        // Mapped over later: older times still see the first.
        s.mapped(7, m(0x1000, 0x2000, 0, "/bin/b", 30));
        assert_eq!(&*s.find(7, 20, 0x1800).unwrap().name, "/bin/a");
        assert_eq!(&*s.find(7, 40, 0x1800).unwrap().name, "/bin/b");
        assert_eq!(&*s.find(7, 40, 0x2800).unwrap().name, "/bin/a");
    }

    #[test]
    fn exec_starts_over_and_fork_copies_what_the_parent_had_then() {
        let mut s = AddressSpaces::default();
        s.seed(1, vec![m(0x1000, 0x2000, 0, "/bin/sh", 0)]);
        s.fork(1, 2, 50);
        s.mapped(1, m(0x5000, 0x6000, 0, "/lib/late.so", 60));
        assert_eq!(&*s.find(2, 55, 0x1000).unwrap().name, "/bin/sh");
        assert_eq!(
            s.find(2, 70, 0x5000),
            None,
            "mapped by the parent after the fork"
        );
        s.exec(2, 80);
        s.mapped(2, m(0x1000, 0x2000, 0, "/bin/true", 81));
        assert_eq!(&*s.find(2, 79, 0x1000).unwrap().name, "/bin/sh");
        assert_eq!(&*s.find(2, 90, 0x1000).unwrap().name, "/bin/true");
        assert_eq!(s.find(2, 90, 0x1800 + 0x10000), None);
    }

    #[test]
    fn anonymous_memory_keeps_its_address_and_old_processes_are_forgotten() {
        let anon = m(0x7000, 0x8000, 0, "//anon", 0);
        assert_eq!(anon.offset_of(0x7010), 0x7010);
        assert!(!anon.has_file());
        let vdso = m(0x7fff_0000, 0x7fff_2000, 0, "[vdso]", 0);
        assert!(!vdso.has_file());
        assert_eq!(
            vdso.offset_of(0x7fff_0020),
            0x20,
            "perf gives the vdso's offsets"
        );
        assert!(!m(0, 1, 0, "[stack]", 0).has_file());
        assert!(m(0, 1, 0, "/usr/lib/libc.so.6", 0).has_file());

        let mut s = AddressSpaces::default();
        s.mapped(3, m(0x1000, 0x2000, 0, "/bin/a", 1));
        s.exit(3, 2);
        s.forget_old();
        assert!(
            s.find(3, 2, 0x1000).is_some(),
            "kept a while after its exit"
        );
        s.mapped(4, m(0x1000, 0x2000, 0, "/bin/a", 2 + KEEP_NS + 1));
        s.forget_old();
        assert!(s.find(3, 2, 0x1000).is_none());
        assert_eq!(s.processes(), 1);
    }

    #[test]
    fn a_place_mapped_again_and_again_keeps_one_mapping() {
        let mut s = AddressSpaces::default();
        s.mapped(5, m(0x1000, 0x2000, 0, "/lib/libc.so", 1));
        for i in 0..1000 {
            s.mapped(5, m(0x10000, 0x20000, 0, "/tmp/out", 10 + i));
            // Half of it mapped again over the whole, then the rest.
            s.mapped(5, m(0x10000, 0x18000, 0, "/tmp/part", 10 + i));
            s.mapped(5, m(0x18000, 0x20000, 0x8000, "/tmp/part", 10 + i));
        }
        assert_eq!(s.mappings(), 3001);
        s.mapped(6, m(0, 1, 0, "/bin/x", 2000 + KEEP_NS));
        s.forget_old();
        assert_eq!(
            s.mappings(),
            1 + 2 + 1,
            "libc, the newest two parts, /bin/x"
        );
        assert_eq!(&*s.find(5, 2000, 0x1800).unwrap().name, "/lib/libc.so");
        assert_eq!(&*s.find(5, 2000, 0x10800).unwrap().name, "/tmp/part");
        assert_eq!(s.find(5, 2000, 0x20000), None);

        let mut c = Cover::default();
        c.add(10, 20);
        c.add(30, 40);
        assert!(!c.covers(15, 35));
        c.add(20, 30);
        assert!(c.covers(10, 40));
        assert!(!c.covers(5, 15));
        assert_eq!(c.0.len(), 1);
    }

    #[test]
    fn proc_maps_lines() {
        let l = "7f4392a8e000-7f4392a91000 r-xp 00002000 fe:01 1837   /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
        let got = parse_maps_line(l).unwrap();
        assert_eq!(
            (got.start, got.end, got.pgoff),
            (0x7f4392a8e000, 0x7f4392a91000, 0x2000)
        );
        assert_eq!(&*got.name, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
        assert_eq!(
            got.file,
            Some(FileId {
                dev: libc::makedev(0xfe, 1),
                ino: 1837
            })
        );
        assert!(got.exec);
        let anon = parse_maps_line("7f4392a91000-7f4392a93000 rw-p 00000000 00:00 0 ").unwrap();
        assert_eq!(&*anon.name, "//anon");
        assert_eq!(anon.file, None);
        assert!(!anon.exec, "rw-p is data");
        let spaced = parse_maps_line("1000-2000 r--p 00000000 fe:01 9 /tmp/a b (deleted)").unwrap();
        assert_eq!(&*spaced.name, "/tmp/a b (deleted)");
        assert_eq!(parse_maps_line("garbage"), None);
    }
}
