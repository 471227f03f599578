//! A tracepoint's fields, from its tracefs `format` file (parsed by
//! [`crate::tracefs_format`]), and their values in a raw record (pure: reading the file is
//! `kernel::tracefs`).

use crate::tracefs_format;

/// One field of an event's record (the `common_*` header fields are left out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    /// The C type as tracefs spells it, without the array part (`char`, `pid_t`,
    /// `__data_loc char[]`).
    pub ty: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    pub layout: Layout,
    /// Elements of an in-place array (`[16]`); 0 otherwise.
    pub count: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Scalar,
    /// `char comm[16]`: elements in place.
    Array,
    /// `__data_loc char[] name`: a u32 in place, the data's offset in the record (low
    /// 16 bits) and length (high 16).
    DataLoc,
    /// `__rel_loc`: as `DataLoc`, the offset counted from the end of the field.
    RelLoc,
}

/// The event's id (the record's `common_type`) and its fields, in record order; a field
/// without an offset or a size is left out (no value of it could be read).
pub fn parse(text: &str) -> (Option<u16>, Vec<Field>) {
    let format = tracefs_format::parse(text);
    let fields = format
        .fields
        .into_iter()
        .filter(|f| !f.name.starts_with("common_"))
        .filter_map(|f| {
            let layout = if f.ty.starts_with("__data_loc") {
                Layout::DataLoc
            } else if f.ty.starts_with("__rel_loc") {
                Layout::RelLoc
            } else if f.array.is_some() {
                Layout::Array
            } else {
                Layout::Scalar
            };
            Some(Field {
                name: f.name.to_string(),
                ty: f.ty.to_string(),
                offset: f.offset?,
                size: f.size?,
                signed: f.signed,
                layout,
                count: f.array.unwrap_or(0),
            })
        })
        .collect();
    (format.id, fields)
}

impl Field {
    /// The field's integer value (sign-extended when the field is signed); `None` past
    /// the end of what was read, or for a field that is not a 1-, 2-, 4- or 8-byte scalar
    /// (an array of four bytes is no number).
    pub fn int(&self, data: &[u8]) -> Option<i128> {
        if self.layout != Layout::Scalar {
            return None;
        }
        let b = data.get(self.offset..self.offset + self.size)?;
        let v = match (self.size, self.signed) {
            (1, false) => i128::from(b[0]),
            (1, true) => i128::from(b[0] as i8),
            (2, false) => i128::from(u16::from_ne_bytes(b.try_into().ok()?)),
            (2, true) => i128::from(i16::from_ne_bytes(b.try_into().ok()?)),
            (4, false) => i128::from(u32::from_ne_bytes(b.try_into().ok()?)),
            (4, true) => i128::from(i32::from_ne_bytes(b.try_into().ok()?)),
            (8, false) => i128::from(u64::from_ne_bytes(b.try_into().ok()?)),
            (8, true) => i128::from(i64::from_ne_bytes(b.try_into().ok()?)),
            _ => return None,
        };
        Some(v)
    }

    /// The bytes of an array or `__data_loc` field; `None` when they lie past what was
    /// read.
    pub fn bytes<'d>(&self, data: &'d [u8]) -> Option<&'d [u8]> {
        match self.layout {
            Layout::Scalar => None,
            Layout::Array => data.get(self.offset..self.offset + self.size),
            Layout::DataLoc | Layout::RelLoc => {
                let loc =
                    u32::from_ne_bytes(data.get(self.offset..self.offset + 4)?.try_into().ok()?);
                let mut start = (loc & 0xffff) as usize;
                if self.layout == Layout::RelLoc {
                    start += self.offset + self.size;
                }
                data.get(start..start + (loc >> 16) as usize)
            }
        }
    }

    /// Bytes up to the first NUL: a string field's text.
    pub fn text<'d>(&self, data: &'d [u8]) -> Option<&'d [u8]> {
        let b = self.bytes(data)?;
        Some(&b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())])
    }
}

#[cfg(test)]
pub mod tests_support {
    pub const EXEC: &str = "name: sched_process_exec
ID: 365
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:pid_t old_pid;\toffset:16;\tsize:4;\tsigned:1;

print fmt: \"filename=%s pid=%d old_pid=%d\", __get_str(filename), REC->pid, REC->old_pid
";
}

#[cfg(test)]
mod tests {
    use super::tests_support::EXEC;
    use super::*;

    #[test]
    fn fields_of_sched_process_exec() {
        let (id, fields) = parse(EXEC);
        assert_eq!(id, Some(365));
        let names: Vec<(&str, Layout)> =
            fields.iter().map(|f| (f.name.as_str(), f.layout)).collect();
        assert_eq!(
            names,
            [
                ("filename", Layout::DataLoc),
                ("pid", Layout::Scalar),
                ("old_pid", Layout::Scalar)
            ]
        );
        let mut rec = vec![0u8; 20];
        rec[8..12].copy_from_slice(&(20u32 | (10 << 16)).to_ne_bytes());
        rec[12..16].copy_from_slice(&42i32.to_ne_bytes());
        rec[16..20].copy_from_slice(&(-6i32).to_ne_bytes());
        rec.extend_from_slice(b"/bin/true\0");
        assert_eq!(fields[0].text(&rec), Some(&b"/bin/true"[..]));
        assert_eq!(fields[1].int(&rec), Some(42));
        // Signed fields are sign-extended (perf 6.1 prints -6 as 4294967290).
        assert_eq!(fields[2].int(&rec), Some(-6));
        // A location past what was read is no value, not garbage.
        assert_eq!(fields[0].text(&rec[..24]), None);
    }

    #[test]
    fn in_place_arrays_and_rel_loc() {
        let text = "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:__rel_loc char[] name;\toffset:24;\tsize:4;\tsigned:0;\n";
        let (_, f) = parse(text);
        assert_eq!((f[0].name.as_str(), f[0].layout), ("comm", Layout::Array));
        // No size, no value: the field is left out.
        assert_eq!(parse("\tfield:int x;\toffset:0;\n").1, []);
        let four = parse("\tfield:u8 saddr[4];\toffset:0;\tsize:4;\tsigned:0;\n").1;
        assert_eq!(four[0].int(&[127, 0, 0, 1]), None);
        let mut rec = vec![0u8; 28];
        rec[8..11].copy_from_slice(b"sh\0");
        rec[24..28].copy_from_slice(&(3u32 << 16).to_ne_bytes());
        rec.extend_from_slice(b"ab\0");
        assert_eq!(f[0].text(&rec), Some(&b"sh"[..]));
        assert_eq!(f[1].text(&rec), Some(&b"ab"[..]));
    }
}
