//! `--timeline FILE`: Chrome Trace Event JSON beside the lines. A slice per traced call
//! with the line's duration, tracks named per thread, the file whole however rtrace
//! ends, and the same slices from a record's replay.

use std::{collections::BTreeMap, path::Path, thread, time::Duration};

use rtrace_tests::{Tracer, bpf_ready, compile_c, parse_line, python, rtrace, run, scratch_dir};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

/// The timeline's events, as a viewer parses the file.
fn read_events(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("the timeline was written");
    match serde_json::from_str(&text) {
        Ok(Value::Array(events)) => events,
        other => panic!("not a JSON array ({other:?}):\n{text}"),
    }
}

fn slices<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == name)
        .collect()
}

/// (tid, syscall) -> the durations (µs) of the finished calls the text shows.
fn line_durations(stderr: &str) -> BTreeMap<(u64, String), Vec<f64>> {
    let mut out: BTreeMap<_, Vec<f64>> = BTreeMap::new();
    for l in stderr.lines() {
        let Some(p) = parse_line(l) else { continue };
        if p.ret.is_empty() {
            continue; // an unfinished entry: its continued line carries the call
        }
        // A call that never returns (exit_group) has no duration: a slice of none.
        let dur = l
            .split_once('(')
            .and_then(|(_, r)| r.split_once(" ms)"))
            .map_or(Some(0.0), |(ms, _)| ms.trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no duration in {l:?}"));
        out.entry((u64::from(p.tid), p.name.to_string()))
            .or_default()
            .push(dur * 1000.0);
    }
    out
}

/// (tid, syscall) -> the slices' durations (µs).
fn slice_durations(events: &[Value]) -> BTreeMap<(u64, String), Vec<f64>> {
    let mut out: BTreeMap<_, Vec<f64>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        out.entry((
            e["tid"].as_u64().unwrap(),
            e["name"].as_str().unwrap().to_string(),
        ))
        .or_default()
        .push(e["dur"].as_f64().unwrap());
    }
    out
}

const SLEEPER: &str = r#"#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
static void nap(long ms) {
    struct timespec ts = { 0, ms * 1000000L };
    nanosleep(&ts, 0);
}
static void *worker(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "tl-worker");
    for (int i = 0; i < 3; i++) nap(10);
    for (int i = 0; i < 7; i++) syscall(SYS_getppid);
    return 0;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    for (int i = 0; i < 5; i++) nap(20);
    pthread_join(t, 0);
    return 0;
}
"#;

/// A program sleeps 5 × 20 ms in its main thread and 3 × 10 ms in a second one (and
/// calls getppid 7 times there): each call is a slice on its thread's track, with the
/// duration its line shows, and both tracks are named.
#[test]
fn a_slice_per_call_with_the_lines_durations() {
    if !bpf_ready("a_slice_per_call_with_the_lines_durations") {
        return;
    }
    let dir = scratch_dir("timeline");
    let (r, bin) = compile_c(&dir, "sleeper", SLEEPER, &["-O2", "-pthread"]);
    assert_eq!(r.code(), Some(0), "{r}");
    let file = dir.join("t.json");
    let r = run(
        rtrace()
            .args(["-e", "clock_nanosleep,getppid", "--timeline"])
            .arg(&file)
            .arg("--")
            .arg(&bin),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let events = read_events(&file);
    let sleeps = slices(&events, "clock_nanosleep");
    let by_tid = |tid: u64| sleeps.iter().filter(|e| e["tid"] == tid).count();
    let pid = sleeps
        .iter()
        .map(|e| e["pid"].as_u64().unwrap())
        .next()
        .expect("slices");
    let worker = sleeps
        .iter()
        .map(|e| e["tid"].as_u64().unwrap())
        .find(|&t| t != pid)
        .expect("the worker's slices");
    assert_eq!((by_tid(pid), by_tid(worker)), (5, 3), "{events:#?}");
    for s in &sleeps {
        let want = if s["tid"] == pid { 20_000.0 } else { 10_000.0 };
        let dur = s["dur"].as_f64().unwrap();
        // At least what was asked; a loaded or emulated machine may add a lot.
        assert!(
            dur >= want && dur < want + 200_000.0,
            "{dur} µs for a {want} µs sleep: {s}"
        );
        assert_eq!(s["args"]["return"], "0", "{s}");
        assert!(s["args"]["rqtp"].is_string(), "{s}");
    }
    let getppid = slices(&events, "getppid");
    assert_eq!(getppid.len(), 7, "{events:#?}");
    assert!(getppid.iter().all(|e| e["tid"] == worker));
    // The same calls, the same durations (to the µs the lines round to), as the text.
    let lines = line_durations(&r.stderr);
    let timeline = slice_durations(&events);
    assert_eq!(
        lines.keys().collect::<Vec<_>>(),
        timeline.keys().collect::<Vec<_>>(),
        "{r}"
    );
    for (key, mut want) in lines {
        let mut got = timeline[&key].clone();
        want.sort_by(f64::total_cmp);
        got.sort_by(f64::total_cmp);
        assert_eq!(want.len(), got.len(), "{key:?}{r}");
        for (w, g) in want.iter().zip(&got) {
            assert!((w - g).abs() <= 1.0, "{key:?}: line {w} µs, slice {g} µs");
        }
    }
    // Metadata: the process and each thread named, the worker by its own name.
    let named = |kind: &str, tid: u64| {
        events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == kind && e["tid"] == tid)
            .map(|e| e["args"]["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(named("process_name", pid), ["sleeper"], "{events:#?}");
    assert_eq!(named("thread_name", pid), ["sleeper"], "{events:#?}");
    assert_eq!(named("thread_name", worker), ["tl-worker"], "{events:#?}");
}

/// Ctrl-C while a traced process sleeps (-p: rtrace leaves it running): the file is
/// whole JSON, and the sleep still under way is a slice up to where tracing ended,
/// marked unfinished. Ctrl-C while the command sleeps: whole too.
#[test]
fn a_stopped_trace_leaves_a_whole_timeline() {
    if !bpf_ready("a_stopped_trace_leaves_a_whole_timeline") {
        return;
    }
    let dir = scratch_dir("timeline-stop");
    let file = dir.join("p.json");
    let sleeper = python("import time\nwhile True: time.sleep(0.5)");
    let pid = sleeper.pid().to_string();
    let t = Tracer::start(&["--timeline", file.to_str().unwrap(), "-p", &pid]);
    // Until a sleep that began after tracing did has ended (a line with its time, not
    // the `?` of one already under way): the next has begun then, and its entry was
    // seen. A fixed wait was not enough under an emulated kernel, where start-up and
    // the reader are slow.
    let whole_sleep = |s: &str| {
        s.lines()
            .any(|l| l.contains(" ms): python3/") && l.contains("sleep("))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !whole_sleep(&t.stderr()) && std::time::Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
    thread::sleep(Duration::from_millis(100));
    let r = t.stop();
    assert_eq!(r.code(), Some(0), "{r}");
    let events = read_events(&file);
    let open: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["args"]["unfinished"] == true)
        .collect();
    assert_eq!(open.len(), 1, "{events:#?}{r}");
    assert!(open[0]["name"].as_str().unwrap().contains("sleep"), "{r}");
    assert!(open[0]["args"].get("return").is_none());
    let finished = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == open[0]["name"] && e["args"]["return"] == "0")
        .count();
    assert!(finished >= 1, "{events:#?}");

    let file = dir.join("c.json");
    let t = Tracer::start(&["--timeline", file.to_str().unwrap(), "--", "sleep", "4.75"]);
    thread::sleep(Duration::from_millis(300));
    let r = t.stop();
    assert_eq!(r.code(), Some(128 + 2), "{r}");
    // The sleep was interrupted (its return an error) or did not return: a slice
    // either way.
    let sleeps = slices(&read_events(&file), "clock_nanosleep").len()
        + slices(&read_events(&file), "nanosleep").len();
    assert_eq!(sleeps, 1, "{r}");
}

/// -s with --timeline: the summary alone on stderr, every call in the timeline (as
/// many slices per syscall as the summary counts); and a record's replay gives the
/// slices of the lines it prints.
#[test]
fn with_a_summary_and_from_a_record() {
    if !bpf_ready("with_a_summary_and_from_a_record") {
        return;
    }
    let dir = scratch_dir("timeline-s");
    let file = dir.join("s.json");
    let r = run(
        rtrace()
            .args(["-s", "--summary-mode=total", "--timeline"])
            .arg(&file)
            .args(["--", "cat", "/etc/hostname"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(r.trace_lines().is_empty(), "-s prints no lines{r}");
    let events = read_events(&file);
    let mut compared = 0;
    for l in r.stderr.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() == 8 && ["openat", "read", "close", "mmap"].contains(&f[0]) {
            let calls: usize = f[1].parse().unwrap();
            assert_eq!(slices(&events, f[0]).len(), calls, "{l}{r}");
            compared += 1;
        }
    }
    assert!(compared >= 3, "{r}");

    let data = dir.join("rec.data");
    let r = run(
        rtrace()
            .args(["record", "-o"])
            .arg(&data)
            .args(["--", "cat", "/etc/hostname"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let replayed = dir.join("r.json");
    let r = run(
        rtrace()
            .arg("-i")
            .arg(&data)
            .arg("--timeline")
            .arg(&replayed),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let lines = line_durations(&r.stderr);
    let timeline = slice_durations(&read_events(&replayed));
    let count = |m: &BTreeMap<(u64, String), Vec<f64>>| m.values().map(Vec::len).sum::<usize>();
    assert!(count(&lines) > 10, "{r}");
    assert_eq!(count(&lines), count(&timeline), "{r}");
}

/// A timeline that cannot be written: one line, status 1, and the command never runs.
#[test]
fn an_unwritable_timeline_stops_before_tracing() {
    if !bpf_ready("an_unwritable_timeline_stops_before_tracing") {
        return;
    }
    let dir = scratch_dir("timeline-bad");
    let marker = dir.join("ran");
    let r = run(
        rtrace()
            .args(["--timeline", "/nonexistent-dir/t.json", "--", "touch"])
            .arg(&marker),
        LIMIT,
    );
    assert_eq!(r.code(), Some(1), "{r}");
    assert_eq!(r.stderr.lines().count(), 1, "{r}");
    assert!(
        r.stderr
            .starts_with("rtrace: opening the timeline \"/nonexistent-dir/t.json\": "),
        "{r}"
    );
    assert!(!marker.exists(), "the command ran{r}");
}

/// Opt-in: a real viewer in a real headless browser opens the timeline. Speedscope (npm
/// `speedscope`, a static page that imports Chrome's Trace Event Format) is served
/// from this machine, as ui.perfetto.dev may not be reachable from a test machine;
/// chromium loads the timeline into it and the page must show one profile per thread.
/// Run with `RTRACE_SPEEDSCOPE=…/node_modules/speedscope/dist/release` (and
/// `RTRACE_CHROMIUM` if the browser is not `chromium`): `cargo test -p rtrace-tests
/// -- --ignored --test-threads=1 a_browser_viewer`. The page's picture is left in
/// `RTRACE_TIMELINE_SHOT` when that names a file.
#[test]
#[ignore = "needs chromium and speedscope's release directory in RTRACE_SPEEDSCOPE"]
fn a_browser_viewer_opens_the_timeline() {
    if !bpf_ready("a_browser_viewer_opens_the_timeline") {
        return;
    }
    let viewer = std::env::var_os("RTRACE_SPEEDSCOPE")
        .expect("RTRACE_SPEEDSCOPE names speedscope's dist/release directory");
    let browser = std::env::var_os("RTRACE_CHROMIUM").unwrap_or_else(|| "chromium".into());
    let dir = scratch_dir("timeline-view");
    let (r, bin) = compile_c(&dir, "sleeper", SLEEPER, &["-O2", "-pthread"]);
    assert_eq!(r.code(), Some(0), "{r}");
    let r = run(
        rtrace()
            .arg("--timeline")
            .arg(dir.join("t.json"))
            .arg("--")
            .arg(&bin),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    std::os::unix::fs::symlink(&viewer, dir.join("viewer")).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let _server = rtrace_tests::Bg::spawn(
        "python3",
        &[
            "-m",
            "http.server",
            &port,
            "--bind",
            "127.0.0.1",
            "--directory",
            dir.to_str().unwrap(),
        ],
    );
    let up = rtrace_tests::wait_for(Duration::from_secs(20), || {
        std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_ok()
    });
    assert!(up, "the page's server did not start");
    let url = format!(
        "http://127.0.0.1:{port}/viewer/index.html#profileURL=http://127.0.0.1:{port}/t.json&title=rtrace"
    );
    let browse = |extra: &[&str]| {
        run(
            std::process::Command::new(&browser)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--use-angle=swiftshader",
                    "--enable-unsafe-swiftshader",
                    "--enable-logging=stderr",
                    "--timeout=8000",
                    "--window-size=1400,700",
                ])
                .args(extra)
                .arg(&url),
            LIMIT,
        )
    };
    let page = browse(&["--virtual-time-budget=5000", "--dump-dom"]);
    assert!(
        page.stderr
            .contains("Importing as Trace Event Format profile"),
        "the viewer did not take the file as a Trace Event one{page}"
    );
    // Two threads, two profiles: the title says which of them is shown.
    assert!(page.stdout.contains("(1/2)"), "{page}");
    assert!(!page.stdout.contains("Something went wrong"), "{page}");
    if let Some(shot) = std::env::var_os("RTRACE_TIMELINE_SHOT") {
        let arg = format!("--screenshot={}", Path::new(&shot).display());
        // Virtual time lets the page fetch and draw the file before the picture.
        let r = browse(&["--virtual-time-budget=3000", &arg]);
        assert!(Path::new(&shot).exists(), "{r}");
    }
}
