//! The .deb: Debian's own `dpkg-deb` packs a tree laid out as Debian policy places a
//! command's files. The binary is static, so the package depends on nothing.

use std::{fs, os::unix::fs::PermissionsExt as _, path::Path, process::Command};

use anyhow::{Context as _, Result};

use super::{Arch, Docs, LICENCES, VERSION};
use crate::run::run_step;

/// Where each file goes in the installed system.
const BASH: &str = "usr/share/bash-completion/completions/rtrace";
const ZSH: &str = "usr/share/zsh/vendor-completions/_rtrace";
const FISH: &str = "usr/share/fish/vendor_completions.d/rtrace.fish";
const MAN: &str = "usr/share/man/man1/rtrace.1.gz";
const DOC: &str = "usr/share/doc/rtrace";

/// The package's file name, as Debian names them: `rtrace_0.1.0-1_amd64.deb`.
pub fn file_name(arch: &Arch) -> String {
    format!("rtrace_{VERSION}-1_{}.deb", arch.deb)
}

/// `DEBIAN/control`. No `Depends:`: a static binary needs no library, and the kernel it
/// needs is no package.
fn control(arch: &Arch, installed_kib: u64) -> String {
    format!(
        "Package: rtrace\n\
         Version: {VERSION}-1\n\
         Architecture: {deb}\n\
         Maintainer: The rtrace developers <rtrace@invalid>\n\
         Installed-Size: {installed_kib}\n\
         Section: devel\n\
         Priority: optional\n\
         Description: system call tracer with perf trace's options and output, on eBPF\n \
         rtrace traces a command, processes or the whole system, and prints each\n \
         system call with its decoded arguments, its result and its duration in the\n \
         lines perf trace prints, or perf trace's summary table. It records in\n \
         the kernel with eBPF (Linux 5.12 or newer, with BTF) and needs root or\n \
         CAP_BPF and CAP_PERFMON. This is the static build: it needs no library.\n",
        deb = arch.deb
    )
}

fn put(root: &Path, rel: &str, bytes: &[u8], mode: u32) -> Result<u64> {
    let to = root.join(rel);
    fs::create_dir_all(to.parent().context("a path in the package has a parent")?)?;
    fs::write(&to, bytes).with_context(|| format!("writing {}", to.display()))?;
    fs::set_permissions(&to, fs::Permissions::from_mode(mode))?;
    Ok(bytes.len() as u64)
}

/// Lays the package out under `stage` and packs it into `out`; the package's path.
pub fn build(
    arch: &Arch,
    bin: &Path,
    docs: &Docs,
    stage: &Path,
    out: &Path,
) -> Result<std::path::PathBuf> {
    let root = stage.join(format!("deb-{}", arch.deb));
    let _ = fs::remove_dir_all(&root);
    let mut bytes = put(&root, "usr/bin/rtrace", &fs::read(bin)?, 0o755)?;
    let man = docs.man_gz()?;
    bytes += put(&root, MAN, &man, 0o644)?;
    for (rel, file) in [
        (BASH, "rtrace.bash"),
        (ZSH, "_rtrace"),
        (FISH, "rtrace.fish"),
    ] {
        bytes += put(&root, rel, &fs::read(docs.completion(file))?, 0o644)?;
    }
    let mut copyright = String::from(
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\
         Upstream-Name: rtrace\n\n\
         Files: *\n\
         Copyright: the rtrace developers\n\
         License: MIT or Apache-2.0\n",
    );
    for (name, text) in LICENCES {
        copyright.push_str(&format!("\nLicense: {name}\n"));
        for l in text.lines() {
            copyright.push_str(if l.trim().is_empty() { " .\n" } else { " " });
            if !l.trim().is_empty() {
                copyright.push_str(l);
                copyright.push('\n');
            }
        }
    }
    bytes += put(
        &root,
        &format!("{DOC}/copyright"),
        copyright.as_bytes(),
        0o644,
    )?;
    for (page, text) in docs.pages()? {
        bytes += put(&root, &format!("{DOC}/{page}"), &text, 0o644)?;
    }
    put(
        &root,
        "DEBIAN/control",
        control(arch, bytes.div_ceil(1024)).as_bytes(),
        0o644,
    )?;
    let deb = out.join(file_name(arch));
    run_step(
        &format!("pack {}", deb.display()),
        Command::new("dpkg-deb")
            .args(["--root-owner-group", "-Zxz", "--build"])
            .arg(&root)
            .arg(&deb),
    )?;
    Ok(deb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_names_the_arch_and_depends_on_nothing() {
        let c = control(&super::super::ARCHES[1], 6000);
        assert!(
            c.contains("\nArchitecture: arm64\n") && c.contains("\nInstalled-Size: 6000\n"),
            "{c}"
        );
        assert!(!c.contains("Depends"), "{c}");
        // Every line of the long description starts with a space; none is empty.
        let desc: Vec<&str> = c
            .split_once("Description: ")
            .unwrap()
            .1
            .lines()
            .skip(1)
            .collect();
        assert!(
            !desc.is_empty() && desc.iter().all(|l| l.starts_with(' ') && l.len() > 1),
            "{c}"
        );
        assert_eq!(
            file_name(&super::super::ARCHES[0]),
            format!("rtrace_{VERSION}-1_amd64.deb")
        );
    }
}
