//! `-G/--cgroup NAME`: the cgroup v2 whose tasks (and those of the cgroups below it) are
//! traced. The programs compare the current task's ancestor at the cgroup's depth with
//! the cgroup's id, which on cgroup v2 is its directory's inode number.

use std::{os::unix::fs::MetadataExt, path::PathBuf};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CgroupError {
    #[error("-G/--cgroup needs cgroup v2, and no cgroup2 file system is mounted")]
    NoCgroup2,
    #[error("no cgroup '{name}' under {mount} (-G/--cgroup takes a path below the cgroup v2 root)")]
    NotFound { name: String, mount: String },
}

/// A cgroup's id and depth below the root (the root itself: 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CgroupTarget {
    pub id: u64,
    pub level: u32,
}

/// Where cgroup2 is mounted (the first such mount in this mount namespace).
fn cgroup2_mount() -> Option<PathBuf> {
    let infos = procfs::process::Process::myself().ok()?.mountinfo().ok()?;
    infos
        .into_iter()
        .find(|m| m.fs_type == "cgroup2")
        .map(|m| m.mount_point)
}

/// The depth of `name` (a path below the root: `a/b` is 2).
pub fn level_of(name: &str) -> u32 {
    name.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .count() as u32
}

pub fn resolve(name: &str) -> Result<CgroupTarget, CgroupError> {
    let mount = cgroup2_mount().ok_or(CgroupError::NoCgroup2)?;
    let path = mount.join(name.trim_start_matches('/'));
    let not_found = || CgroupError::NotFound {
        name: name.to_string(),
        mount: mount.display().to_string(),
    };
    let meta = std::fs::metadata(&path).map_err(|_| not_found())?;
    if !meta.is_dir() || name.split('/').any(|c| c == "..") {
        return Err(not_found());
    }
    Ok(CgroupTarget {
        id: meta.ino(),
        level: level_of(name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_the_path_below_the_root() {
        assert_eq!(level_of(""), 0);
        assert_eq!(level_of("/"), 0);
        assert_eq!(level_of("system.slice"), 1);
        assert_eq!(level_of("/system.slice/docker-1.scope/"), 2);
    }
}
