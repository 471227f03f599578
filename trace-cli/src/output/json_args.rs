//! One argument of a call as `--json` writes it: an object with `"raw"` (the register
//! as its C type reads) and what the line shows of it, as data: an fd and its path,
//! a string, argv's strings, flag names, a struct's fields. Each beauty of the line
//! (decode/beauty) has its JSON form here; the schema is docs/rtrace-json.schema.json.

use std::borrow::Cow;

use trace_common::{SyscallRecord, record::Augmented};

use crate::decode::{
    SyscallInfo,
    args::Arg,
    beauty::{
        self, Beauty, Style,
        context::{self, RetShown},
    },
    fd_effect::{self, FdEffect},
    fd_table,
};
use crate::output::{
    formatter::FdPath,
    json_structs::{self as structs, names_of},
    json_write::{Obj, text_fields},
};

const AT_FDCWD: i32 = -100;

/// What one argument's value needs beside the argument.
pub struct Ctx<'a, 'p> {
    pub fd_path: FdPath<'a, 'p>,
    /// Entries of argv, directories and poll's fds shown (`--string-limit`).
    pub items: usize,
    pub scratch: &'a mut String,
}

/// Writes the argument's object. `b` and `mem`: how it reads once the call is over
/// and what was read of the memory it points to ([`Arg::written`]); `used`: whether
/// the call uses it (else its raw value alone).
pub fn write(
    out: &mut Vec<u8>,
    arg: &Arg<'_>,
    b: Beauty,
    mem: Option<Result<Augmented<'_>, ()>>,
    used: bool,
    cx: &mut Ctx<'_, '_>,
) {
    let raw = arg.raw;
    let mut o = Obj::new(out);
    // Every C value fits an i64 or a u64, whose digits are quicker than an i128's.
    let c = arg.as_c();
    match i64::try_from(c) {
        Ok(v) => o.num("raw", v),
        Err(_) => o.num("raw", c),
    }
    if !used {
        o.end();
        return;
    }
    match b {
        Beauty::Raw(_) | Beauty::Hex => {}
        Beauty::Fd | Beauty::Dfd => {
            let fd = raw as u32 as i32;
            o.num("fd", fd);
            if matches!(b, Beauty::Dfd) && fd == AT_FDCWD {
                o.str("name", "CWD");
            }
            if let Some(path) = (cx.fd_path)(fd) {
                o.text("path", path);
            }
        }
        Beauty::Pid => o.num("pid", raw as u32 as i32),
        Beauty::Id => o.num(
            "id",
            match raw as u32 {
                u32::MAX => -1,
                id => i64::from(id),
            },
        ),
        Beauty::Flags(_)
        | Beauty::Enum(_)
        | Beauty::OpenFlags
        | Beauty::SocketType
        | Beauty::FutexOp
        | Beauty::Signal
        | Beauty::CloneFlags => {
            cx.scratch.clear();
            beauty::write_arg(cx.scratch, b, raw, None, Style::default());
            names_of(o.key("names"), cx.scratch);
        }
        _ => match mem {
            Some(Ok(aug)) if memory(&mut o, b, aug, cx) => {}
            _ => structs::pointer(o.key("ptr"), raw),
        },
    }
    o.end();
}

/// What was read of the program's memory, as fields of the argument's object; false
/// when it cannot be decoded (too short for its struct).
fn memory(o: &mut Obj<'_>, b: Beauty, aug: Augmented<'_>, cx: &mut Ctx<'_, '_>) -> bool {
    let bytes = aug.bytes;
    let more = match b {
        Beauty::Str | Beauty::Buffer | Beauty::ReadBuffer => {
            text_fields(o, bytes);
            aug.cut
        }
        Beauty::ReadPath => {
            let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
            text_fields(o, &bytes[..end]);
            aug.cut
        }
        Beauty::Argv | Beauty::Envp => structs::strings(o.key("items"), &aug, cx.items),
        Beauty::Dirents => structs::dirents(o.key("items"), bytes, cx.items) || aug.cut,
        Beauty::PollFds | Beauty::PollFdsAsked => {
            let answered = matches!(b, Beauty::PollFds);
            let key = o.key("items");
            structs::pollfds(key, bytes, cx.items, answered, cx.scratch) || aug.cut
        }
        Beauty::FdPair => return o.try_field("fds", |v| structs::fd_pair(v, bytes)),
        Beauty::SigSet | Beauty::SigSetOut => return structs::sigset_fields(o, bytes),
        _ => {
            let scratch = &mut *cx.scratch;
            return o.try_field("struct", |v| structs::write(v, b, bytes, scratch));
        }
    };
    if more {
        o.bool("truncated", true);
    }
    true
}

/// The new fd a call returned, and what it refers to where that is known.
pub struct NewFd<'p> {
    pub fd: i32,
    pub path: Option<Cow<'p, [u8]>>,
}

impl NewFd<'_> {
    /// `{"fd": 3, "path": "/etc/hostname"}` (no path where none is known).
    pub fn write(&self, out: &mut Vec<u8>) {
        let mut o = Obj::new(out);
        o.num("fd", self.fd);
        if let Some(p) = &self.path {
            o.text("path", p);
        }
        o.end();
    }
}

/// The fd a successful call returned: an open's (its path as the call gave it, when
/// it was read whole), a dup's (what the old fd refers to), or a new fd of something
/// without a path, named as /proc names it where rtrace can know that (a socket's
/// `socket:[INODE]`, an eventfd's `anon_inode:[eventfd]`, a memfd's `/memfd:NAME
/// (deleted)`). None for a call that returns no fd.
pub fn ret_fd<'a, 'm: 'a, 'p: 'a>(
    rec: &SyscallRecord,
    info: &SyscallInfo,
    mem: &dyn Fn(usize) -> Option<Result<Augmented<'m>, ()>>,
    fd_path: FdPath<'_, 'p>,
) -> Option<NewFd<'a>> {
    let fd = i32::try_from(rec.ret).ok()?;
    let path = match info.fd_effect {
        FdEffect::Open { .. } => first_string(info, mem),
        FdEffect::Dup | FdEffect::Dup3 => fd_path(rec.args[0] as u32 as i32),
        FdEffect::NewFd(new) => {
            let arg = first_string(info, mem);
            return Some(NewFd {
                fd,
                path: fd_table::named(new.name, arg, fd_table::inodes(rec).map(|i| i[1]))
                    .map(|p| Cow::Owned(p.into_vec())),
            });
        }
        FdEffect::Signalfd(_) if rec.args[0] as u32 as i32 == -1 => {
            let path = fd_table::named(fd_effect::SIGNALFD, None, None);
            return Some(NewFd {
                fd,
                path: path.map(|p| Cow::Owned(p.into_vec())),
            });
        }
        FdEffect::Fcntl => match context::ret_shown(&info.name, &rec.args) {
            Some(RetShown::DupOf(old)) => fd_path(old),
            _ => return None,
        },
        _ => return None,
    };
    Some(NewFd {
        fd,
        path: path.map(Cow::Borrowed),
    })
}

/// The call's first string argument, when it was read whole.
fn first_string<'m>(
    info: &SyscallInfo,
    mem: &dyn Fn(usize) -> Option<Result<Augmented<'m>, ()>>,
) -> Option<&'m [u8]> {
    let i = info
        .beauties
        .iter()
        .position(|b| matches!(b, Beauty::Str))?;
    mem(i)?.ok().filter(|a| !a.cut).map(|a| a.bytes)
}

/// `"ret_names"`: a return the line shows as flags (fcntl's F_GETFL and F_GETFD), by
/// name; nothing for the other calls.
pub fn ret_names(o: &mut Obj<'_>, rec: &SyscallRecord, info: &SyscallInfo, scratch: &mut String) {
    let b = match context::ret_shown(&info.name, &rec.args) {
        Some(RetShown::OpenFlags) => Beauty::OpenFlags,
        Some(RetShown::FdFlags) => Beauty::Flags(&beauty::tables::FD_FLAGS),
        _ => return,
    };
    scratch.clear();
    beauty::write_arg(scratch, b, rec.ret as u64, None, Style::default());
    names_of(o.key("ret_names"), scratch);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{beauty::tables, format::ArgKind};

    fn arg(raw: u64, kind: ArgKind) -> Arg<'static> {
        Arg {
            index: 0,
            name: "x",
            kind,
            raw,
            beauty: None,
        }
    }

    fn json(raw: u64, kind: ArgKind, b: Beauty, mem: Option<(&[u8], bool)>) -> serde_json::Value {
        let mut out = Vec::new();
        let mut scratch = String::new();
        let mut cx = Ctx {
            fd_path: &|fd| (fd == 3).then_some(&b"/etc/hostname"[..]),
            items: 2,
            scratch: &mut scratch,
        };
        let mem = mem.map(|(bytes, cut)| Ok(Augmented { bytes, cut }));
        write(&mut out, &arg(raw, kind), b, mem, true, &mut cx);
        serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    }

    #[test]
    fn strings_are_json_strings_and_bytes_that_are_not_utf8_are_kept() {
        let v = json(
            0x1000,
            ArgKind::Pointer,
            Beauty::Str,
            Some((b"/x\"y", false)),
        );
        assert_eq!(v, serde_json::json!({"raw": 4096, "str": "/x\"y"}));
        let v = json(1, ArgKind::Pointer, Beauty::Buffer, Some((b"a\xff", true)));
        assert_eq!(
            v,
            serde_json::json!({"raw": 1, "str": "a\u{fffd}", "hex": "61ff", "truncated": true})
        );
        // Memory that was not read: the pointer, as a hex string.
        let v = json(0x7f00, ArgKind::Pointer, Beauty::Str, None);
        assert_eq!(v, serde_json::json!({"raw": 0x7f00, "ptr": "0x7f00"}));
    }

    #[test]
    fn argv_is_an_array_cut_at_the_limit() {
        let v = json(
            1,
            ArgKind::Pointer,
            Beauty::Argv,
            Some((b"cat\0/etc/hostname\0", false)),
        );
        assert_eq!(v["items"], serde_json::json!(["cat", "/etc/hostname"]));
        assert!(v.get("truncated").is_none(), "{v}");
        let v = json(
            1,
            ArgKind::Pointer,
            Beauty::Argv,
            Some((b"a\0b\xfe\0c\0", false)),
        );
        assert_eq!(
            v["items"],
            serde_json::json!(["a", {"str": "b\u{fffd}", "hex": "62fe"}])
        );
        assert_eq!(v["truncated"], true);
    }

    #[test]
    fn fds_carry_their_path_and_minus_one_is_minus_one() {
        let v = json(3, ArgKind::U32, Beauty::Fd, None);
        assert_eq!(
            v,
            serde_json::json!({"raw": 3, "fd": 3, "path": "/etc/hostname"})
        );
        let v = json(u64::from(u32::MAX), ArgKind::U32, Beauty::Fd, None);
        assert_eq!(v["fd"], -1);
        let v = json((-100i64) as u64, ArgKind::I32, Beauty::Dfd, None);
        assert_eq!(
            v,
            serde_json::json!({"raw": -100, "fd": -100, "name": "CWD"})
        );
    }

    #[test]
    fn flags_are_names_beside_the_number() {
        let raw = libc::O_CLOEXEC as u64;
        let v = json(raw, ArgKind::I32, Beauty::OpenFlags, None);
        assert_eq!(
            v,
            serde_json::json!({"raw": 524288, "names": ["RDONLY", "CLOEXEC"]})
        );
        let v = json(0x43, ArgKind::U64, Beauty::Flags(&tables::PROT), None);
        assert_eq!(v["names"], serde_json::json!(["READ", "WRITE", "0x40"]));
        // A value without a name is the number alone.
        let v = json(0x1234, ArgKind::U32, Beauty::Enum(&tables::IOCTL_CMD), None);
        assert_eq!(v["names"], serde_json::json!([]));
    }

    #[test]
    fn structs_are_objects() {
        let mut sin = vec![2u8, 0, 0, 22, 127, 0, 0, 1];
        sin.extend_from_slice(&[0; 8]);
        let v = json(1, ArgKind::Pointer, Beauty::Sockaddr, Some((&sin, false)));
        assert_eq!(
            v["struct"],
            serde_json::json!({"family": "INET", "port": 22, "addr": "127.0.0.1"})
        );
        let mut ts = 1i64.to_ne_bytes().to_vec();
        ts.extend_from_slice(&5i64.to_ne_bytes());
        let v = json(1, ArgKind::Pointer, Beauty::Timespec, Some((&ts, false)));
        assert_eq!(v["struct"], serde_json::json!({"tv_sec": 1, "tv_nsec": 5}));
        let v = json(
            1,
            ArgKind::Pointer,
            Beauty::WaitStatus,
            Some((&(3i32 << 8).to_ne_bytes(), false)),
        );
        assert_eq!(
            v["struct"],
            serde_json::json!({"raw": 768, "kind": "exited", "status": 3})
        );
        let mut pair = 3i32.to_ne_bytes().to_vec();
        pair.extend_from_slice(&4i32.to_ne_bytes());
        let v = json(1, ArgKind::Pointer, Beauty::FdPair, Some((&pair, false)));
        assert_eq!(v["fds"], serde_json::json!([3, 4]));
        // Too short for its struct: the pointer, as the line falls back to it.
        let v = json(0x10, ArgKind::Pointer, Beauty::Stat, Some((&[0; 8], false)));
        assert_eq!(v, serde_json::json!({"raw": 16, "ptr": "0x10"}));
        let mut r = 8u64.to_ne_bytes().to_vec();
        r.extend(u64::MAX.to_ne_bytes());
        let v = json(1, ArgKind::Pointer, Beauty::Rlimit, Some((&r, false)));
        assert_eq!(
            v["struct"],
            serde_json::json!({"rlim_cur": 8, "rlim_max": "RLIM_INFINITY"})
        );
    }
}
