//! Checks on the Markdown pages: the README stays a user's page (short, with the two
//! commands CI runs), and every relative link between the pages, and every `#anchor`,
//! leads somewhere. Pure file reads; no tool beyond the test harness.

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
};

use crate::paths::workspace_root;

/// The README is read top to bottom by a newcomer; the reference lives in docs/.
const README_MAX_LINES: usize = 350;

/// The pages that link to each other: the README, CONTRIBUTING, ARCHITECTURE and docs/.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "ARCHITECTURE.md"]
        .iter()
        .map(|p| root.join(p))
        .collect();
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("docs/ is there")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The text outside fenced code blocks and inline code spans, line by line.
fn prose_lines(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut prose = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                prose.push_str(part);
            }
        }
        out.push(prose);
    }
    out
}

/// Every `[text](target)` target of a page's prose.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose_lines(text) {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    targets
}

/// GitHub's anchor for a heading: lower case, spaces to hyphens, punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors a page's headings make (outside code blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// What is wrong with one link of `page`, if anything.
fn broken(page: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (file, anchor) = match target.split_once('#') {
        Some((file, anchor)) => (file, Some(anchor)),
        None => (target, None),
    };
    let dest = if file.is_empty() {
        page.to_path_buf()
    } else {
        page.parent().expect("a page has a directory").join(file)
    };
    if !dest.exists() {
        return Some(format!("{target}: no such file"));
    }
    let anchor = anchor?;
    if dest.extension().is_none_or(|e| e != "md") {
        return None;
    }
    let text = fs::read_to_string(&dest).expect("a linked page reads");
    (!anchors(&text).contains(anchor)).then(|| format!("{target}: no heading makes #{anchor}"))
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(slug(" Coming from perf trace"), "coming-from-perf-trace");
    assert_eq!(
        slug(" Prefixes, `--no-` forms, perf's options"),
        "prefixes---no--forms-perfs-options"
    );
    assert_eq!(
        link_targets("a [b](c.md#d) `[e](f)` [g](h)"),
        ["c.md#d", "h"]
    );
}

#[test]
fn every_relative_link_between_the_pages_resolves() {
    let root = workspace_root();
    let mut bad = Vec::new();
    for page in pages(&root) {
        let text = fs::read_to_string(&page).expect("page reads");
        for target in link_targets(&text) {
            if let Some(why) = broken(&page, &target) {
                bad.push(format!(
                    "{}: {why}",
                    page.strip_prefix(&root).unwrap().display()
                ));
            }
        }
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn the_readme_stays_short_and_keeps_the_two_commands() {
    let root = workspace_root();
    let readme = fs::read_to_string(root.join("README.md")).expect("README reads");
    let lines = readme.lines().count();
    assert!(
        lines < README_MAX_LINES,
        "README.md has {lines} lines; keep it under {README_MAX_LINES}: reference goes to docs/"
    );
    assert!(
        readme.contains("\ncargo xtask trace -- "),
        "README lost the trace command"
    );
    // CI runs the README's test command: .ci/run's `cargo xtask test …` line is in it.
    let ci = fs::read_to_string(root.join(".ci/run")).expect(".ci/run reads");
    let test_command = ci
        .lines()
        .find(|l| l.starts_with("cargo xtask test"))
        .expect(".ci/run runs cargo xtask test");
    assert!(
        readme.contains(&format!("\n{test_command}\n")),
        "README does not show .ci/run's test command `{test_command}`"
    );
}

#[test]
fn the_pages_shipped_with_the_binary_hold_every_page_they_link_to() {
    let root = workspace_root();
    let shipped = crate::dist::shipped_pages(&root).expect("the pages list");
    let mut missing = Vec::new();
    for page in &shipped {
        let text = fs::read_to_string(root.join(page)).expect("page reads");
        let dir = Path::new(page).parent().expect("a page has a directory");
        for target in link_targets(&text) {
            let file = target.split('#').next().unwrap_or_default();
            if file.is_empty() || target.contains("://") || !file.ends_with(".md") {
                continue;
            }
            let linked = normalise(&dir.join(file));
            if !shipped.iter().any(|s| Path::new(s) == linked) {
                missing.push(format!("{page} links to {}", linked.display()));
            }
        }
    }
    assert!(missing.is_empty(), "not shipped:\n{}", missing.join("\n"));
}

/// `docs/../README.md` as `README.md`: a relative path with its `..` steps taken.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
