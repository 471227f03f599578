//! Where lines go: stderr by default (as perf trace), or `-o FILE`.

pub mod json;
pub mod line;
pub mod summary;

use std::{
    fs::{self, File},
    io::{self, BufWriter, Write},
    path::Path,
};

/// Opens `-o FILE`; an existing non-empty FILE is first renamed FILE.old, as perf does.
pub fn open_output(path: &Path) -> io::Result<File> {
    if fs::metadata(path).map(|m| m.len() > 0).unwrap_or(false) {
        let mut old = path.as_os_str().to_owned();
        old.push(".old");
        fs::rename(path, &old)?;
    }
    File::create(path)
}

pub type Sink = BufWriter<Box<dyn Write>>;

pub fn sink(path: Option<&Path>) -> io::Result<Sink> {
    let w: Box<dyn Write> = match path {
        Some(p) => Box::new(open_output(p)?),
        None => Box::new(io::stderr()),
    };
    Ok(BufWriter::with_capacity(64 << 10, w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn existing_output_becomes_old() {
        let dir = std::env::temp_dir().join(format!("rtrace-out-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let f = dir.join("trace.txt");
        fs::write(&f, "before\n").unwrap();
        let mut w = open_output(&f).unwrap();
        w.write_all(b"after\n").unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("trace.txt.old")).unwrap(),
            "before\n"
        );
        assert_eq!(fs::read_to_string(&f).unwrap(), "after\n");
        fs::remove_dir_all(&dir).unwrap();
    }
}
