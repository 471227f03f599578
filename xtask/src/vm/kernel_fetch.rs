//! Fetching a Debian kernel package with apt, through a private apt configuration kept
//! in the cache directory: the system's sources, lists and caches are never touched,
//! and a later run reuses the lists (for a day), the .deb and its extracted tree.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, SystemTime},
};

use anyhow::{Context, Result, bail};

use super::{arch::Arch, debversion};
use crate::run::{capture, run_step};

/// The Debian suites searched for kernels. bookworm-security carries both the 6.1
/// kernels and (since Debian 12.x) the 6.12 ones; bookworm-backports is the other home
/// of 6.12.
const SOURCES: &str = "\
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-updates main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports main
";

// The kernel flavour is the architecture's Debian name (`amd64`, `arm64`). Debian's
// `cloud-amd64` flavour would be smaller, but it is built without 9p
// (`# CONFIG_NET_9P is not set`), so the guest could not mount its root; the generic
// flavour has 9p and virtio as modules.

/// Package lists older than this are refreshed.
const LISTS_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// An extracted kernel package.
pub struct Kernel {
    pub package: String,
    pub version: String,
    /// What `uname -r` says: the directory name under lib/modules.
    pub release: String,
    pub vmlinuz: PathBuf,
    /// `lib/modules/<release>` of the extracted package, with a modules.dep.
    pub modules: PathBuf,
}

/// apt and apt-cache run with their sources, lists and caches under `dir`.
struct PrivateApt {
    dir: PathBuf,
    /// Debian's architecture name: the only one these lists hold.
    arch: &'static str,
}

impl PrivateApt {
    /// The lists of `arch` under `cache` (`apt` for amd64, as before arm64 came,
    /// `apt-<arch>` for the others).
    fn new(cache: &Path, arch: &'static str) -> Result<Self> {
        let dir = if arch == "amd64" {
            cache.join("apt")
        } else {
            cache.join(format!("apt-{arch}"))
        };
        fs::create_dir_all(dir.join("lists/partial"))?;
        fs::create_dir_all(dir.join("cache/archives/partial"))?;
        fs::write(dir.join("sources.list"), SOURCES)?;
        Ok(Self { dir, arch })
    }

    fn command(&self, program: &str) -> Command {
        let d = |p: &str| self.dir.join(p).display().to_string();
        let mut c = Command::new(program);
        for (key, value) in [
            ("Dir::Etc::SourceList", d("sources.list")),
            ("Dir::Etc::SourceParts", "/dev/null".into()),
            ("Dir::Etc::Preferences", "/dev/null".into()),
            ("Dir::Etc::PreferencesParts", "/dev/null".into()),
            ("Dir::State::Lists", d("lists")),
            ("Dir::Cache", d("cache")),
            // The cache lives in a root-owned tree apt's `_apt` user may not enter.
            ("APT::Sandbox::User", "root".into()),
            ("APT::Architecture", self.arch.into()),
            ("APT::Architectures", self.arch.into()),
        ] {
            c.arg("-o").arg(format!("{key}={value}"));
        }
        c.env("LC_ALL", "C")
            .env("DEBIAN_FRONTEND", "noninteractive");
        c
    }

    fn stamp(&self) -> PathBuf {
        self.dir.join("updated")
    }

    fn lists_fresh(&self) -> bool {
        fs::metadata(self.stamp())
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age < LISTS_MAX_AGE)
    }

    fn update(&self) -> Result<()> {
        eprintln!("xtask: updating the kernel matrix's private apt lists");
        run_step(
            "apt-get update (private lists for the kernel matrix)",
            self.command("apt-get").args(["update", "-qq"]),
        )?;
        fs::write(self.stamp(), "")?;
        Ok(())
    }

    /// The newest `linux-image-<series>.*-<flavour>` apt can install: (package, version).
    fn newest(&self, series: &str) -> Result<Option<(String, String)>> {
        let prefix = format!("linux-image-{series}.");
        let names = capture(
            "list kernel packages",
            self.command("apt-cache").args(["pkgnames", &prefix]),
        )?;
        let names = kernel_packages(&names, series, self.arch);
        if names.is_empty() {
            return Ok(None);
        }
        let policy = capture(
            "ask apt for the kernels' candidate versions",
            self.command("apt-cache").arg("policy").args(&names),
        )?;
        Ok(newest_candidate(&parse_policy(&policy)))
    }

    fn download(&self, package: &str, version: &str, into: &Path) -> Result<()> {
        run_step(
            &format!("download {package}"),
            self.command("apt-get")
                .args(["download", "-qq", &format!("{package}={version}")])
                .current_dir(into),
        )
    }
}

/// The image packages of one kernel series and flavour among `apt-cache pkgnames`
/// output: `linux-image-6.1.0-57-amd64` or `linux-image-6.12.117+deb12-amd64`, not the
/// -dbg, -unsigned, or other flavours' packages (`…-cloud-amd64`, `…-rt-amd64`).
pub fn kernel_packages(pkgnames: &str, series: &str, flavour: &str) -> Vec<String> {
    let mut names: Vec<String> = pkgnames
        .lines()
        .map(str::trim)
        .filter(|name| {
            let Some(abi) = name
                .strip_prefix("linux-image-")
                .and_then(|n| n.strip_suffix(&format!("-{flavour}")))
            else {
                return false;
            };
            // Every dash-separated piece of the ABI starts with a digit; a flavour
            // name ("cloud", "rt") would not.
            abi.strip_prefix(series).is_some_and(|r| r.starts_with('.'))
                && abi
                    .split('-')
                    .all(|piece| piece.starts_with(|c: char| c.is_ascii_digit()))
        })
        .map(String::from)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// (package, candidate version) from `apt-cache policy` output; packages without a
/// candidate (no longer in any suite) are left out.
pub fn parse_policy(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut package = None;
    for line in text.lines() {
        if !line.starts_with(' ') {
            package = line.strip_suffix(':').map(String::from);
        } else if let Some(candidate) = line.trim().strip_prefix("Candidate:") {
            let candidate = candidate.trim();
            if let Some(p) = package.take()
                && candidate != "(none)"
            {
                out.push((p, candidate.to_string()));
            }
        }
    }
    out
}

/// The entry with the highest Debian version.
pub fn newest_candidate(candidates: &[(String, String)]) -> Option<(String, String)> {
    candidates
        .iter()
        .max_by(|a, b| debversion::compare(&a.1, &b.1))
        .cloned()
}

/// The file name `apt-get download` gives a package (an epoch's colon becomes %3a).
fn deb_file_name(package: &str, version: &str, arch: &str) -> String {
    format!("{package}_{}_{arch}.deb", version.replace(':', "%3a"))
}

/// Downloads (if needed) `package` at `version` of `apt`'s architecture into
/// `cache/debs` and extracts it under `cache/tree`; the extracted tree.
fn download_and_extract(
    cache: &Path,
    apt: &PrivateApt,
    package: &str,
    version: &str,
    updated: bool,
) -> Result<PathBuf> {
    let debs = cache.join("debs");
    fs::create_dir_all(&debs)?;
    let deb = debs.join(deb_file_name(package, version, apt.arch));
    if !deb.is_file() {
        eprintln!("xtask: downloading {package} {version} ({})", apt.arch);
        if let Err(e) = apt.download(package, version, &debs) {
            if updated {
                return Err(e);
            }
            // The lists may name a file the mirror no longer has.
            apt.update()?;
            apt.download(package, version, &debs)?;
        }
        if !deb.is_file() {
            bail!("apt-get download did not leave {}", deb.display());
        }
    }
    let tree = cache.join("tree").join(format!(
        "{package}_{version}{}",
        if apt.arch == "amd64" {
            String::new()
        } else {
            format!("_{}", apt.arch)
        }
    ));
    let done = tree.join(".extracted");
    if !done.is_file() {
        let _ = fs::remove_dir_all(&tree);
        fs::create_dir_all(&tree)?;
        run_step(
            &format!("extract {}", deb.display()),
            Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&tree),
        )?;
        fs::write(&done, "")?;
    }
    Ok(tree)
}

/// The extracted tree of `package` (apt's candidate) for `arch`, fetched if needed:
/// the arm64 guest's busybox comes from arm64's `busybox-static` this way.
pub fn fetch_package(cache: &Path, arch: &Arch, package: &str) -> Result<PathBuf> {
    let apt = PrivateApt::new(cache, arch.deb)?;
    let mut updated = false;
    if !apt.lists_fresh() {
        apt.update()?;
        updated = true;
    }
    let policy = capture(
        &format!("ask apt for {package}'s candidate version"),
        apt.command("apt-cache").args(["policy", package]),
    )?;
    let (_, version) = parse_policy(&policy)
        .into_iter()
        .next()
        .with_context(|| format!("apt offers no {package} for {}", arch.deb))?;
    download_and_extract(cache, &apt, package, &version, updated)
}

/// Finds, downloads if needed, and extracts the newest kernel of `series` for `arch`
/// under `cache`.
pub fn fetch(cache: &Path, series: &str, arch: &Arch) -> Result<Kernel> {
    let apt = PrivateApt::new(cache, arch.deb)?;
    let flavour = arch.deb;
    let mut updated = false;
    if !apt.lists_fresh() {
        apt.update()?;
        updated = true;
    }
    let newest = match apt.newest(series)? {
        Some(n) => n,
        None if !updated => {
            apt.update()?;
            updated = true;
            apt.newest(series)?
                .with_context(|| format!("apt offers no linux-image-{series}.*-{flavour}"))?
        }
        None => bail!("apt offers no linux-image-{series}.*-{flavour}"),
    };
    let (package, version) = newest;
    eprintln!("xtask: kernel {series}: {package} {version}");

    let tree = download_and_extract(cache, &apt, &package, &version, updated)?;
    let modules_root = tree.join("lib/modules");
    let release = fs::read_dir(&modules_root)
        .with_context(|| format!("{package} has no lib/modules"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .next()
        .with_context(|| format!("{} is empty", modules_root.display()))?;
    let modules = modules_root.join(&release);
    let vmlinuz = tree.join(format!("boot/vmlinuz-{release}"));
    if !vmlinuz.is_file() {
        bail!("{package} has no {}", vmlinuz.display());
    }
    // The package leaves modules.dep to its postinst; make it here.
    if !modules.join("modules.dep").is_file() {
        let depmod = super::tools::which("depmod").context("depmod is not installed")?;
        run_step(
            "depmod (the kernel's module dependencies)",
            Command::new(depmod).arg("-b").arg(&tree).arg(&release),
        )?;
    }
    Ok(Kernel {
        package,
        version,
        release,
        vmlinuz,
        modules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PKGNAMES: &str = "\
linux-image-6.12.100+deb12-amd64
linux-image-6.12.100+deb12-cloud-amd64
linux-image-6.12.100+deb12-rt-amd64
linux-image-6.12.117+deb12-amd64-dbg
linux-image-6.12.117+deb12-amd64-unsigned
linux-image-6.12.90+deb12.1-amd64
linux-image-6.1.0-57-amd64
linux-image-6.1.0-57-cloud-amd64
";

    #[test]
    fn keeps_one_series_and_flavour() {
        assert_eq!(
            kernel_packages(PKGNAMES, "6.12", "amd64"),
            [
                "linux-image-6.12.100+deb12-amd64",
                "linux-image-6.12.90+deb12.1-amd64"
            ]
        );
        assert_eq!(
            kernel_packages(PKGNAMES, "6.1", "amd64"),
            ["linux-image-6.1.0-57-amd64"]
        );
        assert_eq!(
            kernel_packages(PKGNAMES, "6.1", "cloud-amd64"),
            ["linux-image-6.1.0-57-cloud-amd64"]
        );
    }

    #[test]
    fn picks_the_newest_candidate() {
        let policy = "\
linux-image-6.12.118+deb12-amd64:
  Installed: (none)
  Candidate: (none)
  Version table:
linux-image-6.12.43+deb12-amd64:
  Installed: (none)
  Candidate: 6.12.43-1~bpo12+1
  Version table:
     6.12.43-1~bpo12+1 100
        100 http://deb.debian.org/debian bookworm-backports/main amd64 Packages
linux-image-6.12.117+deb12-amd64:
  Installed: (none)
  Candidate: 6.12.117-1~deb12u1
  Version table:
     6.12.117-1~deb12u1 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
";
        let parsed = parse_policy(policy);
        assert_eq!(parsed.len(), 2);
        assert_eq!(
            newest_candidate(&parsed),
            Some((
                "linux-image-6.12.117+deb12-amd64".to_string(),
                "6.12.117-1~deb12u1".to_string()
            ))
        );
        assert_eq!(newest_candidate(&[]), None);
    }

    #[test]
    fn deb_names_escape_the_epoch() {
        assert_eq!(
            deb_file_name("a", "1:2.0-1", "amd64"),
            "a_1%3a2.0-1_amd64.deb"
        );
        assert_eq!(deb_file_name("b", "2", "arm64"), "b_2_arm64.deb");
    }
}
