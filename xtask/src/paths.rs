//! Where things are: the workspace and the rtrace binaries cargo builds in it. Every
//! task takes these from here, so no task has to import another for a path.

use std::path::{Path, PathBuf};

/// The workspace's top directory (xtask's parent).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

/// The debug build of rtrace (`cargo build -p trace-cli`), what the tests run.
pub fn debug_rtrace(root: &Path) -> PathBuf {
    root.join("target/debug/rtrace")
}

/// The release build of rtrace (`cargo build --release -p trace-cli`), what the bench,
/// the soak, the fidelity tool and `cargo xtask trace` run.
pub fn release_rtrace(root: &Path) -> PathBuf {
    root.join("target/release/rtrace")
}
