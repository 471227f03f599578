//! A syscall's argument names and types, from its tracefs
//! `events/syscalls/sys_enter_<name>/format` file (parsed by [`crate::tracefs_format`];
//! reading the file is `kernel::tracefs`).

use crate::tracefs_format;

/// How a raw 64-bit argument register is shown before any beautifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// A pointer: hex.
    Pointer,
    /// A C int-sized signed value (int, pid_t…): low 32 bits, signed.
    I32,
    /// unsigned int, umode_t, uid_t…: low 32 bits.
    U32,
    /// long, loff_t, off_t: signed 64.
    I64,
    /// unsigned long, size_t and anything else: unsigned 64.
    U64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgSpec {
    pub name: String,
    pub kind: ArgKind,
    /// The C type as tracefs spells it.
    pub ty: String,
}

const I32_TYPES: &[&str] = &[
    "int",
    "pid_t",
    "clockid_t",
    "key_serial_t",
    "__s32",
    "timer_t",
    "mqd_t",
    "rwf_t",
    "s32",
];
const U32_TYPES: &[&str] = &[
    "unsigned int",
    "unsigned",
    "u32",
    "__u32",
    "uid_t",
    "gid_t",
    "qid_t",
    "umode_t",
    "old_uid_t",
    "old_gid_t",
];
const I64_TYPES: &[&str] = &[
    "long",
    "loff_t",
    "off_t",
    "__kernel_old_time_t",
    "s64",
    "__s64",
];

pub fn kind_of(ty: &str) -> ArgKind {
    let ty = ty.trim();
    if ty.contains('*') {
        ArgKind::Pointer
    } else if I32_TYPES.contains(&ty) {
        ArgKind::I32
    } else if U32_TYPES.contains(&ty) {
        ArgKind::U32
    } else if I64_TYPES.contains(&ty) {
        ArgKind::I64
    } else {
        ArgKind::U64
    }
}

/// The syscall's arguments, in order: every `field:` line after the common ones and
/// `__syscall_nr`. A field without an offset still counts: arguments are told apart by
/// their place (the register), not by where the format puts them.
pub fn parse_format(text: &str) -> Vec<ArgSpec> {
    tracefs_format::parse(text)
        .fields
        .into_iter()
        .filter(|f| !f.name.starts_with("common_") && f.name != "__syscall_nr")
        // A syscall has six registers of arguments, and a record carries six: a format
        // with more fields (only a damaged record file's) would index past them.
        .take(MAX_ARGS)
        .map(|f| ArgSpec {
            name: f.name.to_string(),
            kind: kind_of(f.ty),
            ty: f.ty.to_string(),
        })
        .collect()
}

/// Arguments a syscall has at most (`SyscallRecord::args`).
const MAX_ARGS: usize = 6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_keeps_six_arguments_at_most() {
        let text: String = (0..8)
            .map(|i| {
                format!(
                    "\tfield:int a{i};\toffset:{};\tsize:8;\tsigned:0;\n",
                    16 + 8 * i
                )
            })
            .collect();
        let args = parse_format(&text);
        assert_eq!(args.len(), 6);
        assert_eq!(args[5].name, "a5");
    }

    const OPENAT: &str = "name: sys_enter_openat
ID: 700
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;
\tfield:int dfd;\toffset:16;\tsize:8;\tsigned:0;
\tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;
\tfield:int flags;\toffset:32;\tsize:8;\tsigned:0;
\tfield:umode_t mode;\toffset:40;\tsize:8;\tsigned:0;

print fmt: \"dfd: 0x%08lx, filename: 0x%08lx\", ((unsigned long)(REC->dfd))
";

    #[test]
    fn parses_openat() {
        let args = parse_format(OPENAT);
        let got: Vec<(&str, ArgKind)> = args.iter().map(|a| (a.name.as_str(), a.kind)).collect();
        assert_eq!(
            got,
            [
                ("dfd", ArgKind::I32),
                ("filename", ArgKind::Pointer),
                ("flags", ArgKind::I32),
                ("mode", ArgKind::U32),
            ]
        );
    }

    #[test]
    fn kinds() {
        assert_eq!(kind_of("size_t"), ArgKind::U64);
        assert_eq!(kind_of("char __user *"), ArgKind::Pointer);
        assert_eq!(kind_of("loff_t"), ArgKind::I64);
        assert_eq!(kind_of("unsigned int"), ArgKind::U32);
    }

    #[test]
    fn an_argument_without_offset_keeps_its_place() {
        let args = parse_format("\tfield:int dfd;\n\tfield:const char * filename;\toffset:24;\n");
        let names: Vec<&str> = args.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["dfd", "filename"]);
    }

    #[test]
    fn empty_format_has_no_args() {
        assert!(parse_format("").is_empty());
    }
}
