//! Struct member offsets from the kernel's BTF (`/sys/kernel/btf/vmlinux`).
//!
//! aya's Rust programs have no CO-RE field relocations, so where a program must read a
//! kernel struct the loader finds the offsets here and passes them as globals. Only
//! member lookups are needed, so this is a single pass over the type section that
//! records where each type starts, then follows a path of member names: no type is
//! decoded beyond what the path touches (a full BTF parse of vmlinux takes ~0.4 s,
//! this takes a few ms).

use std::{fs, io, path::Path};

use thiserror::Error;

pub const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

const MAGIC: u16 = 0xeb9f;
const HEADER_MIN: usize = 24;
const TYPE_HEADER: usize = 12;

// BTF kinds (include/uapi/linux/btf.h).
const KIND_INT: u32 = 1;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_TYPEDEF: u32 = 8;
const KIND_FUNC: u32 = 12;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
const KIND_RESTRICT: u32 = 11;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_DECL_TAG: u32 = 17;
const KIND_TYPE_TAG: u32 = 18;
const KIND_ENUM64: u32 = 19;
const KIND_MAX: u32 = 19;

#[derive(Debug, Error)]
pub enum BtfError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("malformed BTF: {0}")]
    Malformed(&'static str),
    #[error("BTF has no struct {0}")]
    NoStruct(String),
    #[error("no BTF type {0}")]
    NoType(String),
    #[error("BTF struct {0} has no member {1}")]
    NoMember(String, String),
}

/// The type section indexed by id, over the raw bytes.
pub struct Btf {
    data: Vec<u8>,
    types: std::ops::Range<usize>,
    strings: std::ops::Range<usize>,
    /// Byte offset (in `data`) of each type; index = type id (id 0, void, has none).
    starts: Vec<usize>,
}

/// What a type header says.
#[derive(Clone, Copy)]
struct TypeHead {
    name_off: u32,
    kind: u32,
    vlen: usize,
    kind_flag: bool,
    size_or_type: u32,
    at: usize,
}

impl Btf {
    pub fn from_sys() -> Result<Self, BtfError> {
        Self::from_file(Path::new(VMLINUX))
    }

    pub fn from_file(path: &Path) -> Result<Self, BtfError> {
        let data = fs::read(path).map_err(|source| BtfError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(data)
    }

    pub fn parse(data: Vec<u8>) -> Result<Self, BtfError> {
        let u16_at = |o: usize| data.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
        if u16_at(0) != Some(MAGIC) {
            return Err(BtfError::Malformed("not little-endian BTF"));
        }
        let word = |o: usize| -> Result<usize, BtfError> {
            read_u32(&data, o)
                .map(|v| v as usize)
                .ok_or(BtfError::Malformed("short header"))
        };
        let hdr_len = word(4)?;
        if hdr_len < HEADER_MIN {
            return Err(BtfError::Malformed("short header"));
        }
        let (type_off, type_len) = (word(8)?, word(12)?);
        let (str_off, str_len) = (word(16)?, word(20)?);
        let types = hdr_len + type_off..hdr_len + type_off + type_len;
        let strings = hdr_len + str_off..hdr_len + str_off + str_len;
        if types.end > data.len() || strings.end > data.len() {
            return Err(BtfError::Malformed("section past the end"));
        }
        let mut btf = Btf {
            data,
            types,
            strings,
            starts: vec![0],
        };
        let mut at = btf.types.start;
        while at < btf.types.end {
            let head = btf.head_at(at)?;
            btf.starts.push(at);
            at += TYPE_HEADER + trailer_len(head.kind, head.vlen)?;
        }
        if at != btf.types.end {
            return Err(BtfError::Malformed("type section does not end on a type"));
        }
        Ok(btf)
    }

    fn head_at(&self, at: usize) -> Result<TypeHead, BtfError> {
        let word = |o: usize| read_u32(&self.data, at + o).ok_or(BtfError::Malformed("short type"));
        let info = word(4)?;
        Ok(TypeHead {
            name_off: word(0)?,
            kind: (info >> 24) & 0x1f,
            vlen: (info & 0xffff) as usize,
            kind_flag: info >> 31 == 1,
            size_or_type: word(8)?,
            at,
        })
    }

    fn head(&self, id: u32) -> Result<TypeHead, BtfError> {
        let at = *self
            .starts
            .get(id as usize)
            .filter(|_| id != 0)
            .ok_or(BtfError::Malformed("type id out of range"))?;
        self.head_at(at)
    }

    fn name(&self, off: u32) -> &[u8] {
        let start = self.strings.start + off as usize;
        let tail = self.data.get(start..self.strings.end).unwrap_or_default();
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        &tail[..end]
    }

    /// Follows typedefs and qualifiers to the type they name.
    fn resolve(&self, mut id: u32) -> Result<TypeHead, BtfError> {
        for _ in 0..32 {
            let h = self.head(id)?;
            match h.kind {
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG => {
                    id = h.size_or_type
                }
                _ => return Ok(h),
            }
        }
        Err(BtfError::Malformed("typedef chain too long"))
    }

    /// The struct named `name` (the first with members, not a forward declaration).
    fn struct_named(&self, name: &str) -> Result<TypeHead, BtfError> {
        (1..self.starts.len() as u32)
            .filter_map(|id| self.head(id).ok())
            .find(|h| {
                h.kind == KIND_STRUCT && h.vlen > 0 && self.name(h.name_off) == name.as_bytes()
            })
            .ok_or_else(|| BtfError::NoStruct(name.into()))
    }

    /// Bit offset and type id of `member` in the struct or union `h`, looking through
    /// anonymous struct and union members (as C does).
    fn member(&self, h: TypeHead, member: &str, depth: u32) -> Option<(u32, u32)> {
        if depth > 8 || !matches!(h.kind, KIND_STRUCT | KIND_UNION) {
            return None;
        }
        for i in 0..h.vlen {
            let at = h.at + TYPE_HEADER + i * 12;
            let name_off = read_u32(&self.data, at)?;
            let ty = read_u32(&self.data, at + 4)?;
            let raw = read_u32(&self.data, at + 8)?;
            let bits = if h.kind_flag { raw & 0x00ff_ffff } else { raw };
            if name_off == 0 {
                let inner = self.resolve(ty).ok()?;
                if let Some((off, ty)) = self.member(inner, member, depth + 1) {
                    return Some((bits + off, ty));
                }
            } else if self.name(name_off) == member.as_bytes() {
                return Some((bits, ty));
            }
        }
        None
    }

    /// The ids of the typedefs named `names`, in one pass over the types.
    pub fn typedef_ids<const N: usize>(&self, names: [&str; N]) -> Result<[u32; N], BtfError> {
        let ids = self.ids_of(KIND_TYPEDEF, &names);
        let mut found = [0; N];
        for (i, id) in ids.into_iter().enumerate() {
            found[i] = id.ok_or_else(|| BtfError::NoType(names[i].into()))?;
        }
        Ok(found)
    }

    /// The ids of the functions named `names` (`None`: the kernel's BTF has no such
    /// function), in one pass over the types.
    pub fn func_ids(&self, names: &[&str]) -> Vec<Option<u32>> {
        self.ids_of(KIND_FUNC, names)
    }

    /// The first id of each of `names` among the types of `kind`.
    fn ids_of(&self, kind: u32, names: &[&str]) -> Vec<Option<u32>> {
        let mut ids = vec![None; names.len()];
        for id in 1..self.starts.len() as u32 {
            let Ok(h) = self.head(id) else { continue };
            if h.kind != kind {
                continue;
            }
            let name = self.name(h.name_off);
            if let Some(i) = names.iter().position(|n| n.as_bytes() == name) {
                ids[i].get_or_insert(id);
                if ids.iter().all(Option::is_some) {
                    break;
                }
            }
        }
        ids
    }

    /// Byte offset of `path` (member names, each within the previous one's type)
    /// from the start of struct `root`: `("signal_struct", &["live", "counter"])`.
    pub fn offset_of(&self, root: &str, path: &[&str]) -> Result<u32, BtfError> {
        let mut h = self.struct_named(root)?;
        let mut bits = 0;
        let mut within = root.to_string();
        for (i, m) in path.iter().enumerate() {
            let (off, ty) = self
                .member(h, m, 0)
                .ok_or_else(|| BtfError::NoMember(within.clone(), (*m).into()))?;
            bits += off;
            within = path[..=i].join(".");
            within.insert_str(0, &format!("{root}."));
            if i + 1 < path.len() {
                h = self.resolve(ty)?;
            }
        }
        if !bits.is_multiple_of(8) {
            return Err(BtfError::Malformed("member is a bit field"));
        }
        Ok(bits / 8)
    }
}

fn read_u32(data: &[u8], at: usize) -> Option<u32> {
    let b = data.get(at..at + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Bytes that follow a type's 12-byte header.
fn trailer_len(kind: u32, vlen: usize) -> Result<usize, BtfError> {
    Ok(match kind {
        KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
        KIND_ARRAY => 12,
        KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => vlen * 12,
        KIND_ENUM | KIND_FUNC_PROTO => vlen * 8,
        k if k <= KIND_MAX => 0,
        _ => return Err(BtfError::Malformed("unknown type kind")),
    })
}

/// Where `current->signal->live` is: the count of the thread group's live threads,
/// which `do_exit` decrements before the `sched_process_exit` tracepoint fires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupLiveOffsets {
    pub task_signal: u32,
    pub signal_live: u32,
}

impl GroupLiveOffsets {
    pub fn find(btf: &Btf) -> Result<Self, BtfError> {
        Ok(Self {
            task_signal: btf.offset_of("task_struct", &["signal"])?,
            signal_live: btf.offset_of("signal_struct", &["live", "counter"])?,
        })
    }
}

/// The fields the lifecycle programs read from what their raw tracepoints pass: the
/// forked child's `pid` and `tgid`, and the path an exec runs (`linux_binprm.filename`)
/// and the header of its file (`buf`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LifecycleOffsets {
    pub task_pid: u32,
    pub task_tgid: u32,
    pub bprm_filename: u32,
    /// `linux_binprm.buf`: the first bytes of the file exec'd (its ELF header).
    pub bprm_buf: u32,
    /// `task_struct.start_boottime` (5.5 and later; `real_start_time` before).
    pub task_start: u32,
    /// `task_struct.comm`: every record's task name is loaded from it.
    pub task_comm: u32,
}

impl LifecycleOffsets {
    pub fn find(btf: &Btf) -> Result<Self, BtfError> {
        Ok(Self {
            task_pid: btf.offset_of("task_struct", &["pid"])?,
            task_tgid: btf.offset_of("task_struct", &["tgid"])?,
            bprm_filename: btf.offset_of("linux_binprm", &["filename"])?,
            bprm_buf: btf.offset_of("linux_binprm", &["buf"])?,
            task_start: btf
                .offset_of("task_struct", &["start_boottime"])
                .or_else(|_| btf.offset_of("task_struct", &["real_start_time"]))?,
            task_comm: btf.offset_of("task_struct", &["comm"])?,
        })
    }
}

/// The fields that lead from a task to the inode number of one of its fds
/// (`task->files->fdt->fd[n]->f_inode->i_ino`), for the fds /proc names by inode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FdInodeOffsets {
    pub task_files: u32,
    pub files_fdt: u32,
    pub fdt_max_fds: u32,
    pub fdt_fd: u32,
    pub file_inode: u32,
    pub inode_ino: u32,
}

impl FdInodeOffsets {
    pub fn find(btf: &Btf) -> Result<Self, BtfError> {
        Ok(Self {
            task_files: btf.offset_of("task_struct", &["files"])?,
            files_fdt: btf.offset_of("files_struct", &["fdt"])?,
            fdt_max_fds: btf.offset_of("fdtable", &["max_fds"])?,
            fdt_fd: btf.offset_of("fdtable", &["fd"])?,
            file_inode: btf.offset_of("file", &["f_inode"])?,
            inode_ino: btf.offset_of("inode", &["i_ino"])?,
        })
    }
}

/// The fields that lead from a task to its mount namespace and root directory
/// (`task->nsproxy->mnt_ns`, `task->fs->root.{mnt,dentry}`), compared with rtrace's own
/// at the exit of the calls whose paths are shown canonical.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ViewOffsets {
    pub task_nsproxy: u32,
    pub nsproxy_mnt_ns: u32,
    pub task_fs: u32,
    pub fs_root_mnt: u32,
    pub fs_root_dentry: u32,
}

impl ViewOffsets {
    pub fn find(btf: &Btf) -> Result<Self, BtfError> {
        Ok(Self {
            task_nsproxy: btf.offset_of("task_struct", &["nsproxy"])?,
            nsproxy_mnt_ns: btf.offset_of("nsproxy", &["mnt_ns"])?,
            task_fs: btf.offset_of("task_struct", &["fs"])?,
            fs_root_mnt: btf.offset_of("fs_struct", &["root", "mnt"])?,
            fs_root_dentry: btf.offset_of("fs_struct", &["root", "dentry"])?,
        })
    }
}

/// The ids of the syscall tracepoints' typedefs (`btf_trace_<tracepoint>`), which a
/// BTF-typed program names to be attached there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracepointIds {
    pub sys_enter: u32,
    pub sys_exit: u32,
}

impl TracepointIds {
    pub fn find(btf: &Btf) -> Result<Self, BtfError> {
        let [sys_enter, sys_exit] =
            btf.typedef_ids(["btf_trace_sys_enter", "btf_trace_sys_exit"])?;
        Ok(Self {
            sys_enter,
            sys_exit,
        })
    }
}

/// A BTF blob in which each named typedef or function has the given id, and every
/// other id up to the largest is a nameless pointer. A type's id is its place in the
/// type section, so a program loaded against this names the kernel's own types by
/// those ids; aya wants a parsed BTF only to look them up, and this parses in a few
/// milliseconds where vmlinux's takes ~25.
pub fn stand_in(named: &[StandIn<'_>]) -> Vec<u8> {
    const KIND_PTR: u32 = 2;
    let mut strings = vec![0u8];
    let mut at = Vec::new();
    for n in named {
        at.push((n.id, strings.len() as u32, n.kind()));
        strings.extend_from_slice(n.name.as_bytes());
        strings.push(0);
    }
    let last = named.iter().map(|n| n.id).max().unwrap_or(0);
    let mut types = Vec::with_capacity(last as usize * TYPE_HEADER);
    for id in 1..=last {
        let (name_off, kind) = at
            .iter()
            .find(|&&(i, _, _)| i == id)
            .map_or((0, KIND_PTR), |&(_, off, kind)| (off, kind));
        // name_off, info (kind in bits 24..28), the type it refers to (void).
        for word in [name_off, kind << 24, 0] {
            types.extend_from_slice(&word.to_le_bytes());
        }
    }
    let mut blob = Vec::with_capacity(HEADER_MIN + types.len() + strings.len());
    blob.extend_from_slice(&MAGIC.to_le_bytes());
    blob.extend_from_slice(&[1, 0]); // version 1, no flags
    for word in [
        HEADER_MIN as u32,
        0,
        types.len() as u32,
        types.len() as u32,
        strings.len() as u32,
    ] {
        blob.extend_from_slice(&word.to_le_bytes());
    }
    blob.extend_from_slice(&types);
    blob.extend_from_slice(&strings);
    blob
}

/// A type of the kernel's that [`stand_in`] names at its id.
#[derive(Clone, Copy, Debug)]
pub struct StandIn<'a> {
    pub name: &'a str,
    pub id: u32,
    /// A function (fentry's target) rather than a typedef (a tracepoint's).
    pub func: bool,
}

impl StandIn<'_> {
    fn kind(&self) -> u32 {
        if self.func { KIND_FUNC } else { KIND_TYPEDEF }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this kernel's BTF is there for `test` to read (see `kernel::can_run`).
    fn reads_vmlinux(test: &str) -> bool {
        crate::kernel::can_run(
            test,
            (!Path::new(VMLINUX).exists()).then(|| format!("no {VMLINUX}")),
        )
    }

    /// Builds a little BTF blob: types are (name, kind, vlen/kind_flag info, size_or_type,
    /// trailer words).
    struct Builder {
        strings: Vec<u8>,
        types: Vec<u8>,
    }

    impl Builder {
        fn new() -> Self {
            Self {
                strings: vec![0],
                types: Vec::new(),
            }
        }

        fn s(&mut self, name: &str) -> u32 {
            if name.is_empty() {
                return 0;
            }
            let off = self.strings.len() as u32;
            self.strings.extend_from_slice(name.as_bytes());
            self.strings.push(0);
            off
        }

        fn ty(&mut self, name: &str, kind: u32, vlen: u32, flag: bool, size: u32, tail: &[u32]) {
            let name = self.s(name);
            let info = (u32::from(flag) << 31) | (kind << 24) | vlen;
            for w in [name, info, size].iter().chain(tail) {
                self.types.extend_from_slice(&w.to_le_bytes());
            }
        }

        fn members(&mut self, list: &[(&str, u32, u32)]) -> Vec<u32> {
            list.iter()
                .flat_map(|&(n, ty, off)| [self.s(n), ty, off])
                .collect()
        }

        fn build(self) -> Vec<u8> {
            let mut out = Vec::new();
            out.extend_from_slice(&MAGIC.to_le_bytes());
            out.extend_from_slice(&[1, 0]);
            for w in [24, 0, self.types.len() as u32, self.types.len() as u32] {
                out.extend_from_slice(&w.to_le_bytes());
            }
            out.extend_from_slice(&(self.strings.len() as u32).to_le_bytes());
            out.extend_from_slice(&self.types);
            out.extend_from_slice(&self.strings);
            out
        }
    }

    /// 1 int, 2 atomic_t {counter}, 3 typedef atomic_t, 4 signal_struct, 5 ptr to 4,
    /// 6 an enum, 7 anonymous union holding `signal`, 8 task_struct (kind_flag set).
    fn sample() -> Vec<u8> {
        let mut b = Builder::new();
        b.ty("int", KIND_INT, 0, false, 4, &[32]);
        let m = b.members(&[("counter", 1, 0)]);
        b.ty("", KIND_STRUCT, 1, false, 4, &m);
        b.ty("atomic_t", KIND_TYPEDEF, 0, false, 2, &[]);
        let m = b.members(&[("sigcnt", 1, 0), ("live", 3, 32)]);
        b.ty("signal_struct", KIND_STRUCT, 2, false, 8, &m);
        b.ty("", 2, 0, false, 4, &[]);
        let e = [b.s("A"), 0, b.s("B"), 1];
        b.ty("e", KIND_ENUM, 2, false, 4, &e);
        let m = b.members(&[("signal", 5, 0), ("other", 1, 0)]);
        b.ty("", KIND_UNION, 2, false, 8, &m);
        // kind_flag: offsets carry a bit-field size in their top byte.
        let m = b.members(&[("state", 1, 0), ("flags", 1, (3 << 24) | 32), ("", 7, 128)]);
        b.ty("task_struct", KIND_STRUCT, 3, true, 32, &m);
        b.build()
    }

    #[test]
    fn finds_nested_and_anonymous_members() {
        let btf = Btf::parse(sample()).unwrap();
        assert_eq!(btf.offset_of("signal_struct", &["live"]).unwrap(), 4);
        assert_eq!(
            btf.offset_of("signal_struct", &["live", "counter"])
                .unwrap(),
            4
        );
        assert_eq!(btf.offset_of("task_struct", &["signal"]).unwrap(), 16);
        assert_eq!(
            GroupLiveOffsets::find(&btf).unwrap(),
            GroupLiveOffsets {
                task_signal: 16,
                signal_live: 4
            }
        );
    }

    #[test]
    fn missing_names_are_errors() {
        let btf = Btf::parse(sample()).unwrap();
        assert!(matches!(
            btf.offset_of("mm_struct", &["x"]),
            Err(BtfError::NoStruct(_))
        ));
        let e = btf
            .offset_of("signal_struct", &["live", "nope"])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "BTF struct signal_struct.live has no member nope"
        );
    }

    #[test]
    fn malformed_input_is_refused() {
        assert!(Btf::parse(vec![0; 8]).is_err());
        let mut bad = sample();
        bad.truncate(bad.len() - 10);
        assert!(Btf::parse(bad).is_err());
        let mut odd = sample();
        // Claim one more byte of types than there are: the walk cannot end on a type.
        odd[12] += 1;
        odd[16] += 1;
        assert!(Btf::parse(odd).is_err());
    }

    #[test]
    fn this_kernel_has_the_group_live_count() {
        // Every kernel rtrace supports has BTF; this reads the running one's.
        if !reads_vmlinux("this_kernel_has_the_group_live_count") {
            return;
        }
        let btf = Btf::from_sys().unwrap();
        let o = GroupLiveOffsets::find(&btf).unwrap();
        assert!(
            o.task_signal > 0 && o.task_signal.is_multiple_of(8),
            "{o:?}"
        );
        assert!(o.signal_live.is_multiple_of(4), "{o:?}");
    }

    #[test]
    fn this_kernel_leads_from_a_task_to_its_fds_inodes() {
        if !reads_vmlinux("this_kernel_leads_from_a_task_to_its_fds_inodes") {
            return;
        }
        let btf = Btf::from_sys().unwrap();
        let o = FdInodeOffsets::find(&btf).unwrap();
        // Pointers are 8-byte aligned; max_fds is the first member of fdtable.
        for off in [
            o.task_files,
            o.files_fdt,
            o.fdt_fd,
            o.file_inode,
            o.inode_ino,
        ] {
            assert!(off.is_multiple_of(8), "{o:?}");
        }
        assert!(o.task_files > 0 && o.fdt_fd > 0, "{o:?}");
        assert_eq!(o.fdt_max_fds, 0, "{o:?}");
    }

    #[test]
    fn this_kernel_leads_from_a_task_to_its_mount_namespace_and_root() {
        if !reads_vmlinux("this_kernel_leads_from_a_task_to_its_mount_namespace_and_root") {
            return;
        }
        let btf = Btf::from_sys().unwrap();
        let o = ViewOffsets::find(&btf).unwrap();
        for off in [
            o.task_nsproxy,
            o.nsproxy_mnt_ns,
            o.task_fs,
            o.fs_root_mnt,
            o.fs_root_dentry,
        ] {
            assert!(off.is_multiple_of(8), "{o:?}");
        }
        // struct path is { mnt, dentry }: the two pointers side by side.
        assert_eq!(o.fs_root_dentry, o.fs_root_mnt + 8, "{o:?}");
        assert!(o.task_nsproxy > 0 && o.task_fs > 0, "{o:?}");
    }

    #[test]
    fn the_stand_in_gives_each_typedef_its_id() {
        let typedef = |name, id| StandIn {
            name,
            id,
            func: false,
        };
        let blob = stand_in(&[
            typedef("btf_trace_sys_exit", 9),
            typedef("btf_trace_sys_enter", 5),
            StandIn {
                name: "__x64_sys_openat",
                id: 7,
                func: true,
            },
        ]);
        // aya, which the programs are loaded with, finds them at those ids…
        let aya = aya::Btf::parse(&blob, aya::Endianness::default()).unwrap();
        let kind = aya_obj::btf::BtfKind::Typedef;
        assert_eq!(
            aya.id_by_type_name_kind("btf_trace_sys_enter", kind)
                .unwrap(),
            5
        );
        assert_eq!(
            aya.id_by_type_name_kind("btf_trace_sys_exit", kind)
                .unwrap(),
            9
        );
        // …and so does this parser.
        let ours = Btf::parse(blob).unwrap();
        assert_eq!(
            TracepointIds::find(&ours).unwrap(),
            TracepointIds {
                sys_enter: 5,
                sys_exit: 9
            }
        );
        assert!(matches!(
            ours.typedef_ids(["nope"]),
            Err(BtfError::NoType(_))
        ));
        // A function, by its own kind.
        let func = aya_obj::btf::BtfKind::Func;
        assert_eq!(
            aya.id_by_type_name_kind("__x64_sys_openat", func).unwrap(),
            7
        );
        assert!(
            aya.id_by_type_name_kind("btf_trace_sys_exit", func)
                .is_err()
        );
        assert_eq!(
            ours.func_ids(&["nope", "__x64_sys_openat", "btf_trace_sys_exit"]),
            [None, Some(7), None]
        );
    }

    #[test]
    fn this_kernels_tracepoint_ids_are_the_ones_aya_finds() {
        if !reads_vmlinux("this_kernels_tracepoint_ids_are_the_ones_aya_finds") {
            return;
        }
        let ids = TracepointIds::find(&Btf::from_sys().unwrap()).unwrap();
        let aya = aya::Btf::from_sys_fs().unwrap();
        let kind = aya_obj::btf::BtfKind::Typedef;
        assert_eq!(
            aya.id_by_type_name_kind("btf_trace_sys_enter", kind)
                .unwrap(),
            ids.sys_enter
        );
        assert_eq!(
            aya.id_by_type_name_kind("btf_trace_sys_exit", kind)
                .unwrap(),
            ids.sys_exit
        );
    }
}
