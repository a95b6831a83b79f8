//! Following a trace file that is still being written: the bytes an agent appended since the last
//! read go in, the traces grow. Nothing already read is parsed again, and only new chunks are
//! counted, so an update costs what was appended, not the file.
//!
//! Incremental for MemLens JSON Lines (what the npm pool's `traceFile` and the Python pool's
//! `trace_file=` write, [`crate::native::NativeAppender`]): its records only ever add to a trace.
//! Other formats rebuild calls from the whole message list at the end of an import (a Claude Code
//! session's compaction rewrites what came before), so a host follows them by importing the file
//! again; [`is_followable`] says which case a file is.
//!
//! ```
//! use memlens_import::follow::Follower;
//! use memlens_import::ImportOptions;
//!
//! let mut follower = Follower::new("run.jsonl", &ImportOptions::default());
//! let head = concat!(
//!     r#"{"type":"memlens","$schema":"https://memlens.dev/schema/trace-v1.json","version":1}"#, "\n",
//!     r#"{"type":"trace","id":"run","format":"openai","model":"gpt-4o"}"#, "\n",
//!     r#"{"type":"chunk","id":0,"key":"m0","category":"user","content":"Hi"#, // line not ended yet
//! );
//! let update = follower.push(head.as_bytes()).unwrap();
//! assert_eq!((update.records, follower.traces()[0].chunks.len()), (2, 0));
//! follower.push(b" there\",\"starts_message\":true}\n").unwrap();
//! assert_eq!(follower.traces()[0].chunks[0].content, "Hi there");
//! assert!(follower.traces()[0].chunks[0].tokens > 0);
//! ```

use crate::error::{ImportError, Location, Warning};
use crate::native::Reader;
use crate::{Context, ImportOptions, Importer};
use memlens_core::tokens::{count_chunk, TokenCounter};
use memlens_core::Trace;
use serde_json::Value;

/// Whether `head` (the first bytes of a file, at least its first line) is MemLens JSON Lines,
/// which [`Follower`] reads incrementally.
pub fn is_followable(head: &[u8]) -> bool {
    let first = head
        .split(|&b| b == b'\n')
        .map(|l| String::from_utf8_lossy(l).trim().to_string())
        .find(|l| !l.is_empty());
    first
        .and_then(|l| serde_json::from_str::<Value>(&l).ok())
        .is_some_and(|v| crate::native::Native.sniff(&v))
}

/// What one [`Follower::push`] added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Update {
    /// Records (complete lines) read by this push.
    pub records: usize,
    /// Indices of the traces that changed or were started, ascending.
    pub changed: Vec<usize>,
    /// Chunks counted by this push (only new ones, unless a trace's model became known and its
    /// chunks were recounted).
    pub counted: usize,
}

/// Reads MemLens JSON Lines as they are appended. A line is read once it ends (`\n`); the
/// unfinished last line waits for the next push. The traces equal what [`crate::import`] makes of
/// the same bytes (once they end on a line).
#[derive(Debug)]
pub struct Follower {
    file: String,
    model: Option<String>,
    reader: Reader,
    /// The unfinished last line.
    pending: Vec<u8>,
    /// Lines seen (empty ones too), for locations.
    lines: usize,
    /// Records (non-empty lines) read.
    records: usize,
    /// Bytes taken in complete lines.
    consumed: u64,
    /// Per trace: chunks counted so far, and the model they were counted as.
    counted: Vec<(usize, Option<String>)>,
    warnings: Vec<Warning>,
    warning_count: usize,
    /// Set by an unusable record: following stops there (the file must be fixed and reopened).
    failed: Option<ImportError>,
}

impl Follower {
    /// A follower of `file` (its name, for messages). `options.model` counts and prices every
    /// trace as that model, as in [`crate::import`]; `options.format` is ignored (the format is
    /// MemLens JSON Lines).
    pub fn new(file: &str, options: &ImportOptions) -> Follower {
        Follower {
            file: file.to_string(),
            model: options.model.clone(),
            reader: Reader::default(),
            pending: Vec::new(),
            lines: 0,
            records: 0,
            consumed: 0,
            counted: Vec::new(),
            warnings: Vec::new(),
            warning_count: 0,
            failed: None,
        }
    }

    /// Reads the bytes appended since the last push. An unusable record (not a MemLens record, a
    /// reference to a chunk not defined yet, no header first) is an error naming its line; the
    /// records before it stay read and every later push returns the same error. A line that is
    /// not JSON is skipped with a warning, as [`crate::import`] does.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Update, ImportError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut update = Update::default();
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let (line, tail) = rest.split_at(end);
            rest = &tail[1..];
            self.consumed += (self.pending.len() + line.len() + 1) as u64;
            let text = if self.pending.is_empty() {
                self.line_text(line)
            } else {
                let mut whole = std::mem::take(&mut self.pending);
                whole.extend_from_slice(line);
                self.line_text(&whole)
            };
            self.lines += 1;
            if text.trim().is_empty() {
                continue;
            }
            let location = Location::record(self.records, Some(self.lines));
            self.records += 1;
            update.records += 1;
            if let Err(e) = self.apply(location, &text, &mut update) {
                self.failed = Some(e.clone());
                self.count(&mut update);
                return Err(e);
            }
        }
        self.pending.extend_from_slice(rest);
        self.count(&mut update);
        Ok(update)
    }

    /// The traces read so far (tokens counted).
    pub fn traces(&self) -> &[Trace] {
        &self.reader.traces
    }

    /// Bytes received: complete lines read plus the unfinished last line held.
    pub fn bytes(&self) -> u64 {
        self.consumed + self.pending.len() as u64
    }

    /// Records read so far.
    pub fn records(&self) -> usize {
        self.records
    }

    /// Warnings so far (at most [`crate::MAX_WARNINGS`] kept) and how many there were in all.
    pub fn warnings(&self) -> (&[Warning], usize) {
        (&self.warnings, self.warning_count)
    }

    /// A line's text; invalid UTF-8 is replaced and warned about, as a whole import does.
    fn line_text(&mut self, line: &[u8]) -> String {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match std::str::from_utf8(line) {
            Ok(s) => s.to_string(),
            Err(e) => {
                let location = Location {
                    line: Some(self.lines + 1),
                    record: None,
                };
                self.warn(
                    location,
                    format!(
                        "invalid UTF-8 at byte {} of the line; invalid sequences replaced with U+FFFD",
                        e.valid_up_to()
                    ),
                );
                String::from_utf8_lossy(line).into_owned()
            }
        }
    }

    fn warn(&mut self, location: Location, message: String) {
        let mut cx = Context::new(&self.file);
        cx.warn(location, message);
        self.take_warnings((cx.warnings, cx.warning_count));
    }

    fn take_warnings(&mut self, (warnings, count): (Vec<Warning>, usize)) {
        self.warning_count += count;
        let room = crate::MAX_WARNINGS.saturating_sub(self.warnings.len());
        self.warnings.extend(warnings.into_iter().take(room));
    }

    fn apply(
        &mut self,
        location: Location,
        text: &str,
        update: &mut Update,
    ) -> Result<(), ImportError> {
        let mut cx = Context::new(&self.file);
        let result = match serde_json::from_str::<Value>(text) {
            Ok(value) => self.reader.apply(location, &value, &mut cx),
            Err(e) => {
                let message = crate::document::strip_position(&e.to_string());
                cx.warn(
                    location,
                    format!("skipped: invalid JSON at column {}: {message}", e.column()),
                );
                Ok(None)
            }
        };
        self.take_warnings((cx.warnings, cx.warning_count));
        if let Some(index) = result? {
            if let Err(i) = update.changed.binary_search(&index) {
                update.changed.insert(i, index);
            }
            if index >= self.counted.len() {
                if let (Some(model), Some(trace)) = (&self.model, self.reader.traces.get_mut(index))
                {
                    trace.model = Some(model.clone());
                }
                self.counted.resize(index + 1, (0, None));
            }
        }
        Ok(())
    }

    /// Counts the chunks the changed traces gained; a trace whose model became known (its first
    /// call named it) is recounted whole, so counts equal a whole import's.
    fn count(&mut self, update: &mut Update) {
        for &index in &update.changed {
            let (Some(trace), Some(done)) = (
                self.reader.traces.get_mut(index),
                self.counted.get_mut(index),
            ) else {
                continue;
            };
            let model = trace.main_model().map(str::to_string);
            if done.1 != model {
                done.0 = 0;
                done.1 = model;
            }
            if done.0 == trace.chunks.len() {
                continue;
            }
            let counter = TokenCounter::for_model(done.1.as_deref());
            for chunk in &mut trace.chunks[done.0..] {
                count_chunk(chunk, &counter);
            }
            update.counted += trace.chunks.len() - done.0;
            done.0 = trace.chunks.len();
        }
    }
}
