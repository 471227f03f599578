//! One call's arguments as every output walks them: which are used, how each reads
//! (its beauty, after what the other arguments say), whether what it points to is read.
//! perf trace's line and `--json` differ only in what they write of each.

use trace_common::{SyscallRecord, record::Augmented};

use super::{
    SyscallInfo,
    beauty::{
        Beauty,
        context::{self, Shown},
    },
    format::ArgKind,
};

/// One argument of a call, as the record carries it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arg<'i> {
    pub index: usize,
    pub name: &'i str,
    pub kind: ArgKind,
    pub raw: u64,
    /// How its value reads; `None` when the call does not use it (another argument
    /// says so): the line leaves it out, `--json` gives its raw value.
    pub beauty: Option<Beauty>,
}

impl Arg<'_> {
    /// The register's value as its C type reads it.
    pub fn as_c(&self) -> i128 {
        match self.kind {
            ArgKind::I32 => i128::from(self.raw as u32 as i32),
            ArgKind::U32 => i128::from(self.raw as u32),
            ArgKind::I64 => i128::from(self.raw as i64),
            ArgKind::Pointer | ArgKind::U64 => i128::from(self.raw),
        }
    }

    /// Zero as its C type reads it (perf leaves such arguments out unless asked).
    pub fn is_zero(&self) -> bool {
        self.as_c() == 0
    }

    /// How the value is written once the call is over (`Raw` for one it does not use),
    /// with what was read of the memory it points to: an output only once the call
    /// wrote it, else its pointer is shown.
    pub fn written<'m>(
        &self,
        rec: &SyscallRecord,
        mem: &dyn Fn(usize) -> Option<Result<Augmented<'m>, ()>>,
    ) -> (Beauty, Option<Result<Augmented<'m>, ()>>) {
        let b = self
            .beauty
            .unwrap_or(Beauty::Raw(self.kind))
            .settled(rec.has_exit() && rec.ret >= 0);
        let written = !b.is_output() || (rec.has_exit() && b.output_written(rec.ret));
        let read = if b.reads_memory() && written {
            mem(self.index)
        } else {
            None
        };
        (b, read)
    }
}

/// The arguments of `rec`'s call that its format names (none for a record without
/// its entry, or a call whose format is unknown).
pub fn args<'i>(rec: &'i SyscallRecord, info: &'i SyscallInfo) -> impl Iterator<Item = Arg<'i>> {
    let specs = match (rec.has_entry(), info.args.as_deref()) {
        (true, Some(specs)) => specs,
        _ => &[],
    };
    specs
        .iter()
        .zip(rec.args.iter())
        .enumerate()
        .map(|(index, (spec, &raw))| {
            let shown = if info.contextual {
                context::shown(&info.name, &spec.name, &rec.args)
            } else {
                None
            };
            let beauty = match shown {
                Some(Shown::Hidden) => None,
                Some(Shown::As(b)) => Some(b),
                None => Some(
                    info.beauties
                        .get(index)
                        .copied()
                        .unwrap_or(Beauty::Raw(spec.kind)),
                ),
            };
            Arg {
                index,
                name: &spec.name,
                kind: spec.kind,
                raw,
                beauty,
            }
        })
}
