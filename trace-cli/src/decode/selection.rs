//! `-e/--expr/--event`: which syscalls to trace. A comma list of names, globs (`open*`),
//! perf's aliases (`newstat` for `stat`…) and group (`string`), and strace's classes
//! (`%file`, `%net`, `network`…, see [`strace_classes`]); a leading `!` selects
//! everything but the list. strace's `trace=` before the list is taken; its other
//! qualifiers (`signal=`, `read=`…) are refused by name.

use thiserror::Error;

use crate::decode::{strace_classes, syscall_table};

#[derive(Debug, Error, PartialEq)]
pub enum SelectionError {
    #[error("-e '{0}' selects no syscall{1}")]
    Empty(String, Suggestion),
    #[error(
        "-e '{0}': strace's {1}= qualifier has no rtrace equivalent (rtrace takes strace's trace=)"
    )]
    StraceQualifier(String, String),
    #[error("-e '{0}': no class {0}; strace's classes here are {1}")]
    UnknownClass(String, String),
}

/// ` (did you mean openat?)`, or nothing.
#[derive(Debug, Default, PartialEq)]
pub struct Suggestion(pub Option<&'static str>);

impl std::fmt::Display for Suggestion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(name) => write!(f, " (did you mean {name}?)"),
            None => Ok(()),
        }
    }
}

/// strace's `-e` qualifiers other than `trace=` (and their short forms).
const STRACE_QUALIFIERS: &[&str] = &[
    "abbrev",
    "a",
    "verbose",
    "v",
    "raw",
    "x",
    "signal",
    "signals",
    "s",
    "read",
    "reads",
    "r",
    "write",
    "writes",
    "w",
    "fault",
    "inject",
    "status",
    "quiet",
    "silent",
    "silence",
    "q",
    "decode-fds",
    "decode-fd",
    "decode-pids",
    "decode-pid",
    "kvm",
    "trace-fds",
    "trace-fd",
    "fd",
    "fds",
];

/// The syscall name nearest to an unknown `word`, when it is near enough to be a typo:
/// at most two edits (a swap of neighbours is one), and fewer than a third of the word.
pub fn nearest(word: &str) -> Suggestion {
    let best = all_syscalls()
        .map(|(_, name)| (strsim::osa_distance(word, name), name))
        .min();
    Suggestion(best.and_then(|(d, name)| (d > 0 && d <= 2 && d * 3 < word.len()).then_some(name)))
}

#[derive(Debug, Default, PartialEq)]
pub struct Selection {
    /// Selected syscall numbers, ascending.
    pub nrs: Vec<u32>,
    /// Names that matched nothing (warned about, then skipped).
    pub unknown: Vec<String>,
}

/// Syscalls with a string argument (perf's `string` group): the file ones and more.
const STRING_EXTRA: &[&str] = &[
    "add_key",
    "delete_module",
    "finit_module",
    "fgetxattr",
    "fremovexattr",
    "fsetxattr",
    "init_module",
    "memfd_create",
    "mq_open",
    "mq_timedsend",
    "mq_unlink",
    "request_key",
    "sethostname",
    "setdomainname",
];

/// `*` any run of characters, `?` one character.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// The table name a user's word stands for (perf's aliases go both ways).
fn canonical(word: &str) -> &str {
    syscall_table::table_name_of_event(word).unwrap_or(word)
}

fn all_syscalls() -> impl Iterator<Item = (u32, &'static str)> {
    (0..syscall_table::MAX_NR).filter_map(|nr| Some((nr, syscall_table::name(nr)?)))
}

/// One `-e` value without strace's `trace=` (or `t=`) before it; strace's other
/// qualifiers are refused by name.
pub fn unqualified(value: &str) -> Result<&str, SelectionError> {
    match value.split_once('=') {
        Some(("trace" | "t", list)) => Ok(list),
        Some((q, _)) if STRACE_QUALIFIERS.contains(&q) => {
            Err(SelectionError::StraceQualifier(value.into(), q.into()))
        }
        _ => Ok(value),
    }
}

pub fn parse(expr: &str) -> Result<Selection, SelectionError> {
    let expr = unqualified(expr)?;
    let (negate, list) = match expr.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, expr),
    };
    let mut chosen = std::collections::BTreeSet::new();
    let mut unknown = Vec::new();
    for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let before = chosen.len();
        let file = || strace_classes::named("%file").map_or(&[][..], |c| c.calls);
        let group: Option<Vec<&str>> = match word {
            "string" => Some(file().iter().chain(STRING_EXTRA).copied().collect()),
            // strace's `trace=all`.
            "all" => Some(all_syscalls().map(|(_, name)| name).collect()),
            w => match strace_classes::named(w) {
                Some(class) => Some(class.calls.to_vec()),
                None if w.starts_with('%') => {
                    let known: Vec<&str> =
                        strace_classes::CLASSES.iter().map(|c| c.names[0]).collect();
                    return Err(SelectionError::UnknownClass(w.into(), known.join(", ")));
                }
                None => None,
            },
        };
        let mut matched = false;
        for (nr, name) in all_syscalls() {
            let hit = match &group {
                Some(g) => g.contains(&name),
                None if word.contains(['*', '?']) => glob_match(word, name),
                None => canonical(word) == name,
            };
            if hit {
                chosen.insert(nr);
                matched = true;
            }
        }
        if !matched && chosen.len() == before {
            unknown.push(word.to_string());
        }
    }
    let nrs: Vec<u32> = if negate {
        all_syscalls()
            .map(|(nr, _)| nr)
            .filter(|nr| !chosen.contains(nr))
            .collect()
    } else {
        chosen.into_iter().collect()
    };
    if nrs.is_empty() {
        let hint = match unknown.as_slice() {
            [one] => nearest(one),
            _ => Suggestion(None),
        };
        return Err(SelectionError::Empty(expr.to_string(), hint));
    }
    Ok(Selection { nrs, unknown })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of the native part of a selection.
    fn names(s: &Selection) -> Vec<&'static str> {
        s.nrs
            .iter()
            .filter(|&&nr| nr < trace_common::maps::COMPAT_BASE)
            .map(|&nr| syscall_table::name(nr).unwrap())
            .collect()
    }

    #[test]
    fn globs() {
        assert!(glob_match("open*", "openat"));
        assert!(glob_match("open*", "open"));
        assert!(!glob_match("open*", "fsopen"));
        assert!(!glob_match("*stat", "newfstatat"));
        assert!(glob_match("*stat*", "newfstatat"));
        assert!(!glob_match("rename?", "renameat"));
        assert!(glob_match("renamea?", "renameat"));
    }

    #[test]
    fn lists_globs_and_negation() {
        let s = parse("openat,close").unwrap();
        assert_eq!(names(&s), ["close", "openat"]);
        let s = parse("open*").unwrap();
        assert!(names(&s).contains(&"openat") && names(&s).contains(&"open_tree"));
        assert!(!names(&s).contains(&"close"));
        let all = all_syscalls().count();
        let s = parse("!openat,close").unwrap();
        // Both tables: native and 32-bit.
        assert_eq!(s.nrs.len(), all - 4);
        assert!(!names(&s).contains(&"openat"));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn aliases_groups_and_unknown_names() {
        assert_eq!(names(&parse("newstat").unwrap()), ["stat"]);
        assert_eq!(names(&parse("stat").unwrap()), ["stat"]);
        let file = parse("file").unwrap();
        assert!(names(&file).contains(&"openat") && !names(&file).contains(&"read"));
        let string = parse("string").unwrap();
        assert!(string.nrs.len() > file.nrs.len());
        let s = parse("openat,nosuchcall").unwrap();
        assert_eq!(s.unknown, ["nosuchcall"]);
        assert_eq!(
            parse("nosuchcall"),
            Err(SelectionError::Empty("nosuchcall".into(), Suggestion(None)))
        );
    }

    #[test]
    fn strace_spellings_of_classes_and_trace_qualifier() {
        let file = parse("trace=file").unwrap();
        assert_eq!(file, parse("%file").unwrap());
        assert_eq!(file, parse("file").unwrap());
        assert!(names(&file).contains(&"openat") && !names(&file).contains(&"read"));
        let net = parse("trace=%net").unwrap();
        assert_eq!(net, parse("network").unwrap());
        assert!(names(&net).contains(&"connect") && !names(&net).contains(&"openat"));
        assert_eq!(names(&parse("trace=openat").unwrap()), ["openat"]);
        assert_eq!(
            parse("trace=all").unwrap().nrs.len(),
            all_syscalls().count()
        );
        assert!(!names(&parse("trace=!openat").unwrap()).contains(&"openat"));
        assert!(matches!(
            parse("signal=SIGINT"),
            Err(SelectionError::StraceQualifier(_, q)) if q == "signal"
        ));
        let e = parse("%nosuch").unwrap_err().to_string();
        assert!(e.contains("no class %nosuch") && e.contains("%file"), "{e}");
    }

    /// strace takes `reads=` for `read=` and `writes=` for `write=`: each long spelling
    /// is refused by name as its short one is, never read as a syscall list.
    #[test]
    fn strace_plural_spellings_of_read_and_write_are_refused_alike() {
        for q in ["read", "reads", "write", "writes"] {
            assert_eq!(
                parse(&format!("{q}=3")).unwrap_err().to_string(),
                format!(
                    "-e '{q}=3': strace's {q}= qualifier has no rtrace equivalent \
                     (rtrace takes strace's trace=)"
                )
            );
        }
    }

    #[test]
    fn a_typo_gets_the_nearest_name() {
        let e = parse("opnat").unwrap_err();
        assert_eq!(
            e.to_string(),
            "-e 'opnat' selects no syscall (did you mean openat?)"
        );
        let s = parse("openat,clsoe").unwrap();
        assert_eq!(s.unknown, ["clsoe"]);
        assert_eq!(nearest("clsoe").0, Some("close"));
        // Far from every name: no guess.
        assert_eq!(nearest("xyzzyplugh").0, None);
        assert_eq!(nearest("abc").0, None);
    }
}
