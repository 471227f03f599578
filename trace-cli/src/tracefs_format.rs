//! The one reader of tracefs `format` files (`events/<category>/<name>/format`): the
//! event's id and each `field:` line as declared. Pure; reading the file is
//! `kernel::tracefs`. Each user builds its own view from this: a syscall's arguments
//! (`decode::format`), an event's readable fields (`events::format`), one field's offset
//! (`field_offset`, for the kernel side's loader).

/// A format file: its `ID:` and its `field:` lines, in order, the `common_*` header
/// fields included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format<'t> {
    /// The event's id (what a record's `common_type` holds).
    pub id: Option<u16>,
    pub fields: Vec<FieldDecl<'t>>,
}

/// One `field:` line: `field:<type> <name>[<n>];\toffset:…;\tsize:…;\tsigned:…;`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDecl<'t> {
    /// The C type as tracefs spells it, without the array part (`char`, `const char *`,
    /// `__data_loc char[]`).
    pub ty: &'t str,
    /// The name, without the array part.
    pub name: &'t str,
    /// An in-place array's `[n]`: `Some(n)` (0 when n is no number), `None` otherwise.
    pub array: Option<usize>,
    /// `None` when the line has none (no kernel writes such a line; a damaged record
    /// file can hold one).
    pub offset: Option<usize>,
    pub size: Option<usize>,
    pub signed: bool,
}

/// The id and fields of a format text. A line that is no declaration (no type before
/// the name, or no name) is skipped.
pub fn parse(text: &str) -> Format<'_> {
    let mut format = Format {
        id: None,
        fields: Vec::new(),
    };
    for line in text.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("ID:") {
            format.id = v.trim().parse().ok();
        } else if let Some(rest) = line.strip_prefix("field:") {
            format.fields.extend(field(rest));
        }
    }
    format
}

/// A `field:` line, after its `field:`.
fn field(rest: &str) -> Option<FieldDecl<'_>> {
    let mut parts = rest.split(';').map(str::trim);
    let decl = parts.next().unwrap_or("");
    let (mut offset, mut size, mut signed) = (None, None, false);
    for p in parts {
        if let Some(v) = p.strip_prefix("offset:") {
            offset = v.parse().ok();
        } else if let Some(v) = p.strip_prefix("size:") {
            size = v.parse().ok();
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = v == "1";
        }
    }
    let split = decl.rfind([' ', '*'])?;
    let (ty, name) = decl.split_at(split + 1);
    let (name, array) = match name.split_once('[') {
        Some((n, len)) => (n, Some(len.trim_end_matches(']').parse().unwrap_or(0))),
        None => (name, None),
    };
    if name.is_empty() {
        return None;
    }
    Some(FieldDecl {
        ty: ty.trim(),
        name,
        array,
        offset,
        size,
        signed,
    })
}

/// The `offset:` of the field named `field` in a format text.
pub fn field_offset(text: &str, field: &str) -> Option<u32> {
    parse(text)
        .fields
        .iter()
        .filter(|f| f.name == field)
        .find_map(|f| f.offset?.try_into().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXIT: &str = "name: sched_process_exit
ID: 318
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:bool group_dead;\toffset:32;\tsize:1;\tsigned:0;

print fmt: \"comm=%s pid=%d prio=%d group_dead=%s\", REC->comm, REC->pid, REC->prio
";

    #[test]
    fn finds_offsets() {
        assert_eq!(field_offset(EXIT, "group_dead"), Some(32));
        assert_eq!(field_offset(EXIT, "pid"), Some(24));
        assert_eq!(field_offset(EXIT, "comm"), Some(8));
        assert_eq!(field_offset(EXIT, "common_type"), Some(0));
        assert_eq!(field_offset(EXIT, "child_pid"), None);
    }

    #[test]
    fn every_declaration_as_written() {
        let f = parse(EXIT);
        assert_eq!(f.id, Some(318));
        assert_eq!(f.fields.len(), 5);
        assert_eq!(
            f.fields[1],
            FieldDecl {
                ty: "char",
                name: "comm",
                array: Some(16),
                offset: Some(8),
                size: Some(16),
                signed: false,
            }
        );
        assert_eq!((f.fields[2].name, f.fields[2].signed), ("pid", true));
    }

    #[test]
    fn a_pointer_type_and_a_line_without_offset() {
        let f = parse("\tfield:const char *filename;\tsize:8;\n\tfield:nothing;\n");
        assert_eq!(f.id, None);
        assert_eq!(f.fields.len(), 1);
        let d = &f.fields[0];
        assert_eq!(
            (d.ty, d.name, d.offset, d.size),
            ("const char *", "filename", None, Some(8))
        );
    }
}
