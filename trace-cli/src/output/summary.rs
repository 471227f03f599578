//! perf trace's summary table (`-s`, `-S`), rendered from the in-kernel statistics.

use std::fmt::Write as _;

use std::collections::BTreeMap;

use trace_common::stats::{STATS_NR_FAULTS, StatsKey, SyscallHist, SyscallStats, TaskKey};

use crate::decode::{errno::ErrnoTable, syscall_table};

#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub name: String,
    pub stats: SyscallStats,
    /// (errno name, count), in errno order; shown with --errno-summary.
    pub errnos: Vec<(String, u64)>,
    /// The durations' log2 histogram; with --hist.
    pub hist: Option<SyscallHist>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Title {
    Thread {
        comm: String,
        tid: u32,
    },
    Total,
    /// Threads past the rows rtrace keeps apart, summed per syscall.
    Folded {
        threads: u64,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    pub title: Title,
    /// Rows for every syscall seen, including those that never returned (which count
    /// as events but get no row).
    pub rows: Vec<Row>,
    /// Page faults (`-F`), minor and major: events too, without rows.
    pub faults: [u64; 2],
}

impl Section {
    pub fn events(&self) -> u64 {
        self.rows.iter().map(|r| r.stats.events()).sum::<u64>() + self.faults.iter().sum::<u64>()
    }
}

/// perf's stddev column: the standard deviation of the mean, as a percentage of the
/// mean (100 × sqrt(M2/(n−1)/n) / mean); 0 for fewer than two calls.
pub fn stddev_pct(s: &SyscallStats) -> f64 {
    let n = s.calls;
    if n < 2 || s.total_ns == 0 {
        return 0.0;
    }
    let sum = u128::from(s.total_ns);
    // M2 = Σd² − (Σd)²/n; n·M2 is exact in integers while it fits.
    let n_m2 = u128::from(n)
        .checked_mul(s.sum_sq())
        .and_then(|a| a.checked_sub(sum * sum))
        .map(|x| x as f64)
        .unwrap_or_else(|| {
            let nf = n as f64;
            nf * s.sum_sq() as f64 - (s.total_ns as f64).powi(2)
        })
        .max(0.0);
    let nf = n as f64;
    let variance = n_m2 / nf / (nf - 1.0);
    let mean = s.total_ns as f64 / nf;
    100.0 * (variance / nf).sqrt() / mean
}

#[derive(Default)]
pub struct SummaryOptions {
    pub max_rows: Option<usize>,
    pub errno: bool,
    /// `--time-percent`: strace -c's `% time`, after perf's columns (which stay as
    /// perf prints them, for what reads them).
    pub time_percent: bool,
}

/// strace -c's `% time`: a row's share of its section's syscall time (every row's,
/// those --max-summary leaves out too).
pub fn time_pct(row_ns: u64, section_ns: u128) -> f64 {
    if section_ns == 0 {
        return 0.0;
    }
    100.0 * row_ns as f64 / section_ns as f64
}

/// The section's syscall time, the sum `% time` divides by.
fn section_ns(rows: &[Row]) -> u128 {
    rows.iter().map(|r| u128::from(r.stats.total_ns)).sum()
}

pub fn render(out: &mut String, mut sections: Vec<Section>, opts: &SummaryOptions) {
    let all_events: u64 = sections.iter().map(Section::events).sum();
    // Threads by event count, smallest first (perf's order).
    sections.sort_by_key(|s| (s.events(), title_tid(&s.title)));
    out.push_str("\n Summary of events:\n\n");
    for section in &mut sections {
        let events = section.events();
        match &section.title {
            Title::Thread { comm, tid } => {
                let pct = if all_events > 0 {
                    100.0 * events as f64 / all_events as f64
                } else {
                    0.0
                };
                let _ = write!(out, " {comm} ({tid}), {events} events, {pct:.1}%");
                // perf's order: major faults, then minor ones, each when there were any.
                for (n, what) in [
                    (section.faults[1], "majfaults"),
                    (section.faults[0], "minfaults"),
                ] {
                    if n > 0 {
                        let _ = write!(out, ", {n} {what}");
                    }
                }
                out.push('\n');
            }
            Title::Total => {
                let _ = writeln!(out, " total, {events} events");
            }
            Title::Folded { threads } => {
                let pct = if all_events > 0 {
                    100.0 * events as f64 / all_events as f64
                } else {
                    0.0
                };
                let _ = writeln!(
                    out,
                    " {threads} more threads, together, {events} events, {pct:.1}%"
                );
            }
        }
        out.push('\n');
        let (head, underline) = match opts.time_percent {
            true => ("   % time", "   ------"),
            false => ("", ""),
        };
        let _ = writeln!(
            out,
            "   syscall            calls  errors  total       min       avg       max       stddev{head}"
        );
        out.push_str("                                     (msec)    (msec)    (msec)    (msec)        (%)\n");
        let _ = writeln!(
            out,
            "   --------------- --------  ------ -------- --------- --------- ---------     ------{underline}"
        );
        let rows = &mut section.rows;
        sort_rows(rows);
        let all_ns = section_ns(rows);
        let shown = opts.max_rows.unwrap_or(usize::MAX);
        for row in rows.iter().take(shown) {
            let s = &row.stats;
            let ms = |ns: u64| ns as f64 / 1e6;
            let avg = ms(s.total_ns) / s.calls as f64;
            let _ = write!(
                out,
                "   {:<15} {:>8} {:>6} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.2}%",
                row.name,
                s.calls,
                s.errors,
                ms(s.total_ns),
                ms(s.min_ns),
                avg,
                ms(s.max_ns),
                stddev_pct(s)
            );
            if opts.time_percent {
                let _ = write!(out, "{:>9.2}", time_pct(s.total_ns, all_ns));
            }
            out.push('\n');
            if opts.errno {
                for (name, count) in &row.errnos {
                    let _ = writeln!(out, "\t\t\t\t{name}: {count}");
                }
            }
            if let Some(hist) = &row.hist {
                super::histogram::render(out, hist, "     ");
                out.push('\n');
            }
        }
        out.push_str("\n\n");
    }
}

/// The summary in JSON mode: one object, `{"summary": [section, …]}`, in the text's
/// order, so that every line of the output is JSON. A section is
/// `{"comm", "tid", "events", "percent", "syscalls": [row, …]}` (`comm`, `tid` and
/// `percent` null in the total); a row has the text's columns, times in ms, and
/// `errnos` by name when `--errno-summary` asked for them.
pub fn render_json(out: &mut String, mut sections: Vec<Section>, opts: &SummaryOptions) {
    use serde_json::{Map, Value, json};
    let all_events: u64 = sections.iter().map(Section::events).sum();
    sections.sort_by_key(|s| (s.events(), title_tid(&s.title)));
    let ms = |ns: u64| ns as f64 / 1e6;
    let list: Vec<Value> = sections
        .iter_mut()
        .map(|section| {
            let events = section.events();
            let (comm, tid, pct) = match &section.title {
                Title::Thread { comm, tid } => (
                    json!(comm),
                    json!(tid),
                    json!(if all_events > 0 {
                        100.0 * events as f64 / all_events as f64
                    } else {
                        0.0
                    }),
                ),
                Title::Total => (Value::Null, Value::Null, Value::Null),
                Title::Folded { .. } => (
                    Value::Null,
                    Value::Null,
                    json!(if all_events > 0 {
                        100.0 * events as f64 / all_events as f64
                    } else {
                        0.0
                    }),
                ),
            };
            sort_rows(&mut section.rows);
            let all_ns = section_ns(&section.rows);
            let rows: Vec<Value> = section
                .rows
                .iter()
                .take(opts.max_rows.unwrap_or(usize::MAX))
                .map(|row| {
                    let s = &row.stats;
                    let mut r = json!({
                        "syscall": row.name,
                        "calls": s.calls,
                        "errors": s.errors,
                        "total_ms": ms(s.total_ns),
                        "min_ms": ms(s.min_ns),
                        "avg_ms": ms(s.total_ns) / s.calls as f64,
                        "max_ms": ms(s.max_ns),
                        "stddev_percent": stddev_pct(s),
                    });
                    if opts.time_percent {
                        r["time_percent"] = json!(time_pct(s.total_ns, all_ns));
                    }
                    if opts.errno {
                        let errnos: Map<String, Value> = row
                            .errnos
                            .iter()
                            .map(|(n, c)| (n.clone(), json!(c)))
                            .collect();
                        r["errnos"] = Value::Object(errnos);
                    }
                    if let Some(hist) = &row.hist {
                        r["histogram"] = super::histogram::json(hist);
                    }
                    r
                })
                .collect();
            let mut obj = json!({
                "comm": comm,
                "tid": tid,
                "events": events,
                "percent": pct,
                "majfaults": section.faults[1],
                "minfaults": section.faults[0],
                "syscalls": rows,
            });
            if let Title::Folded { threads } = section.title {
                obj["folded_threads"] = json!(threads);
            }
            obj
        })
        .collect();
    out.push_str(&json!({ "summary": list }).to_string());
    out.push('\n');
}

/// Rows that were called, by total time, longest first (perf's order).
fn sort_rows(rows: &mut Vec<Row>) {
    rows.retain(|r| r.stats.calls > 0);
    rows.sort_by(|a, b| {
        b.stats
            .total_ns
            .cmp(&a.stats.total_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
}

fn title_tid(t: &Title) -> u32 {
    match t {
        Title::Thread { tid, .. } => *tid,
        Title::Total | Title::Folded { .. } => 0,
    }
}

/// The sections of per-(thread, syscall) numbers (thread 0 with `total`), their errno
/// counts, and each thread's name. A thread is its tid and start time: a tid that an
/// exited thread had and a new one took gets a section for each.
pub fn sections(
    per_key: BTreeMap<StatsKey, SyscallStats>,
    errno_rows: BTreeMap<(TaskKey, u32), Vec<(u32, u64)>>,
    total: bool,
    comm_of: impl Fn(TaskKey) -> [u8; 16],
) -> Vec<Section> {
    sections_with_hists(per_key, errno_rows, None, total, comm_of)
}

/// [`sections`], each row with its histogram from `hists` (--hist; an empty one for a
/// row the map had none for).
pub fn sections_with_hists(
    per_key: BTreeMap<StatsKey, SyscallStats>,
    mut errno_rows: BTreeMap<(TaskKey, u32), Vec<(u32, u64)>>,
    mut hists: Option<BTreeMap<StatsKey, SyscallHist>>,
    total: bool,
    comm_of: impl Fn(TaskKey) -> [u8; 16],
) -> Vec<Section> {
    let mut sections: BTreeMap<TaskKey, Vec<Row>> = BTreeMap::new();
    let mut faults: BTreeMap<TaskKey, [u64; 2]> = BTreeMap::new();
    for (key, stats) in per_key {
        if let Some(kind) = STATS_NR_FAULTS.iter().position(|&nr| nr == key.nr) {
            faults.entry(key.task).or_default()[kind] += stats.calls;
            sections.entry(key.task).or_default();
            continue;
        }
        let name = syscall_table::name(key.nr).map_or_else(
            || format!("syscall_{}", trace_common::maps::stray_number(key.nr)),
            str::to_string,
        );
        let mut errs = errno_rows.remove(&(key.task, key.nr)).unwrap_or_default();
        errs.sort_unstable();
        let errnos = errs
            .into_iter()
            .map(|(e, n)| {
                let name =
                    ErrnoTable::name(e as i32).map_or_else(|| format!("E{e}"), str::to_string);
                (name, n)
            })
            .collect();
        let hist = hists.as_mut().map(|h| h.remove(&key).unwrap_or_default());
        sections.entry(key.task).or_default().push(Row {
            name,
            stats,
            errnos,
            hist,
        });
    }
    sections
        .into_iter()
        .map(|(task, rows)| {
            let title = if total {
                Title::Total
            } else {
                let comm = comm_of(task);
                let end = comm.iter().position(|&b| b == 0).unwrap_or(16);
                // The name as the lines show it: escaped.
                let mut shown = String::new();
                crate::decode::escape::bare(&mut shown, &comm[..end]);
                Title::Thread {
                    comm: shown,
                    tid: task.tid,
                }
            };
            Section {
                title,
                rows,
                faults: faults.get(&task).copied().unwrap_or_default(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(durations_us: &[u64], errors: u64) -> SyscallStats {
        let mut s = SyscallStats::default();
        for (i, d) in durations_us.iter().enumerate() {
            s.add_call(d * 1000, (i as u64) < errors, true);
        }
        s
    }

    fn row(name: &str, s: SyscallStats) -> Row {
        Row {
            name: name.into(),
            stats: s,
            errnos: vec![],
            hist: None,
        }
    }

    fn key(tid: u32, start_ns: u64, nr: u32) -> StatsKey {
        StatsKey {
            task: TaskKey {
                tid,
                _pad: 0,
                start_ns,
            },
            nr,
            _pad: 0,
        }
    }

    #[test]
    fn a_reused_tid_is_a_section_of_its_own() {
        // Two processes numbered 1903 one after the other, each one execve.
        let mut per_key = BTreeMap::new();
        let mut one = SyscallStats::default();
        one.add_call(1000, false, true);
        per_key.insert(key(1903, 10, 59), one);
        per_key.insert(key(1903, 20, 59), one);
        let mut errnos = BTreeMap::new();
        errnos.insert((per_key.keys().next().unwrap().task, 59), vec![(2, 1)]);
        let sections = sections(per_key, errnos, false, |task| {
            let mut c = [0; 16];
            c[..4].copy_from_slice(if task.start_ns == 10 {
                b"true"
            } else {
                b"make"
            });
            c
        });
        let mut out = String::new();
        render(&mut out, sections, &SummaryOptions::default());
        assert!(out.contains("\n true (1903), 2 events, 50.0%\n"), "{out}");
        assert!(out.contains("\n make (1903), 2 events, 50.0%\n"), "{out}");
        assert_eq!(out.matches(" execve ").count(), 2, "{out}");
    }

    #[test]
    fn page_faults_count_as_events_and_are_named_in_the_thread_line() {
        let mut per_key = BTreeMap::new();
        per_key.insert(
            key(5, 0, STATS_NR_FAULTS[0]),
            SyscallStats {
                calls: 48,
                ..Default::default()
            },
        );
        per_key.insert(
            key(5, 0, STATS_NR_FAULTS[1]),
            SyscallStats {
                calls: 2,
                ..Default::default()
            },
        );
        per_key.insert(
            key(6, 0, STATS_NR_FAULTS[0]),
            SyscallStats {
                calls: 50,
                ..Default::default()
            },
        );
        let sections = sections(per_key, BTreeMap::new(), false, |task| {
            let mut c = [0; 16];
            c[..4].copy_from_slice(if task.tid == 5 { b"true" } else { b"cat\0" });
            c
        });
        assert!(
            sections.iter().all(|s| s.rows.is_empty()),
            "no syscall rows"
        );
        let mut out = String::new();
        render(&mut out, sections, &SummaryOptions::default());
        assert!(
            out.contains("\n true (5), 50 events, 50.0%, 2 majfaults, 48 minfaults\n"),
            "{out}"
        );
        assert!(
            out.contains("\n cat (6), 50 events, 50.0%, 50 minfaults\n"),
            "{out}"
        );
    }

    #[test]
    fn stddev_matches_perfs_formula() {
        // durations 1,2,3 ms: mean 2, sample variance 1, stddev of the mean sqrt(1/3)
        let s = stats(&[1000, 2000, 3000], 0);
        let want = 100.0 * (1.0f64 / 3.0).sqrt() / 2.0;
        assert!((stddev_pct(&s) - want).abs() < 1e-9, "{}", stddev_pct(&s));
        assert_eq!(stddev_pct(&stats(&[5], 0)), 0.0);
        assert_eq!(stddev_pct(&stats(&[7, 7, 7, 7], 0)), 0.0);
    }

    #[test]
    fn renders_perfs_layout() {
        let exit_group = SyscallStats {
            enter_only: 1,
            ..Default::default()
        };
        let mut execve = SyscallStats::default();
        execve.add_call(0, false, false);
        let section = Section {
            faults: [0; 2],
            title: Title::Thread {
                comm: "cat".into(),
                tid: 3102,
            },
            rows: vec![
                row("read", stats(&[2, 11, 3, 4], 0)),
                row("openat", stats(&[13, 2, 10, 9, 8, 5, 5], 1)),
                row("exit_group", exit_group),
                row("execve", execve),
            ],
        };
        let mut out = String::new();
        render(
            &mut out,
            vec![section],
            &SummaryOptions {
                max_rows: None,
                errno: false,
                time_percent: false,
            },
        );
        // 11 calls seen at both ends, one seen only at its exit, one entry only.
        let expected = "
 Summary of events:

 cat (3102), 24 events, 100.0%

   syscall            calls  errors  total       min       avg       max       stddev
                                     (msec)    (msec)    (msec)    (msec)        (%)
   --------------- --------  ------ -------- --------- --------- ---------     ------
   openat                 7      1     0.052     0.002     0.007     0.013     18.78%
   read                   4      0     0.020     0.002     0.005     0.011     40.82%
   execve                 1      0     0.000     0.000     0.000     0.000      0.00%


";
        assert_eq!(out, expected);
    }

    /// strace -c's `% time` comes after perf's columns, which stay as they are: a
    /// share of the section's time, rows cut by --max-summary counted in it.
    #[test]
    fn time_percent_is_a_trailing_column() {
        let section = || Section {
            faults: [0; 2],
            title: Title::Thread {
                comm: "cat".into(),
                tid: 7,
            },
            rows: vec![
                row("read", stats(&[10, 20], 0)),
                row("openat", stats(&[60], 0)),
                row("close", stats(&[10], 0)),
            ],
        };
        let opts = |time_percent| SummaryOptions {
            max_rows: Some(2),
            errno: false,
            time_percent,
        };
        let (mut plain, mut with) = (String::new(), String::new());
        render(&mut plain, vec![section()], &opts(false));
        render(&mut with, vec![section()], &opts(true));
        let lines: Vec<&str> = with.lines().collect();
        assert!(lines[5].ends_with("stddev   % time"), "{with}");
        assert!(lines[7].ends_with("------   ------"), "{with}");
        assert_eq!(&lines[8][lines[8].len() - 9..], "    60.00");
        assert_eq!(&lines[9][lines[9].len() - 9..], "    30.00");
        // Without the column, line for line perf's table; with it, each line starts so.
        for (p, w) in plain.lines().zip(with.lines()) {
            assert!(w.starts_with(p), "{p:?} / {w:?}");
        }
        assert_eq!(time_pct(5, 0), 0.0);
        let mut json = String::new();
        render_json(&mut json, vec![section()], &opts(true));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["summary"][0]["syscalls"][0]["time_percent"], 60.0);
    }

    #[test]
    fn threads_smallest_first_total_mode_and_caps() {
        let t = |comm: &str, tid, n: usize| Section {
            faults: [0; 2],
            title: Title::Thread {
                comm: comm.into(),
                tid,
            },
            rows: vec![row("getppid", stats(&vec![1; n], 0))],
        };
        let mut out = String::new();
        render(
            &mut out,
            vec![t("big", 1, 3), t("small", 2, 1)],
            &SummaryOptions {
                max_rows: None,
                errno: false,
                time_percent: false,
            },
        );
        let small = out.find(" small (2), 2 events, 25.0%").unwrap();
        let big = out.find(" big (1), 6 events, 75.0%").unwrap();
        assert!(small < big, "{out}");

        let mut out = String::new();
        let total = Section {
            faults: [0; 2],
            title: Title::Total,
            rows: vec![
                Row {
                    name: "openat".into(),
                    stats: stats(&[5, 5], 2),
                    errnos: vec![("ENOENT".into(), 2)],
                    hist: None,
                },
                row("read", stats(&[1], 0)),
            ],
        };
        render(
            &mut out,
            vec![total],
            &SummaryOptions {
                max_rows: Some(1),
                errno: true,
                time_percent: false,
            },
        );
        assert!(out.contains(" total, 6 events\n"), "{out}");
        assert!(out.contains("\n\t\t\t\tENOENT: 2\n"), "{out}");
        assert!(
            !out.contains("   read "),
            "--max-summary 1 keeps one row{out}"
        );
    }

    #[test]
    fn json_summary_is_one_object_with_the_texts_numbers() {
        let section = |comm: &str, tid, n: usize| Section {
            faults: [0; 2],
            title: Title::Thread {
                comm: comm.into(),
                tid,
            },
            rows: vec![
                Row {
                    name: "openat".into(),
                    stats: stats(&vec![2000; n], 1),
                    errnos: vec![("ENOENT".into(), 1)],
                    hist: None,
                },
                row("read", stats(&[1000], 0)),
            ],
        };
        let mut out = String::new();
        render_json(
            &mut out,
            vec![section("big", 1, 3), section("small", 2, 1)],
            &SummaryOptions {
                max_rows: Some(1),
                errno: true,
                time_percent: false,
            },
        );
        assert!(out.ends_with('\n') && out.lines().count() == 1, "{out}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let threads = v["summary"].as_array().unwrap();
        assert_eq!(threads.len(), 2);
        assert_eq!(threads[0]["comm"], "small");
        assert_eq!(threads[0]["events"], 4, "an entry and an exit per call");
        assert_eq!(threads[1]["tid"], 1);
        assert!((threads[1]["percent"].as_f64().unwrap() - 200.0 / 3.0).abs() < 1e-9);
        let rows = threads[1]["syscalls"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "--max-summary 1");
        assert_eq!(rows[0]["syscall"], "openat");
        assert_eq!(rows[0]["calls"], 3);
        assert_eq!(rows[0]["errors"], 1);
        assert_eq!(rows[0]["total_ms"], 6.0);
        assert_eq!(rows[0]["avg_ms"], 2.0);
        assert_eq!(rows[0]["errnos"]["ENOENT"], 1);
        let mut total = String::new();
        render_json(
            &mut total,
            vec![Section {
                faults: [0; 2],
                title: Title::Total,
                rows: vec![row("read", stats(&[1000], 0))],
            }],
            &SummaryOptions {
                max_rows: None,
                errno: false,
                time_percent: false,
            },
        );
        let v: serde_json::Value = serde_json::from_str(&total).unwrap();
        assert!(v["summary"][0]["comm"].is_null() && v["summary"][0]["tid"].is_null());
        assert!(v["summary"][0]["syscalls"][0].get("errnos").is_none());
    }
}
