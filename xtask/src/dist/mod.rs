//! `cargo xtask dist`: what users install. Per architecture, a static rtrace (musl,
//! built by cargo-zigbuild; see [`toolchain`]) packed as a tarball and a .deb with the
//! man page and the completions, and one container image (`FROM scratch` and the
//! x86_64 binary), all under `target/dist/`.

mod deb;
mod image;
pub use image::tag as image_tag;
mod tarball;
pub mod toolchain;

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};

use crate::paths::workspace_root;

/// The workspace's version: every crate of it shares one.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// One architecture rtrace ships for, as each tool names it.
pub struct Arch {
    /// The short name in file names and on the command line.
    pub name: &'static str,
    pub triple: &'static str,
    /// Debian's name.
    pub deb: &'static str,
    /// What `file` calls it.
    pub file_word: &'static str,
}

pub const ARCHES: [Arch; 2] = [
    Arch {
        name: "x86_64",
        triple: "x86_64-unknown-linux-musl",
        deb: "amd64",
        file_word: "x86-64",
    },
    Arch {
        name: "aarch64",
        triple: "aarch64-unknown-linux-musl",
        deb: "arm64",
        file_word: "ARM aarch64",
    },
];

/// The licences, as the workspace's `license = "MIT OR Apache-2.0"` names them.
pub const LICENCES: [(&str, &str); 2] = [
    ("MIT", include_str!("../../../LICENSE-MIT")),
    ("Apache-2.0", include_str!("../../../LICENSE-APACHE")),
];

/// The man page and completions (`cargo xtask docs`'s), and the README.
pub struct Docs {
    dir: PathBuf,
    readme: PathBuf,
}

impl Docs {
    fn completion(&self, file: &str) -> PathBuf {
        self.dir.join("completions").join(file)
    }

    fn man(&self) -> PathBuf {
        self.dir.join("man/rtrace.1")
    }

    /// The man page gzipped as Debian ships them (`gzip -9n`: no name or time inside).
    fn man_gz(&self) -> Result<Vec<u8>> {
        let out = Command::new("gzip")
            .args(["-9n", "-c"])
            .arg(self.man())
            .output()
            .context("running gzip")?;
        if !out.status.success() {
            bail!("gzip failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(out.stdout)
    }
}

/// What one run of `dist` made.
pub struct Artefacts {
    /// Per architecture built: its static binary, tarball and .deb.
    pub builds: Vec<Built>,
    /// `docker save`'s archive of `rtrace:<version>`, when x86_64 was built.
    pub image: Option<PathBuf>,
}

impl Artefacts {
    /// What was built for the architecture named `arch` (`x86_64`, `aarch64`).
    pub fn of(&self, arch: &str) -> Option<&Built> {
        self.builds.iter().find(|b| b.arch.name == arch)
    }
}

pub struct Built {
    pub arch: &'static Arch,
    pub bin: PathBuf,
    pub tarball: PathBuf,
    pub deb: PathBuf,
}

/// The architectures named (all when none).
pub fn choose(names: &[String]) -> Result<Vec<&'static Arch>> {
    if names.is_empty() {
        return Ok(ARCHES.iter().collect());
    }
    names
        .iter()
        .map(|n| {
            ARCHES.iter().find(|a| a.name == n).with_context(|| {
                let known: Vec<&str> = ARCHES.iter().map(|a| a.name).collect();
                format!("no architecture {n}; rtrace ships for {}", known.join(", "))
            })
        })
        .collect()
}

pub fn dist(arches: &[&'static Arch], image: bool) -> Result<Artefacts> {
    let started = std::time::Instant::now();
    let root = workspace_root();
    let triples: Vec<&str> = arches.iter().map(|a| a.triple).collect();
    let cross = toolchain::ensure(&triples)?;
    let out = root.join("target/dist");
    let stage = out.join("stage");
    let _ = fs::remove_dir_all(&stage);
    fs::create_dir_all(&stage)?;
    let docs = Docs {
        dir: stage.join("docs"),
        readme: root.join("README.md"),
    };
    crate::docs::generate(&docs.dir)?;
    let mut builds = Vec::new();
    for arch in arches {
        let bin = toolchain::build(&cross, &root, arch.triple)?;
        let said = toolchain::check_static(&bin, arch.file_word)?;
        println!("xtask: {}: {said}", bin.display());
        let tarball = tarball::build(arch, &bin, &docs, &stage, &out)?;
        let deb = deb::build(arch, &bin, &docs, &stage, &out)?;
        builds.push(Built {
            arch,
            bin,
            tarball,
            deb,
        });
    }
    let image = match builds.iter().find(|b| b.arch.name == "x86_64") {
        Some(b) if image => Some(image::build(&b.bin, &stage, &out)?),
        _ => None,
    };
    let _ = fs::remove_dir_all(&stage);
    println!(
        "xtask: dist done in {:.0} s; in {}:",
        started.elapsed().as_secs_f64(),
        out.display()
    );
    let mut files: Vec<&Path> = Vec::new();
    for b in &builds {
        files.extend([b.bin.as_path(), b.tarball.as_path(), b.deb.as_path()]);
    }
    files.extend(image.as_deref());
    for f in files {
        let size = fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        println!("  {:>10}  {}", size, f.display());
    }
    Ok(Artefacts { builds, image })
}
