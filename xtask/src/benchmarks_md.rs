//! BENCHMARKS.md is written by two tasks: the bench rewrites the page and keeps the
//! soak's section; the soak replaces only its section. What both need of the page lives
//! here: the section's markers, finding and replacing it, and the revision a page names.

use std::{path::Path, process::Command};

/// Where BENCHMARKS.md holds the soak's section (the bench rewrites the rest).
pub const SECTION_START: &str = "<!-- soak: written by cargo xtask soak -->";
pub const SECTION_END: &str = "<!-- /soak -->";

/// `page` with its soak section replaced by `section` (appended where it has none).
pub fn with_section(page: &str, section: &str) -> String {
    match (page.find(SECTION_START), page.find(SECTION_END)) {
        (Some(a), Some(b)) if b > a => {
            let end = b + SECTION_END.len();
            let rest = page[end..].strip_prefix('\n').unwrap_or(&page[end..]);
            format!("{}{section}{rest}", &page[..a])
        }
        _ => format!("{}\n\n{section}", page.trim_end()),
    }
}

/// The soak section of `page`, if it has one (the bench keeps it when it rewrites the
/// page).
pub fn section_of(page: &str) -> Option<&str> {
    let a = page.find(SECTION_START)?;
    let b = page[a..].find(SECTION_END)? + a;
    Some(&page[a..b + SECTION_END.len()])
}

/// The revision the numbers were measured on (`git describe --always --dirty`), or
/// "unknown".
pub fn git_head(root: &Path) -> String {
    Command::new("git")
        .current_dir(root)
        .args(["describe", "--always", "--dirty"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "unknown".into(), |s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_replaced_in_place_or_appended() {
        let section = format!("{SECTION_START}\nnew\n{SECTION_END}\n");
        assert_eq!(with_section("# B\n", &section), format!("# B\n\n{section}"));
        let page = format!("# B\n{SECTION_START}\nold\n{SECTION_END}\nafter\n");
        assert_eq!(
            with_section(&page, &section),
            format!("# B\n{section}after\n")
        );
        assert_eq!(
            section_of(&page),
            Some(format!("{SECTION_START}\nold\n{SECTION_END}").as_str())
        );
    }
}
