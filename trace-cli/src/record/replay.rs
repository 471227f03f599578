//! `rtrace -i FILE`: a record printed as the live trace would have been, with this
//! command line's output options and filters. Pure but for reading the file.

use std::{
    fs::File,
    io::{BufRead, BufReader, Write},
    path::Path,
};

use trace_common::{SyscallRecord, record::KIND_EVENT};

use super::{
    SavedFormats,
    file::{self, Reader, RecordError},
    tally::Tally,
};
use crate::{
    config::{Config, Targets},
    decode::{
        Catalog,
        fd_table::{AsGiven, CWD_CALLS, FdTable, all_traced},
    },
    events::{EventTable, TpEvent, expand, filter, format},
    output::{
        self, Sink,
        printer::Printer,
        show::Chosen,
        summary::{SummaryOptions, render, render_json},
    },
};

/// The recorded events in their index order, `--filter` on those the last `-e` event
/// spec names (all of them without one).
fn events(
    cfg: &Config,
    saved: &[file::SavedEvent],
) -> Result<Vec<TpEvent>, crate::events::EventsError> {
    let pairs: Vec<(String, String)> = saved
        .iter()
        .map(|e| (e.category.clone(), e.name.clone()))
        .collect();
    let filtered: Vec<&(String, String)> = match cfg.events.last() {
        Some(spec) => expand(spec, &pairs),
        None => pairs.iter().collect(),
    };
    saved
        .iter()
        .map(|e| {
            let (id, fields) = format::parse(&e.format);
            let target = filtered
                .iter()
                .any(|(c, n)| *c == e.category && *n == e.name);
            let filter = match &cfg.event_filter {
                Some(expr) if target => Some(filter::parse(expr, &fields)?),
                _ => None,
            };
            Ok(TpEvent {
                category: e.category.clone(),
                name: e.name.clone(),
                id: id.unwrap_or(0),
                fields,
                filter,
                syscall: crate::events::syscall_entry_of(&e.category, &e.name),
            })
        })
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    Events(#[from] crate::events::EventsError),
    #[error("the record was made on {0}: this rtrace decodes {arch}'s syscalls", arch = std::env::consts::ARCH)]
    Machine(String),
    #[error("-i replays a record: {0}")]
    Usage(&'static str),
    #[error("opening {0:?}: {1}")]
    Output(std::path::PathBuf, std::io::Error),
}

/// Prints the record at `path`; returns the exit status. The records before a cut or
/// damage are printed (and summed up), then the error says where the file ends.
pub fn replay(cfg: &Config, path: &Path) -> Result<i32, ReplayError> {
    let shown_path = path.display().to_string();
    let input = BufReader::with_capacity(
        256 << 10,
        File::open(path).map_err(|source| RecordError::Io {
            path: shown_path.clone(),
            source,
        })?,
    );
    let replay = Replay::start(cfg, Reader::new(input, &shown_path))?;
    let mut out: Sink = output::sink(cfg.output.as_deref())
        .map_err(|e| ReplayError::Output(cfg.output.clone().unwrap_or_default(), e))?;
    let timeline = match &cfg.timeline {
        Some(p) => Some(
            output::timeline::Timeline::create(p, &cfg.line)
                .map_err(|e| ReplayError::Output(p.clone(), e))?,
        ),
        None => None,
    };
    let end = replay.with_timeline(timeline).run(&mut out);
    let _ = out.flush();
    end?;
    Ok(match out.failure() {
        Some(_) => 1,
        None => 0,
    })
}

/// A replay whose header has been read and checked: what prints its records. Works on
/// any byte source and any output (the fuzz target feeds it bytes and a `Vec`).
pub struct Replay<'c, R> {
    cfg: &'c Config,
    reader: Reader<R>,
    shown: Chosen,
    printer: Printer<'c, SavedFormats>,
}

impl<'c, R: BufRead> Replay<'c, R> {
    /// Reads the header and checks that this command line can replay it.
    pub fn start(cfg: &'c Config, mut reader: Reader<R>) -> Result<Self, ReplayError> {
        let header = reader.header()?;
        if header.machine != std::env::consts::ARCH {
            return Err(ReplayError::Machine(header.machine));
        }
        let mut shown = Chosen {
            nrs: cfg.selection.as_ref().map(|s| s.iter().copied().collect()),
            hidden_pids: cfg.filter_pids.clone(),
            ..Chosen::default()
        };
        if cfg.timer.is_some() {
            // `-i FILE -p PID -- cmd`: no command runs, beside -p either.
            return Err(ReplayError::Usage("it runs no command"));
        }
        match &cfg.targets {
            Targets::Workload(_)
            | Targets::System {
                workload: Some(_), ..
            } => {
                return Err(ReplayError::Usage("it runs no command"));
            }
            Targets::System { uid: Some(_), .. } => {
                return Err(ReplayError::Usage(
                    "-u cannot choose (the record has no uids)",
                ));
            }
            Targets::Pids(p) => shown.pids = Some(p.clone()),
            Targets::Tids(t) => shown.tids = Some(t.clone()),
            Targets::System { .. } => {}
        }
        let selection = header.selection.as_deref();
        let mut fds = FdTable::new(
            all_traced(selection, &["close"]),
            all_traced(selection, CWD_CALLS),
            // This machine's files are not the record's: paths stay as given.
            AsGiven,
        );
        // A record's seeds carry their fds (the command's were saved as rtrace's own).
        let seeds = header.seeds.iter().map(file::SavedSeed::to_seed).collect();
        fds.seed_procs(seeds, &[]);
        // -e: the events it names (none, when it names only syscalls), as live.
        if cfg.selection.is_some() || !cfg.events.is_empty() {
            let pairs: Vec<(String, String)> = header
                .events
                .iter()
                .map(|e| (e.category.clone(), e.name.clone()))
                .collect();
            shown.events = Some(
                pairs
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| {
                        cfg.events
                            .iter()
                            .any(|spec| !expand(spec, std::slice::from_ref(*p)).is_empty())
                    })
                    .map(|(i, _)| i as u32)
                    .collect(),
            );
        }
        let table = EventTable::new(events(cfg, &header.events)?, header.names_pids);
        let catalog = Catalog::new(SavedFormats(header.formats));
        // Syscalls shown beside the events: recorded, and not left out by this -e.
        let recorded = selection.is_none_or(|s| !s.is_empty());
        let chosen = cfg.selection.as_ref().is_none_or(|s| !s.is_empty());
        let printer = Printer::new(catalog, fds, cfg)
            .syscalls_traced(cfg, recorded && chosen)
            .with_events(table)
            .showing(|s| s.choosing(shown.clone()));
        Ok(Self {
            cfg,
            reader,
            shown,
            printer,
        })
    }

    /// `--timeline`: what is printed is written there too.
    pub fn with_timeline(mut self, timeline: Option<output::timeline::Timeline>) -> Self {
        self.printer = self.printer.with_timeline(timeline);
        self
    }

    /// Prints every record into `out`, then the summary; a file cut short or damaged
    /// is an error once what came before it is out.
    pub fn run(mut self, out: &mut impl Write) -> Result<(), ReplayError> {
        let cfg = self.cfg;
        let mut tally = cfg.summary.as_ref().map(|s| Tally::new(s.total, s.hist));
        // -s alone with --timeline: the calls go to the timeline only.
        let only_summary = cfg.summary.as_ref().is_some_and(|s| s.only) && cfg.timeline.is_none();
        let mut item = Vec::with_capacity(8192);
        let end = loop {
            match self.reader.next(&mut item) {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
            let Some(rec) = SyscallRecord::from_bytes(&item) else {
                continue;
            };
            if let Some(t) = &mut tally
                && self.shown.record(&rec)
                && let Err(why) = t.add(&rec)
            {
                break Err(RecordError::Bad {
                    path: self.reader.path().to_string(),
                    why: format!("damaged at record {}: {why}", self.reader.records()),
                });
            }
            // -s alone: the events' lines, not the calls' (as live).
            if only_summary && rec.kind != KIND_EVENT {
                continue;
            }
            if self.printer.take(&item, out) || self.printer.max_reached() {
                break Ok(());
            }
        };
        self.printer.flush_pending(None, out);
        if let Some(failed) = self.printer.end(None) {
            crate::say!("rtrace: {failed}");
        }
        if let (Some(t), Some(s)) = (tally, &cfg.summary) {
            let mut text = String::new();
            let opts = SummaryOptions {
                max_rows: s.max_rows,
                errno: s.errno,
                time_percent: s.time_percent,
            };
            if cfg.json {
                render_json(&mut text, t.sections(), &opts);
            } else {
                render(&mut text, t.sections(), &opts);
            }
            let _ = out.write_all(text.as_bytes());
        }
        Ok(end?)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use trace_common::record::{KIND_SYSCALL, REC_HAS_ENTRY, REC_HAS_EXIT, SYSCALL_RECORD_SIZE};

    use super::*;
    use crate::{
        cli::Args,
        record::file::{Header, write_header, write_item},
    };

    fn cfg(extra: &[&str]) -> Config {
        let mut argv = vec!["rtrace", "-i", "f"];
        argv.extend_from_slice(extra);
        crate::config::resolve(Args::try_parse_from(argv).unwrap(), |_| false).unwrap()
    }

    /// A finished getpid of task 7.
    fn getpid(at_ns: u64) -> Vec<u8> {
        let rec = SyscallRecord {
            kind: KIND_SYSCALL,
            flags: REC_HAS_ENTRY | REC_HAS_EXIT,
            nr: syscalls::Sysno::getpid as u32,
            tid: 7,
            pid: 7,
            enter_ns: at_ns,
            exit_ns: at_ns + 1000,
            args: [0; 6],
            ret: 7,
            comm: *b"app\0\0\0\0\0\0\0\0\0\0\0\0\0",
            aug_len: [0; 2],
            aug_arg: [trace_common::augment::AUG_NO_ARG; 2],
            aug_cut: [0; 2],
        };
        // SAFETY: SyscallRecord is plain integers and byte arrays without padding
        // (trace-common asserts its size), so its bytes may be read as bytes.
        unsafe { std::slice::from_raw_parts((&raw const rec).cast::<u8>(), SYSCALL_RECORD_SIZE) }
            .to_vec()
    }

    /// A file of `n` getpid records.
    fn file(n: u64) -> Vec<u8> {
        let header = Header {
            kernel: "6.18.0".into(),
            machine: std::env::consts::ARCH.into(),
            selection: None,
            formats: Default::default(),
            events: Vec::new(),
            seeds: Vec::new(),
            names_pids: true,
        };
        let mut bytes = Vec::new();
        write_header(&mut bytes, &header).unwrap();
        for i in 0..n {
            write_item(&mut bytes, &getpid(1_000_000 * (i + 1))).unwrap();
        }
        bytes
    }

    /// A file of records as given.
    fn file_of(records: &[Vec<u8>]) -> Vec<u8> {
        let mut bytes = file(0);
        for r in records {
            write_item(&mut bytes, r).unwrap();
        }
        bytes
    }

    /// What the replay printed.
    fn printed(cfg: &Config, bytes: &[u8]) -> String {
        let mut out = Vec::new();
        let replay = Replay::start(cfg, Reader::new(bytes, "f")).unwrap();
        replay.run(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn unfinished_entries_are_shown_as_live_only() {
        use crate::decode::assemble::tests::{call, entry, item};
        let (read, getpid) = (syscalls::Sysno::read as u32, syscalls::Sysno::getpid as u32);
        // Thread 1 blocks in read (which fails) while thread 2 calls getpid.
        let mut ret = call(1, read, 10);
        ret.exit_ns = 30_000;
        ret.ret = -4;
        let bytes = file_of(&[
            item(&entry(1, read, 10), &[]),
            item(&call(2, getpid, 20), &[]),
            item(&ret, &[]),
        ]);
        let text = printed(&cfg(&[]), &bytes);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[0].contains("app/1 read(") && lines[0].ends_with(" ..."),
            "{text}"
        );
        assert!(lines[1].contains("app/2 getpid()"), "{text}");
        assert!(
            lines[2].contains("app/1  ... [continued]: read())"),
            "{text}"
        );

        let json = printed(&cfg(&["--json"]), &bytes);
        assert_eq!(json.lines().count(), 2, "{json}");
        for l in json.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert!(v["ret"].is_i64(), "{l}");
        }

        let failed = printed(&cfg(&["--failure"]), &bytes);
        assert_eq!(failed.lines().count(), 1, "{failed}");
        assert!(
            failed.contains("app/1 read(") && failed.contains("= -1 EINTR"),
            "{failed}"
        );
    }

    /// The lines printed and how the replay ended.
    fn run(cfg: &Config, bytes: &[u8]) -> (usize, Result<(), String>) {
        let replay = Replay::start(cfg, Reader::new(bytes, "f")).map_err(|e| e.to_string());
        let mut out = Vec::new();
        let end = replay.and_then(|r| r.run(&mut out).map_err(|e| e.to_string()));
        let text = String::from_utf8(out).unwrap();
        (text.lines().filter(|l| l.contains("getpid")).count(), end)
    }

    #[test]
    fn a_whole_file_replays_cleanly() {
        assert_eq!(run(&cfg(&[]), &file(3)), (3, Ok(())));
    }

    /// A replay runs no command: not beside -p either (it was dropped without a word).
    #[test]
    fn a_command_beside_p_is_refused_too() {
        let (_, end) = run(&cfg(&["-p", "7", "--", "true"]), &file(1));
        assert!(end.unwrap_err().contains("it runs no command"));
    }

    #[test]
    fn a_cut_record_shows_those_before_then_says_where() {
        let mut bytes = file(2);
        let third = getpid(3_000_000);
        write_item(&mut bytes, &third).unwrap();
        bytes.truncate(bytes.len() - 10);
        assert_eq!(
            run(&cfg(&[]), &bytes),
            (
                2,
                Err(format!(
                    "f is cut short after 2 records (inside record 3: {} of its {} bytes)",
                    third.len() - 10,
                    third.len()
                ))
            )
        );
        // The summary still counts the whole ones.
        let summary = cfg(&["-s"]);
        let replay = Replay::start(&summary, Reader::new(&bytes[..], "f")).unwrap();
        let mut out = Vec::new();
        assert!(replay.run(&mut out).is_err());
        assert!(String::from_utf8(out).unwrap().contains("getpid"));
    }

    #[test]
    fn a_huge_length_ends_the_replay_with_an_error() {
        let mut bytes = file(1);
        bytes.extend_from_slice(&[0xff; 64]);
        let (lines, end) = run(&cfg(&[]), &bytes);
        assert_eq!(lines, 1);
        assert!(
            end.unwrap_err()
                .starts_with("f is damaged after 1 records: record 2 claims 4294967295 bytes")
        );
    }
}
