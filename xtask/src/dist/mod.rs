//! `cargo xtask dist`: what users install. Per architecture, a static rtrace (musl,
//! built by cargo-zigbuild; see [`toolchain`]) packed as a tarball and a .deb with the
//! man page and the completions, and one container image (`FROM scratch` and the
//! x86_64 binary), all under `target/dist/`.

mod deb;
mod image;
pub use image::tag as image_tag;
pub mod tarball;
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

/// The man page and completions (`cargo xtask docs`'s), and the Markdown pages.
pub struct Docs {
    dir: PathBuf,
    root: PathBuf,
    pages: Vec<String>,
}

/// The Markdown pages shipped beside the binary, as paths below the workspace kept as
/// they are, so the README's links to `docs/…`, CONTRIBUTING.md and the rest resolve in
/// the tarball and in /usr/share/doc/rtrace too.
pub fn shipped_pages(root: &Path) -> Result<Vec<String>> {
    let mut pages: Vec<String> = [
        "README.md",
        "ARCHITECTURE.md",
        "BENCHMARKS.md",
        "CONTRIBUTING.md",
    ]
    .map(String::from)
    .to_vec();
    let mut docs = Vec::new();
    for entry in fs::read_dir(root.join("docs")).context("reading docs/")? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            docs.push(format!("docs/{name}"));
        }
    }
    docs.sort();
    pages.extend(docs);
    Ok(pages)
}

impl Docs {
    fn completion(&self, file: &str) -> PathBuf {
        self.dir.join("completions").join(file)
    }

    /// Each shipped page: its path below the package's doc directory, and its bytes.
    fn pages(&self) -> Result<Vec<(&str, Vec<u8>)>> {
        self.pages
            .iter()
            .map(|p| {
                let bytes = fs::read(self.root.join(p)).with_context(|| format!("reading {p}"))?;
                Ok((p.as_str(), bytes))
            })
            .collect()
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
        pages: shipped_pages(&root)?,
        root: root.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The tarball and the .deb hold the README and every page it links to, at the same
    /// relative paths, so its links work where it is installed. A stand-in binary, man
    /// page and completions: only the layout is checked here (`cargo xtask test
    /// --container` installs the real ones).
    #[test]
    fn the_tarball_and_the_deb_ship_the_readme_with_its_pages() {
        let root = workspace_root();
        let scratch = std::env::temp_dir().join(format!("xtask-dist-{}", std::process::id()));
        let _ = fs::remove_dir_all(&scratch);
        let docs = Docs {
            dir: scratch.join("docs"),
            root: root.clone(),
            pages: shipped_pages(&root).unwrap(),
        };
        fs::create_dir_all(docs.dir.join("completions")).unwrap();
        fs::create_dir_all(docs.dir.join("man")).unwrap();
        fs::write(docs.man(), ".TH RTRACE 1\n").unwrap();
        for f in ["rtrace.bash", "_rtrace", "rtrace.fish"] {
            fs::write(docs.completion(f), "# completion\n").unwrap();
        }
        let bin = scratch.join("rtrace");
        fs::write(&bin, "#!/bin/sh\n").unwrap();
        let arch = &ARCHES[0];
        let listing = |cmd: &mut Command| {
            let out = cmd.output().unwrap();
            assert!(out.status.success(), "{cmd:?}: {out:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        let tarball = tarball::build(arch, &bin, &docs, &scratch, &scratch).unwrap();
        let in_tar = listing(Command::new("tar").arg("tzf").arg(&tarball));
        // dpkg-deb is Debian's (as `cargo xtask dist` needs); elsewhere only the tarball.
        let has_dpkg = Command::new("dpkg-deb").arg("--version").output().is_ok();
        let in_deb = if has_dpkg {
            let deb = deb::build(arch, &bin, &docs, &scratch, &scratch).unwrap();
            listing(Command::new("dpkg-deb").arg("-c").arg(&deb))
        } else {
            eprintln!("no dpkg-deb here: the .deb's layout is not checked");
            String::new()
        };
        for page in ["README.md", "docs/options.md", "CONTRIBUTING.md"] {
            assert!(
                in_tar
                    .lines()
                    .any(|l| l.ends_with(&format!("-linux-musl/{page}"))),
                "{page} not in the tarball:\n{in_tar}"
            );
            assert!(
                !has_dpkg || in_deb.contains(&format!("./usr/share/doc/rtrace/{page}\n")),
                "{page} not in the .deb:\n{in_deb}"
            );
        }
        fs::remove_dir_all(&scratch).unwrap();
    }
}
