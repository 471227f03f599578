//! The tarball: `rtrace-<version>-<arch>-linux-musl/` holding the static binary, the
//! man page, the completions, the README with the pages it links to (`docs/`…) and the
//! licences (ripgrep's layout).

use std::{
    fs,
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::Result;

use super::{Arch, Docs, LICENCES, VERSION};
use crate::run::run_step;

/// `rtrace-0.1.0-x86_64-linux-musl`: the directory inside and the archive's stem.
pub fn stem(arch: &Arch) -> String {
    format!("rtrace-{VERSION}-{}-linux-musl", arch.name)
}

pub fn build(arch: &Arch, bin: &Path, docs: &Docs, stage: &Path, out: &Path) -> Result<PathBuf> {
    let stem = stem(arch);
    let dir = stage.join(&stem);
    let _ = fs::remove_dir_all(&dir);
    for d in ["doc", "complete"] {
        fs::create_dir_all(dir.join(d))?;
    }
    fs::copy(bin, dir.join("rtrace"))?;
    fs::set_permissions(dir.join("rtrace"), fs::Permissions::from_mode(0o755))?;
    fs::copy(docs.man(), dir.join("doc/rtrace.1"))?;
    for f in ["rtrace.bash", "_rtrace", "rtrace.fish"] {
        fs::copy(docs.completion(f), dir.join("complete").join(f))?;
    }
    for (page, bytes) in docs.pages()? {
        let to = dir.join(page);
        fs::create_dir_all(to.parent().expect("a page's path has a directory"))?;
        fs::write(to, bytes)?;
    }
    for (name, text) in LICENCES {
        let file = if name == "MIT" {
            "LICENSE-MIT"
        } else {
            "LICENSE-APACHE"
        };
        fs::write(dir.join(file), text)?;
    }
    let tarball = out.join(format!("{stem}.tar.gz"));
    // Owned by root, in name order: the same tree packs the same way.
    run_step(
        &format!("pack {}", tarball.display()),
        Command::new("tar")
            .args([
                "--owner=0",
                "--group=0",
                "--numeric-owner",
                "--sort=name",
                "-czf",
            ])
            .arg(&tarball)
            .arg("-C")
            .arg(stage)
            .arg(&stem),
    )?;
    Ok(tarball)
}
