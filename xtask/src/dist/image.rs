//! The container image: `FROM scratch` and the static binary at `/usr/bin/rtrace` as its
//! entry point, imported into Docker (started when none answers) without a registry or
//! a Dockerfile, tagged `rtrace:<version>` and saved with `docker save`.

use std::{
    fs,
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Result, bail};

use super::VERSION;
use crate::{
    container::engine::{Docker, docker},
    run::{capture, run_step},
};

pub fn tag() -> String {
    format!("rtrace:{VERSION}")
}

/// The archive's path: `rtrace-<version>-x86_64-image.tar`.
pub fn file_name() -> String {
    format!("rtrace-{VERSION}-x86_64-image.tar")
}

pub fn build(bin: &Path, stage: &Path, out: &Path) -> Result<PathBuf> {
    let _docker = Docker::ensure(stage)?;
    let root = stage.join("image-root");
    let _ = fs::remove_dir_all(&root);
    // /tmp for what a traced command may want; /proc, /sys and /dev are the runtime's.
    for d in ["usr/bin", "tmp"] {
        fs::create_dir_all(root.join(d))?;
    }
    fs::set_permissions(root.join("tmp"), fs::Permissions::from_mode(0o1777))?;
    fs::copy(bin, root.join("usr/bin/rtrace"))?;
    let layer = stage.join("image-root.tar");
    run_step(
        "pack the image's file system",
        Command::new("tar")
            .args(["--owner=0", "--group=0", "--numeric-owner", "-C"])
            .arg(&root)
            .arg("-cf")
            .arg(&layer)
            .arg("."),
    )?;
    let id = capture(
        "docker import",
        docker()
            .args(["import", "--change", r#"ENTRYPOINT ["/usr/bin/rtrace"]"#])
            .arg(&layer)
            .arg(tag()),
    )?;
    if !id.trim().starts_with("sha256:") {
        bail!("docker import printed no image id: {id}");
    }
    let archive = out.join(file_name());
    run_step(
        "docker save",
        docker().arg("save").arg("-o").arg(&archive).arg(tag()),
    )?;
    Ok(archive)
}
