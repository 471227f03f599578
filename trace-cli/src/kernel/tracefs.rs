//! tracefs: where it is, mounting it when it is not (as root), and the event formats
//! rtrace reads (syscall arguments, sched record offsets).

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use thiserror::Error;

use super::privilege::Caps;
use crate::decode::FormatSource;

const MOUNT_POINT: &str = "/sys/kernel/tracing";
const DEBUGFS_TRACING: &str = "/sys/kernel/debug/tracing";

#[derive(Debug, Error)]
pub enum TracefsError {
    #[error(
        "tracefs is not mounted and mounting it at {MOUNT_POINT} failed: {source} — run: mount -t tracefs nodev {MOUNT_POINT}"
    )]
    Mount {
        #[source]
        source: io::Error,
    },
    #[error(
        "tracefs is not mounted at {MOUNT_POINT}, and mounting it needs CAP_SYS_ADMIN — mount it first (mount -t tracefs nodev {MOUNT_POINT}), or in a container bind the host's (docker run -v {MOUNT_POINT}:{MOUNT_POINT}:ro)"
    )]
    MountNeedsSysAdmin,
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

#[derive(Clone, Debug)]
pub struct Tracefs {
    root: PathBuf,
}

fn has_events(dir: &Path) -> bool {
    dir.join("events").is_dir()
}

impl Tracefs {
    /// Whether the kernel has the event `category:name`.
    pub fn has_event(&self, category: &str, name: &str) -> bool {
        self.root.join(format!("events/{category}/{name}")).is_dir()
    }

    /// The id of the event `category:name` (its `id` file), what a perf event names it by.
    pub fn event_id(&self, category: &str, name: &str) -> Option<u64> {
        self.read(&format!("events/{category}/{name}/id"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Finds tracefs, mounting it at /sys/kernel/tracing if nothing is there yet.
    pub fn find_or_mount() -> Result<Self, TracefsError> {
        for dir in [MOUNT_POINT, DEBUGFS_TRACING] {
            if has_events(Path::new(dir)) {
                return Ok(Self { root: dir.into() });
            }
        }
        nix::mount::mount(
            Some("nodev"),
            MOUNT_POINT,
            Some("tracefs"),
            nix::mount::MsFlags::empty(),
            None::<&str>,
        )
        .map_err(|e| {
            if e == nix::errno::Errno::EPERM && !Caps::current().is_ok_and(|c| c.allow_mount()) {
                TracefsError::MountNeedsSysAdmin
            } else {
                TracefsError::Mount { source: e.into() }
            }
        })?;
        Ok(Self {
            root: MOUNT_POINT.into(),
        })
    }

    fn read(&self, rel: &str) -> Result<String, TracefsError> {
        use std::io::Read;
        let path = self.root.join(rel);
        // tracefs files report a size of 0: read into room for a whole format at once
        // rather than growing from a small probe.
        let mut text = String::with_capacity(8192);
        fs::File::open(&path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .map_err(|source| TracefsError::Read { path, source })?;
        Ok(text)
    }

    /// Every tracepoint event the kernel has, as `(category, name)`.
    pub fn available_events(&self) -> Result<Vec<(String, String)>, TracefsError> {
        Ok(self
            .read("available_events")?
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(c, n)| (c.to_string(), n.to_string()))
            .collect())
    }

    /// The format text of `events/<category>/<name>`.
    pub fn event_format(&self, category: &str, name: &str) -> Option<String> {
        self.read(&format!("events/{category}/{name}/format")).ok()
    }

    /// Byte offset of `field` in the record of `events/<category>/<event>`; `Ok(None)`
    /// when this kernel's record has no such field.
    pub fn field_offset(
        &self,
        category: &str,
        event: &str,
        field: &str,
    ) -> Result<Option<u32>, TracefsError> {
        let rel = format!("events/{category}/{event}/format");
        Ok(crate::tracefs_format::field_offset(
            &self.read(&rel)?,
            field,
        ))
    }
}

impl FormatSource for Tracefs {
    fn sys_enter_format(&mut self, event: &str) -> Option<String> {
        self.read(&format!("events/syscalls/sys_enter_{event}/format"))
            .ok()
    }
}
