//! Tracepoint events chosen with `-e cat:name` (globs in either part), decoded from
//! their tracefs formats and printed in perf trace's shape. The kernel side sends each
//! target task's raw record (`trace-ebpf/src/events.rs`); `--filter` is evaluated here.

pub mod filter;
pub mod format;
pub mod print;

use thiserror::Error;

use crate::decode::selection::glob_match;
use filter::{Filter, FilterError};
use format::Field;

pub use trace_common::record::MAX_EVENTS;

#[derive(Debug, Error, PartialEq)]
pub enum EventsError {
    #[error(
        "-e '{0}' matches no tracepoint event{1} (they are listed in /sys/kernel/tracing/available_events)"
    )]
    NoMatch(String, Nearest),
    #[error(
        "-e '{spec}': perf's event terms ({terms}) are not supported here; name the event alone"
    )]
    Terms { spec: String, terms: String },
    #[error("-e '{spec}' names {count} events; at most {MAX_EVENTS} are traced at once")]
    TooMany { spec: String, count: usize },
    #[error("cannot read the format of {0}")]
    Format(String),
    #[error("--filter needs a tracepoint event before it (-e cat:name)")]
    FilterWithoutEvent,
    #[error(transparent)]
    Filter(#[from] FilterError),
}

/// One event to trace.
#[derive(Debug, Clone)]
pub struct TpEvent {
    pub category: String,
    pub name: String,
    pub id: u16,
    pub fields: Vec<Field>,
    pub filter: Option<Filter>,
    /// For `syscalls:sys_enter_<call>`, the call's native number: the kernel side sends
    /// the event as the call's entry, with what its arguments point to, and it is shown
    /// decoded as the call is ([`syscall_entry_of`]).
    pub syscall: Option<u32>,
}

/// The native syscall whose entry the event `category:name` is, if it is one.
pub fn syscall_entry_of(category: &str, name: &str) -> Option<u32> {
    let event = name
        .strip_prefix("sys_enter_")
        .filter(|_| category == "syscalls")?;
    let call = crate::decode::syscall_table::table_name_of_event(event).unwrap_or(event);
    crate::decode::syscall_table::number(call)
}

/// A syscall entry event's record as tracefs lays it out (`int __syscall_nr` at 8, the
/// arguments from 16), rebuilt from what the kernel side sent: for `--filter` on its
/// fields, and the formats that show an event's raw fields.
pub fn syscall_entry_record(nr: u32, args: &[u64; 6]) -> [u8; 64] {
    let mut data = [0u8; 64];
    data[8..12].copy_from_slice(&nr.to_ne_bytes());
    for (i, a) in args.iter().enumerate() {
        data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
    }
    data
}

/// ` (did you mean sched:sched_switch?)`, or nothing.
#[derive(Debug, PartialEq)]
pub struct Nearest(Option<String>);

impl std::fmt::Display for Nearest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(name) => write!(f, " (did you mean {name}?)"),
            None => Ok(()),
        }
    }
}

/// The available event nearest to a `cat:name` that matched none, when near enough to
/// be a typo (as for syscall names: at most two edits, under a third of the word).
fn nearest(spec: &str, available: &[(String, String)]) -> Nearest {
    if spec.contains(['*', '?']) {
        return Nearest(None);
    }
    let best = available
        .iter()
        .map(|(c, n)| {
            let full = format!("{c}:{n}");
            (strsim::osa_distance(spec, &full), full)
        })
        .min();
    Nearest(best.and_then(|(d, full)| (d > 0 && d <= 2 && d * 3 < spec.len()).then_some(full)))
}

/// `cat:name` pairs matching `spec` among `available` (tracefs's `available_events`).
pub fn expand<'a>(spec: &str, available: &'a [(String, String)]) -> Vec<&'a (String, String)> {
    let (cat, name) = spec.split_once(':').unwrap_or(("*", spec));
    available
        .iter()
        .filter(|(c, n)| glob_match(cat, c) && glob_match(name, n))
        .collect()
}

/// The events for `specs`, with `filter` on those of the last spec (perf applies
/// `--filter` to the events of the `-e` before it). `format_of` reads an event's
/// format text.
pub fn resolve(
    specs: &[String],
    filter: Option<&str>,
    available: &[(String, String)],
    format_of: &mut dyn FnMut(&str, &str) -> Option<String>,
) -> Result<Vec<TpEvent>, EventsError> {
    let mut out: Vec<TpEvent> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        // perf's `cat:name/nr=2,call-graph=fp/`: named, not taken for part of the name.
        if let Some(at) = spec.find('/') {
            return Err(EventsError::Terms {
                spec: spec.clone(),
                terms: spec[at..].to_string(),
            });
        }
        let matched = expand(spec, available);
        if matched.is_empty() {
            return Err(EventsError::NoMatch(spec.clone(), nearest(spec, available)));
        }
        if matched.len() + out.len() > MAX_EVENTS {
            return Err(EventsError::TooMany {
                spec: spec.clone(),
                count: matched.len() + out.len(),
            });
        }
        let last = i + 1 == specs.len();
        for (cat, name) in matched {
            if out.iter().any(|e| &e.category == cat && &e.name == name) {
                continue;
            }
            let text =
                format_of(cat, name).ok_or_else(|| EventsError::Format(format!("{cat}:{name}")))?;
            let (id, fields) = format::parse(&text);
            let id = id.ok_or_else(|| EventsError::Format(format!("{cat}:{name}")))?;
            let filter = match filter {
                Some(expr) if last => Some(filter::parse(expr, &fields)?),
                _ => None,
            };
            out.push(TpEvent {
                category: cat.clone(),
                name: name.clone(),
                id,
                fields,
                filter,
                syscall: syscall_entry_of(cat, name),
            });
        }
    }
    if filter.is_some() && out.is_empty() {
        return Err(EventsError::FilterWithoutEvent);
    }
    Ok(out)
}

/// The chosen events by id, as the reader looks them up.
#[derive(Default)]
pub struct EventTable {
    by_index: Vec<TpEvent>,
    /// Whether a `pid_t` field can be named from the tasks rtrace saw: the fields hold
    /// the kernel's pids, which are rtrace's only in the initial pid namespace.
    pub names_pids: bool,
}

impl EventTable {
    pub fn new(events: Vec<TpEvent>, names_pids: bool) -> Self {
        Self {
            by_index: events,
            names_pids,
        }
    }

    /// The event of a record's index (`SyscallRecord::nr` of a `KIND_EVENT`).
    pub fn get(&self, index: u32) -> Option<&TpEvent> {
        self.by_index.get(usize::try_from(index).ok()?)
    }
}

/// The words of one `-e` value: split at commas, but not inside perf's `/terms/`
/// (`sched:sched_switch/call-graph=fp,max-stack=4/` is one word).
fn words_of(arg: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let (mut start, mut in_terms) = (0, false);
    for (i, c) in arg.char_indices() {
        match c {
            '/' => in_terms = !in_terms,
            ',' if !in_terms => {
                words.push(&arg[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    words.push(&arg[start..]);
    words
}

/// Splits `-e` words into syscall words and event specs (those with a `:`, and perf's
/// event syntax with `/terms/`, which resolving then names).
pub fn split_expr(words: &[String]) -> (Vec<String>, Vec<String>) {
    let mut syscalls = Vec::new();
    let mut events = Vec::new();
    for arg in words {
        // A leading `!` negates a syscall list; it has no events.
        if arg.starts_with('!') {
            syscalls.push(arg.clone());
            continue;
        }
        let (e, s): (Vec<&str>, Vec<&str>) = words_of(arg)
            .into_iter()
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .partition(|w| w.contains([':', '/']));
        events.extend(e.into_iter().map(String::from));
        if !s.is_empty() {
            syscalls.push(s.join(","));
        }
    }
    (syscalls, events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn available() -> Vec<(String, String)> {
        [
            ("sched", "sched_switch"),
            ("sched", "sched_process_exec"),
            ("sched", "sched_process_exit"),
            ("syscalls", "sys_enter_openat"),
            ("syscalls", "sys_enter_open"),
        ]
        .iter()
        .map(|(c, n)| (c.to_string(), n.to_string()))
        .collect()
    }

    #[test]
    fn globs_in_either_part() {
        let a = available();
        assert_eq!(expand("sched:*", &a).len(), 3);
        assert_eq!(expand("sched:sched_process_e*", &a).len(), 2);
        assert_eq!(expand("syscalls:sys_enter_open*", &a).len(), 2);
        assert_eq!(expand("*:sched_switch", &a).len(), 1);
        assert!(expand("sched:nosuch", &a).is_empty());
    }

    #[test]
    fn events_and_syscalls_are_told_apart() {
        let words = vec![
            "openat,sched:sched_switch".to_string(),
            "!close".to_string(),
        ];
        let (s, e) = split_expr(&words);
        assert_eq!(s, ["openat", "!close"]);
        assert_eq!(e, ["sched:sched_switch"]);
        // perf's terms stay with their event, commas and all; a PMU event is an event.
        let words = vec!["openat,sched:sched_switch/call-graph=fp,max-stack=4/,cpu/x=1/".into()];
        let (s, e) = split_expr(&words);
        assert_eq!(s, ["openat"]);
        assert_eq!(
            e,
            ["sched:sched_switch/call-graph=fp,max-stack=4/", "cpu/x=1/"]
        );
    }

    #[test]
    fn filter_goes_to_the_last_spec_and_unknown_events_are_refused() {
        let a = available();
        let fmt = |_: &str, _: &str| {
            Some("ID: 7\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n".to_string())
        };
        let specs = vec![
            "sched:sched_process_exit".to_string(),
            "sched:sched_switch".to_string(),
        ];
        let got = resolve(&specs, Some("prev_pid == 1"), &a, &mut { fmt }).unwrap();
        assert!(got[0].filter.is_none() && got[1].filter.is_some());
        let err = resolve(&["sched:nosuch".into()], None, &a, &mut { fmt }).unwrap_err();
        assert_eq!(
            err.to_string(),
            "-e 'sched:nosuch' matches no tracepoint event (they are listed in /sys/kernel/tracing/available_events)"
        );
    }

    #[test]
    fn a_typo_gets_the_nearest_event_and_perfs_terms_are_named() {
        let a = available();
        let fmt = |_: &str, _: &str| Some("ID: 7\n".to_string());
        let err = resolve(&["sched:sched_swich".into()], None, &a, &mut { fmt }).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("-e 'sched:sched_swich' matches no tracepoint event (did you mean sched:sched_switch?)"),
            "{err}"
        );
        let err = resolve(&["sched:*switch/nr=2/".into()], None, &a, &mut { fmt }).unwrap_err();
        assert_eq!(
            err.to_string(),
            "-e 'sched:*switch/nr=2/': perf's event terms (/nr=2/) are not supported here; name the event alone"
        );
    }
}
