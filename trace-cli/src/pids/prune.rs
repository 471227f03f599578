//! The prune sweep: after rtrace's last write to a pid map, drop the keys of tasks that
//! are no longer alive.
//!
//! Why: a task that died between being listed and being written was never seen by the
//! exit program (the map did not hold it yet), so its key would stay for the whole
//! session, and the unrelated task that later gets the same pid would be traced, or
//! hidden. Once the sweep has found a task alive, its exit is the exit program's job.
//!
//! How: a hash map's "next key after K" restarts from the first key when K is not in
//! the map. So the cursor only ever rests on a key just found alive (which we keep); a
//! dead key is deleted and the cursor stays where it was. The exit program can still
//! delete the key under the cursor, restarting the walk from the first key, which
//! costs a second pass over the keys already kept. The walk is therefore bounded to
//! twice `max_entries` steps (and one more to see the end): that sees every key of an
//! undisturbed map and of one disturbed once, and ends regardless (at worst
//! leaving a dead key, which costs one entry; `hit_bound` then says so).

use std::io;

/// The two map operations the walk needs; the real map is `kernel::map_ops::PidMapFd`.
pub trait KeyWalk {
    /// The key after `cursor`, or the first key for `None`; `Ok(None)` at the end.
    fn next_key(&mut self, cursor: Option<u32>) -> io::Result<Option<u32>>;
    fn delete(&mut self, key: u32) -> io::Result<()>;
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PruneStats {
    pub kept: u32,
    pub removed: u32,
    /// The walk used all its steps before reaching the end of the map.
    pub hit_bound: bool,
}

pub fn prune(
    map: &mut impl KeyWalk,
    max_entries: u32,
    mut is_alive: impl FnMut(u32) -> bool,
) -> io::Result<PruneStats> {
    let mut stats = PruneStats::default();
    let mut cursor = None;
    for _ in 0..max_entries.saturating_mul(2) {
        let Some(key) = map.next_key(cursor)? else {
            return Ok(stats);
        };
        if is_alive(key) {
            stats.kept += 1;
            cursor = Some(key);
            continue;
        }
        match map.delete(key) {
            Ok(()) => stats.removed += 1,
            // The exit program removed it first.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => stats.removed += 1,
            Err(e) => return Err(e),
        }
    }
    // Out of steps: the bound was hit only if keys remain past the cursor (a full map
    // of live keys ends exactly here).
    stats.hit_bound = map.next_key(cursor)?.is_some();
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// A map with the kernel hash map's `get_next_key` behaviour: an unknown cursor
    /// restarts at the first key. Hooks simulate the exit program acting between steps.
    type StepHook = Box<dyn FnMut(&mut Vec<u32>, u32)>;

    struct FakeMap {
        keys: Vec<u32>,
        steps: u32,
        between_steps: StepHook,
        delete_error: Option<i32>,
    }

    impl FakeMap {
        fn new(keys: &[u32]) -> Self {
            Self {
                keys: keys.to_vec(),
                steps: 0,
                between_steps: Box::new(|_, _| {}),
                delete_error: None,
            }
        }
    }

    impl KeyWalk for FakeMap {
        fn next_key(&mut self, cursor: Option<u32>) -> io::Result<Option<u32>> {
            self.steps += 1;
            (self.between_steps)(&mut self.keys, self.steps);
            let pos = cursor.and_then(|c| self.keys.iter().position(|&k| k == c));
            Ok(match pos {
                Some(i) => self.keys.get(i + 1).copied(),
                None => self.keys.first().copied(),
            })
        }

        fn delete(&mut self, key: u32) -> io::Result<()> {
            if let Some(errno) = self.delete_error {
                return Err(io::Error::from_raw_os_error(errno));
            }
            match self.keys.iter().position(|&k| k == key) {
                Some(i) => {
                    self.keys.remove(i);
                    Ok(())
                }
                None => Err(io::Error::from_raw_os_error(libc::ENOENT)),
            }
        }
    }

    fn alive_set(keys: &[u32]) -> impl FnMut(u32) -> bool {
        let set: BTreeSet<u32> = keys.iter().copied().collect();
        move |k| set.contains(&k)
    }

    #[test]
    fn all_alive_are_kept() {
        let mut m = FakeMap::new(&[1, 2, 3]);
        let s = prune(&mut m, 16, |_| true).unwrap();
        assert_eq!((s.kept, s.removed, s.hit_bound), (3, 0, false));
        assert_eq!(m.keys, [1, 2, 3]);
    }

    #[test]
    fn all_dead_are_removed() {
        let mut m = FakeMap::new(&[1, 2, 3]);
        let s = prune(&mut m, 16, |_| false).unwrap();
        assert_eq!((s.kept, s.removed), (0, 3));
        assert!(m.keys.is_empty());
    }

    #[test]
    fn mixed_keeps_exactly_the_living() {
        let mut m = FakeMap::new(&[5, 1, 7, 2, 9]);
        prune(&mut m, 16, alive_set(&[1, 2])).unwrap();
        assert_eq!(m.keys, [1, 2]);
    }

    #[test]
    fn empty_map_takes_one_step() {
        let mut m = FakeMap::new(&[]);
        assert_eq!(prune(&mut m, 16, |_| true).unwrap(), PruneStats::default());
        assert_eq!(m.steps, 1);
    }

    #[test]
    fn full_map_is_walked_within_the_bound() {
        let keys: Vec<u32> = (100..164).collect();
        let dead: Vec<u32> = keys.iter().copied().filter(|k| k % 2 == 0).collect();
        let mut m = FakeMap::new(&keys);
        let s = prune(&mut m, 64, |k| !dead.contains(&k)).unwrap();
        assert_eq!(
            m.keys,
            keys.iter()
                .copied()
                .filter(|k| k % 2 == 1)
                .collect::<Vec<_>>()
        );
        assert_eq!(s.kept + s.removed, 64);
        assert!(m.steps <= 65);
    }

    #[test]
    fn a_full_map_of_live_keys_did_not_hit_the_bound() {
        let keys: Vec<u32> = (1..=8).collect();
        let mut m = FakeMap::new(&keys);
        let s = prune(&mut m, 8, |_| true).unwrap();
        assert_eq!((s.kept, s.removed, s.hit_bound), (8, 0, false));
    }

    #[test]
    fn concurrent_exit_between_steps() {
        // The exit program removes key 3 (alive when listed) between steps 2 and 3.
        let mut m = FakeMap::new(&[1, 2, 3, 4]);
        m.between_steps = Box::new(|keys, step| {
            if step == 3 {
                keys.retain(|&k| k != 3);
            }
        });
        let s = prune(&mut m, 16, alive_set(&[1, 3, 4])).unwrap();
        assert_eq!(m.keys, [1, 4]);
        assert!(!s.hit_bound);
    }

    #[test]
    fn cursor_deleted_under_the_walk_restarts_and_still_finishes() {
        // Key 1 (the cursor after step 1) vanishes before step 2: the walk restarts
        // from the first key and must still drop the dead key 3.
        let mut m = FakeMap::new(&[1, 2, 3]);
        m.between_steps = Box::new(|keys, step| {
            if step == 2 {
                keys.retain(|&k| k != 1);
            }
        });
        let s = prune(&mut m, 16, alive_set(&[1, 2])).unwrap();
        assert_eq!(m.keys, [2]);
        assert!(!s.hit_bound);
    }

    #[test]
    fn restarted_again_and_again_stops_at_the_bound() {
        // Every step, the key under the cursor is replaced by a new live one at the end,
        // so the walk restarts for ever; it must end after its bound of steps.
        let mut m = FakeMap::new(&[1, 2, 3, 4]);
        m.between_steps = Box::new(|keys, _| {
            let first = keys.remove(0);
            keys.push(first + 100);
        });
        let s = prune(&mut m, 4, |_| true).unwrap();
        assert!(s.hit_bound);
        assert_eq!(m.steps, 9);
    }

    #[test]
    fn delete_enoent_is_not_an_error() {
        let mut m = FakeMap::new(&[1, 2]);
        m.delete_error = Some(libc::ENOENT);
        // Both deletes "fail" with ENOENT; the keys stay in the fake, so the walk keeps
        // finding them and ends on its bound without an error.
        let s = prune(&mut m, 6, |_| false).unwrap();
        assert!(s.hit_bound);
    }

    #[test]
    fn other_delete_errors_are_returned() {
        let mut m = FakeMap::new(&[1, 2]);
        m.delete_error = Some(libc::EPERM);
        let err = prune(&mut m, 6, |_| false).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EPERM));
    }
}
