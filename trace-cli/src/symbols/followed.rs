//! Which processes' memory-map records are kept when the kernel writes every task's
//! (too many target threads for events of their own): the targets and the processes
//! they start, followed through the fork records. Pure.

use rustc_hash::FxHashSet;

use super::records::MapEvent;

#[derive(Debug, Default)]
pub struct Followed {
    pids: FxHashSet<u32>,
}

impl Followed {
    pub fn new(pids: impl IntoIterator<Item = u32>) -> Self {
        Self {
            pids: pids.into_iter().collect(),
        }
    }

    /// Whether `ev` (fed in time order) is about a followed process.
    pub fn keep(&mut self, ev: &MapEvent) -> bool {
        match ev {
            MapEvent::Fork { parent, child, .. } => {
                let ours = self.pids.contains(parent);
                if ours {
                    self.pids.insert(*child);
                }
                ours
            }
            MapEvent::Mapped { pid, .. } | MapEvent::Exec { pid, .. } => self.pids.contains(pid),
            // Its number may be given to another process: forget it.
            MapEvent::Exit { pid, .. } => self.pids.remove(pid),
            MapEvent::Lost(_) => true,
        }
    }

    pub fn len(&self) -> usize {
        self.pids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::spaces::Mapping;

    fn mapped(pid: u32) -> MapEvent {
        MapEvent::Mapped {
            pid,
            mapping: Mapping {
                start: 0x1000,
                end: 0x2000,
                pgoff: 0,
                name: "/bin/a".into(),
                since: 1,
                file: None,
                exec: true,
            },
        }
    }

    #[test]
    fn the_targets_and_their_descendants_are_kept_others_dropped() {
        let mut f = Followed::new([10]);
        assert!(f.keep(&mapped(10)));
        assert!(!f.keep(&mapped(11)), "another process");
        let fork = |parent, child| MapEvent::Fork {
            parent,
            child,
            time: 2,
        };
        assert!(f.keep(&fork(10, 20)));
        assert!(f.keep(&fork(20, 30)), "a grandchild");
        assert!(!f.keep(&fork(11, 40)));
        assert!(f.keep(&MapEvent::Exec { pid: 30, time: 3 }));
        assert!(!f.keep(&mapped(40)));
        assert!(f.keep(&MapEvent::Exit { pid: 20, time: 4 }));
        assert!(!f.keep(&mapped(20)), "its number, reused");
        assert!(f.keep(&MapEvent::Lost(3)));
        assert_eq!(f.len(), 2);
    }
}
