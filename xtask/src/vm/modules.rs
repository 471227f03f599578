//! The kernel modules the guest needs before it can mount the host's root over 9p:
//! their load order from modules.dep, and copies the guest's busybox insmod can read.

use std::{
    collections::{HashMap, HashSet},
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context, Result, bail};

/// virtio-pci carries the 9p transport; 9pnet_virtio and 9p give the file system.
pub const WANTED: [&str; 3] = ["virtio_pci", "9pnet_virtio", "9p"];

/// A module's name from its path: `kernel/net/9p/9pnet_virtio.ko.xz` -> `9pnet_virtio`
/// (dashes read as underscores, as the kernel does).
pub fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split(".ko").next().unwrap_or(file);
    stem.replace('-', "_")
}

/// modules.dep: module path -> the paths it depends on.
pub fn parse_modules_dep(text: &str) -> HashMap<String, Vec<String>> {
    text.lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(module, deps)| {
            (
                module.trim().to_string(),
                deps.split_whitespace().map(String::from).collect(),
            )
        })
        .collect()
}

/// The module paths to load, each after everything it depends on, for `wanted`
/// (module names). Modules built into the kernel (named in `builtin`, the text of
/// modules.builtin) need nothing; a module that is neither there nor in `dep` is an
/// error.
pub fn load_order(
    dep: &HashMap<String, Vec<String>>,
    builtin: &str,
    wanted: &[&str],
) -> Result<Vec<String>> {
    let by_name: HashMap<String, &String> = dep.keys().map(|p| (module_name(p), p)).collect();
    let builtin: HashSet<String> = builtin.lines().map(module_name).collect();
    let mut order = Vec::new();
    let mut seen = HashSet::new();
    fn visit(
        path: &String,
        dep: &HashMap<String, Vec<String>>,
        seen: &mut HashSet<String>,
        order: &mut Vec<String>,
    ) {
        if !seen.insert(path.clone()) {
            return;
        }
        for d in dep.get(path).into_iter().flatten() {
            visit(d, dep, seen, order);
        }
        order.push(path.clone());
    }
    for name in wanted {
        let name = name.replace('-', "_");
        match by_name.get(&name) {
            Some(path) => visit(path, dep, &mut seen, &mut order),
            None if builtin.contains(&name) => {}
            None => bail!("the kernel has no module {name}, built in or loadable"),
        }
    }
    Ok(order)
}

/// Copies the modules `order` names (paths relative to `modules_dir`) into `dest`,
/// decompressed, as `<name>.ko`; returns the file names in load order.
pub fn stage(modules_dir: &Path, order: &[String], dest: &Path) -> Result<Vec<String>> {
    fs::create_dir_all(dest)?;
    let mut files = Vec::new();
    for rel in order {
        let src = modules_dir.join(rel);
        let file = format!("{}.ko", module_name(rel));
        let out = dest.join(&file);
        let decompressor = if rel.ends_with(".ko") {
            None
        } else if rel.ends_with(".ko.xz") {
            Some("xz")
        } else if rel.ends_with(".ko.zst") {
            Some("zstd")
        } else if rel.ends_with(".ko.gz") {
            Some("gzip")
        } else {
            bail!("unknown module format: {rel}");
        };
        match decompressor {
            None => {
                fs::copy(&src, &out).with_context(|| format!("copy {}", src.display()))?;
            }
            Some(tool) => decompress(tool, &src, &out)?,
        }
        files.push(file);
    }
    Ok(files)
}

fn decompress(tool: &str, src: &PathBuf, out: &Path) -> Result<()> {
    let status = Command::new(tool)
        .args(["-d", "-c"])
        .arg(src)
        .stdout(Stdio::from(fs::File::create(out)?))
        .status()
        .with_context(|| format!("run {tool}"))?;
    if !status.success() {
        bail!("{tool} -d -c {} failed ({status})", src.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // modules.dep lines of Debian's 6.1.0-57-amd64 (abridged).
    const DEP_61: &str = "\
kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/fscache/fscache.ko kernel/fs/netfs/netfs.ko
kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko
kernel/fs/netfs/netfs.ko:
kernel/net/9p/9pnet.ko:
kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
kernel/drivers/block/virtio_blk.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
";

    fn names(order: &[String]) -> Vec<String> {
        order.iter().map(|p| module_name(p)).collect()
    }

    #[test]
    fn names_modules() {
        assert_eq!(
            module_name("kernel/net/9p/9pnet_virtio.ko.xz"),
            "9pnet_virtio"
        );
        assert_eq!(module_name("kernel/a/virtio-rng.ko"), "virtio_rng");
        assert_eq!(module_name("kernel/fs/9p/9p.ko.zst"), "9p");
    }

    #[test]
    fn every_module_comes_after_its_dependencies() {
        let dep = parse_modules_dep(DEP_61);
        let order = load_order(&dep, "", &WANTED).unwrap();
        assert_eq!(order.len(), 10, "{order:?}");
        for (i, m) in order.iter().enumerate() {
            for d in &dep[m] {
                let j = order.iter().position(|o| o == d).unwrap();
                assert!(j < i, "{d} must load before {m}: {order:?}");
            }
        }
        let n = names(&order);
        assert!(!n.contains(&"virtio_blk".to_string()));
        assert_eq!(n.last().unwrap(), "9p");
    }

    #[test]
    fn built_in_modules_are_skipped() {
        // 6.12: virtio and virtio_pci are built in, 9p is compressed.
        let dep = parse_modules_dep(
            "kernel/fs/9p/9p.ko.xz: kernel/net/9p/9pnet.ko.xz kernel/fs/netfs/netfs.ko.xz\n\
             kernel/net/9p/9pnet_virtio.ko.xz: kernel/net/9p/9pnet.ko.xz kernel/fs/netfs/netfs.ko.xz\n\
             kernel/net/9p/9pnet.ko.xz:\nkernel/fs/netfs/netfs.ko.xz:\n",
        );
        let builtin = "kernel/drivers/virtio/virtio.ko\nkernel/drivers/virtio/virtio_pci.ko\n";
        let order = load_order(&dep, builtin, &WANTED).unwrap();
        assert_eq!(names(&order), ["9pnet", "netfs", "9pnet_virtio", "9p"]);
        assert!(load_order(&dep, "", &WANTED).is_err());
    }
}
