//! `-F maj|min|all`: which page faults are traced. A plain setting, shared by the
//! configuration that reads it and the loader that attaches the fault programs.

/// The page faults traced, minor and major.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    pub min: bool,
    pub maj: bool,
}

impl Faults {
    pub fn any(self) -> bool {
        self.min || self.maj
    }
}
