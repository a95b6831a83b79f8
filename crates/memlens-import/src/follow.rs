//! Following a trace file that is still being written: the bytes an agent appended since the last
//! read go in, the traces grow. Nothing already read is parsed again, and only new chunks are
//! counted, so an update costs what was appended, not the file.
//!
//! Two ways, chosen by the file's first record:
//! - MemLens JSON Lines (what the npm pool's `traceFile` and the Python pool's `trace_file=`
//!   write, [`crate::native::NativeAppender`]): its records only ever add to a trace, so each
//!   new line is applied to the traces read so far.
//! - Any other JSON Lines format (a Claude Code session, a Codex rollout): each new line is parsed
//!   once and kept; the traces are rebuilt from the kept records by the format's importer, since a
//!   compaction or a resumed branch rewrites what came before; chunks whose text was counted
//!   before keep their counts. The parse and the counting, most of an import, are done once.
//!
//! A file that is one JSON document (not lines) cannot be read in parts: [`is_followable`] says
//! so, and a host reads it whole again when it changes.
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
//! assert_eq!(follower.format(), Some("memlens"));
//! ```

use crate::document::{Document, RecordItem};
use crate::error::{ImportError, Location, Warning};
use crate::native::Reader;
use crate::{Context, ImportOptions, Importer};
use memlens_core::tokens::{count_chunk, count_chunk_with, TokenCounter};
use memlens_core::Trace;
use serde_json::Value;
use std::collections::HashMap;

/// Whether `head` (the first bytes of a file, at least its first line) can be read in parts by
/// [`Follower`]: MemLens JSON Lines, or JSON Lines of another format (two lines that are JSON
/// objects, one of the leading ones recognised by an importer). One JSON document on one line
/// is not.
pub fn is_followable(head: &[u8]) -> bool {
    let mut objects = head
        .split(|&b| b == b'\n')
        .map(|l| String::from_utf8_lossy(l).trim().to_string())
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(&l)
                .ok()
                .filter(Value::is_object)
        });
    let Some(Some(first)) = objects.next() else {
        return false;
    };
    if crate::native::Native.sniff(&first) {
        return true;
    }
    // Past leading metadata lines, as `crate::sniff` looks: two objects, one recognised.
    let mut leading = vec![first];
    leading.extend(objects.take(crate::SNIFF_RECORDS - 1).map_while(|o| o));
    leading.len() > 1
        && leading
            .iter()
            .any(|o| crate::IMPORTERS.iter().any(|i| i.sniff(o)))
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

/// Reads a JSON Lines trace file as it is appended to. A line is read once it ends (`\n`); the
/// unfinished last line waits for the next push. The traces equal what [`crate::import`] makes of
/// the same bytes (once they end on a line).
#[derive(Debug)]
pub struct Follower {
    file: String,
    model: Option<String>,
    /// The unfinished last line.
    pending: Vec<u8>,
    /// Lines seen (empty ones too), for locations.
    lines: usize,
    /// Records (non-empty lines) read.
    records: usize,
    /// Bytes taken in complete lines.
    consumed: u64,
    /// Warnings of reading lines (and, for MemLens JSON Lines, of applying them).
    warnings: Vec<Warning>,
    warning_count: usize,
    mode: Mode,
}

#[derive(Debug)]
enum Mode {
    /// No record recognised yet (leading metadata lines are held, up to
    /// [`crate::SNIFF_RECORDS`], as [`crate::sniff`] looks past them): the first an importer
    /// recognises says which way the file is read.
    Undecided(Vec<RecordItem>),
    /// MemLens JSON Lines, applied record by record.
    Native(Native),
    /// Another JSON Lines format, rebuilt from the kept records.
    Records(Records),
}

#[derive(Debug, Default)]
struct Native {
    reader: Reader,
    /// Per trace: chunks counted so far, and the model they were counted as.
    counted: Vec<(usize, Option<String>)>,
    /// Set by an unusable record: following stops there (the file must be fixed and reopened).
    failed: Option<ImportError>,
}

struct Records {
    importer: &'static dyn Importer,
    items: Vec<RecordItem>,
    first: Option<Value>,
    traces: Vec<Trace>,
    /// The line warnings followed by the last rebuild's.
    warnings: Vec<Warning>,
    warning_count: usize,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("importer", &self.importer.name())
            .field("items", &self.items.len())
            .field("traces", &self.traces.len())
            .finish_non_exhaustive()
    }
}

impl Follower {
    /// A follower of `file` (its name, for messages). `options.model` counts and prices every
    /// trace as that model, as in [`crate::import`]; `options.format` is ignored (the format is
    /// sniffed from the first record).
    pub fn new(file: &str, options: &ImportOptions) -> Follower {
        Follower {
            file: file.to_string(),
            model: options.model.clone(),
            pending: Vec::new(),
            lines: 0,
            records: 0,
            consumed: 0,
            warnings: Vec::new(),
            warning_count: 0,
            mode: Mode::Undecided(Vec::new()),
        }
    }

    /// Reads the bytes appended since the last push. A line that is not JSON is skipped with a
    /// warning, as [`crate::import`] does. MemLens JSON Lines: an unusable record (not a MemLens
    /// record, a reference to a chunk not defined yet, no header first) is an error naming its
    /// line; the records before it stay read and every later push returns the same error. Other
    /// formats: an error of their importer is returned, the traces stay as they were, and the
    /// next push tries again with more lines.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Update, ImportError> {
        if let Mode::Native(Native {
            failed: Some(e), ..
        }) = &self.mode
        {
            return Err(e.clone());
        }
        let mut update = Update::default();
        let mut rest = bytes;
        let mut result = Ok(());
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
            let value = serde_json::from_str::<Value>(&text).map_err(|e| {
                format!(
                    "invalid JSON at column {}: {}",
                    e.column(),
                    crate::document::strip_position(&e.to_string())
                )
            });
            if let Err(e) = self.take(location, value, &mut update) {
                result = Err(e);
                break;
            }
        }
        if result.is_ok() {
            self.pending.extend_from_slice(rest);
        }
        self.finish(&mut update);
        result.map(|()| update)
    }

    /// The traces read so far (tokens counted).
    pub fn traces(&self) -> &[Trace] {
        match &self.mode {
            Mode::Undecided(_) => &[],
            Mode::Native(n) => &n.reader.traces,
            Mode::Records(r) => &r.traces,
        }
    }

    /// The format being read (an importer's name), once the first record said it.
    pub fn format(&self) -> Option<&'static str> {
        match &self.mode {
            Mode::Undecided(_) => None,
            Mode::Native(_) => Some(crate::native::Native.name()),
            Mode::Records(r) => Some(r.importer.name()),
        }
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
        match &self.mode {
            Mode::Records(r) => (&r.warnings, r.warning_count),
            _ => (&self.warnings, self.warning_count),
        }
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

    /// Takes one record: decides the mode at the first, then applies it (MemLens) or keeps it.
    fn take(
        &mut self,
        location: Location,
        value: Result<Value, String>,
        update: &mut Update,
    ) -> Result<(), ImportError> {
        let Mode::Undecided(held) = &mut self.mode else {
            return match &mut self.mode {
                Mode::Records(r) => {
                    r.items.push((location, value));
                    Ok(())
                }
                _ => self.apply_native(location, value, update),
            };
        };
        let importer = value.as_ref().ok().and_then(|v| {
            crate::IMPORTERS
                .iter()
                .copied()
                .find(|i| v.is_object() && i.sniff(v))
        });
        let first = importer.and_then(|_| value.as_ref().ok().cloned());
        // A MemLens record without its header is read (and refused) at once, not held.
        let native = value.as_ref().is_ok_and(crate::native::is_record);
        held.push((location, value));
        if importer.is_none() && !native && held.len() < crate::SNIFF_RECORDS {
            return Ok(());
        }
        let held = std::mem::take(held);
        match importer {
            Some(i) if i.name() != crate::native::Native.name() => {
                self.mode = Mode::Records(Records {
                    importer: i,
                    items: held,
                    first,
                    traces: Vec::new(),
                    warnings: Vec::new(),
                    warning_count: 0,
                });
                Ok(())
            }
            // MemLens, or nothing recognised: the MemLens reader names what it expected.
            _ => {
                self.mode = Mode::Native(Native::default());
                held.into_iter()
                    .try_for_each(|(location, value)| self.apply_native(location, value, update))
            }
        }
    }

    fn apply_native(
        &mut self,
        location: Location,
        value: Result<Value, String>,
        update: &mut Update,
    ) -> Result<(), ImportError> {
        let mut cx = Context::new(&self.file);
        let result = match (&mut self.mode, value) {
            (Mode::Native(n), Ok(value)) => n.reader.apply(location, &value, &mut cx),
            (_, Ok(_)) => Ok(None),
            (_, Err(message)) => {
                cx.warn(location, format!("skipped: {message}"));
                Ok(None)
            }
        };
        self.take_warnings((cx.warnings, cx.warning_count));
        let Mode::Native(n) = &mut self.mode else {
            return Ok(());
        };
        let index = match result {
            Ok(Some(index)) => index,
            Ok(None) => return Ok(()),
            Err(e) => {
                n.failed = Some(e.clone());
                return Err(e);
            }
        };
        if let Err(i) = update.changed.binary_search(&index) {
            update.changed.insert(i, index);
        }
        if index >= n.counted.len() {
            if let (Some(model), Some(trace)) = (&self.model, n.reader.traces.get_mut(index)) {
                trace.model = Some(model.clone());
            }
            n.counted.resize(index + 1, (0, None));
        }
        Ok(())
    }

    /// After a push's lines: counts what MemLens records added, or rebuilds the other formats'
    /// traces from the kept records.
    fn finish(&mut self, update: &mut Update) {
        match &mut self.mode {
            Mode::Undecided(_) => {}
            Mode::Native(n) => n.count(update),
            Mode::Records(r) if update.records > 0 => {
                r.rebuild(&self.file, self.model.as_deref(), update);
                r.warning_count += self.warning_count;
                let mut warnings = self.warnings.clone();
                let room = crate::MAX_WARNINGS.saturating_sub(warnings.len());
                warnings.extend(r.warnings.drain(..).take(room));
                r.warnings = warnings;
            }
            Mode::Records(_) => {}
        }
    }
}

impl Native {
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

impl Records {
    /// Imports the kept records again (no parsing: they are values already) and counts the
    /// chunks; a chunk whose text the same trace had before, counted as the same model, keeps
    /// its count. An importer error leaves the traces as they were and is a warning: the next
    /// lines may complete what is missing.
    fn rebuild(&mut self, file: &str, model: Option<&str>, update: &mut Update) {
        let mut cx = Context::new(file);
        let doc = Document::Records {
            items: &self.items,
            first: self.first.clone(),
        };
        let mut traces = match self.importer.import(doc, &mut cx) {
            Ok(traces) => traces,
            Err(e) => {
                cx.warn(Location::default(), format!("not read yet: {e}"));
                self.warnings = cx.warnings;
                self.warning_count = cx.warning_count;
                return;
            }
        };
        for (index, trace) in traces.iter_mut().enumerate() {
            if let Some(model) = model {
                trace.model = Some(model.to_string());
            }
            let before = self
                .traces
                .iter()
                .find(|t| t.id == trace.id && t.main_model() == trace.main_model());
            let known: HashMap<&str, u32> = before
                .map(|t| {
                    t.chunks
                        .iter()
                        .map(|c| (c.content.as_str(), c.content_tokens))
                        .collect()
                })
                .unwrap_or_default();
            let counter = TokenCounter::for_model(trace.main_model());
            // A text the trace had before has the count it had (same model): exact, not a guess.
            let mut count = |text: &str| {
                known
                    .get(text)
                    .copied()
                    .unwrap_or_else(|| counter.count(text))
            };
            for chunk in &mut trace.chunks {
                if !known.contains_key(chunk.content.as_str()) {
                    update.counted += 1;
                }
                count_chunk_with(chunk, &mut count);
            }
            // As a whole import does (`crate::import`).
            memlens_core::unrecorded::account(trace);
            if self.traces.get(index) != Some(trace) {
                update.changed.push(index);
            }
        }
        self.traces = traces;
        self.warnings = cx.warnings;
        self.warning_count = cx.warning_count;
    }
}
