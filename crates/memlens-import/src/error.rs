//! Import errors and warnings. Every message names the file and, where it can, the line or record.

use serde::Serialize;
use std::fmt;

/// An import that cannot produce any trace.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ImportError {
    /// Zero bytes, or only whitespace.
    #[error("{file}: the file is empty (expected a JSON or JSON Lines trace)")]
    Empty {
        /// File name.
        file: String,
    },
    /// The bytes are not JSON (nor JSON Lines).
    #[error("{file}:{line}:{column}: invalid JSON: {message}")]
    Json {
        /// File name.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser expected.
        message: String,
    },
    /// Valid JSON that no importer recognizes.
    #[error("{file}: not a trace format MemLens reads ({found}); expected {expected}")]
    Unrecognized {
        /// File name.
        file: String,
        /// What the top level looks like.
        found: String,
        /// What the importers accept.
        expected: &'static str,
    },
    /// `--format` named a format that does not exist.
    #[error("unknown format {name:?}; known formats: {known}")]
    UnknownFormat {
        /// The name given.
        name: String,
        /// The known names.
        known: String,
    },
    /// A gzipped file that cannot be decompressed (corrupt, truncated, or a build without the
    /// `gzip` feature).
    #[error("{file}: {message}")]
    Compressed {
        /// File name.
        file: String,
        /// What went wrong.
        message: String,
    },
    /// A gzipped file that decompresses to more than the limit ([`crate::gzip::limit`]).
    #[error(
        "{file}: decompresses to more than {} MB, the most read into memory at once (importing \
         takes about three times the trace): split the trace, or read it where more memory is free",
        .limit.div_ceil(1 << 20)
    )]
    TooLarge {
        /// File name.
        file: String,
        /// The limit, in decompressed bytes.
        limit: u64,
    },
    /// The format was recognized but the content is unusable.
    #[error("{file}: {location}: {message}")]
    Invalid {
        /// File name.
        file: String,
        /// Where (record index and line when known).
        location: Location,
        /// What was expected.
        message: String,
    },
}

/// A place in the input file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Location {
    /// 1-based line (JSON Lines), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 0-based record index (array element or JSON Lines record), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<usize>,
}

/// Where a chunk came from, for the trace model (0 where the line or record is unknown; past
/// `u32::MAX` saturates).
pub(crate) fn source_pos(location: Location) -> memlens_core::SourcePos {
    let narrow = |n: Option<usize>| u32::try_from(n.unwrap_or(0)).unwrap_or(u32::MAX);
    memlens_core::SourcePos {
        line: narrow(location.line),
        record: narrow(location.record),
    }
}

impl Location {
    /// Record `record` at `line` (lines are known for JSON Lines).
    pub fn record(record: usize, line: Option<usize>) -> Location {
        Location {
            line,
            record: Some(record),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.record) {
            (Some(l), Some(r)) => write!(f, "line {l} (record {r})"),
            (Some(l), None) => write!(f, "line {l}"),
            (None, Some(r)) => write!(f, "record {r}"),
            (None, None) => f.write_str("top level"),
        }
    }
}

/// A recoverable problem: the rest of the file still loads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    /// File name.
    pub file: String,
    /// Where, when known.
    #[serde(flatten)]
    pub location: Location,
    /// What happened and what was done about it.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.location == Location::default() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.location, self.message)
        }
    }
}
