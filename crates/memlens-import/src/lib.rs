//! MemLens importers: the bytes of a trace file in, [`memlens_core::Trace`]s with exact token counts
//! out. One importer per format, each a [`Importer`] in the static list [`IMPORTERS`]; the format is
//! sniffed from the content unless the caller names it: the leading records are tried in order,
//! each against every importer in list order, and the first record any importer recognises
//! decides (16 formats; `docs/formats.md` lists them with their upstream sources).
//!
//! Besides the importers: `document` (decoding and the streaming parse: one JSON value, a top-level
//! array split into elements, or JSON Lines), `gzip`, [`import_many`] and [`link_traces`] (several
//! files as one set: a subagent's trace gets its parent's call), the native JSON Lines reader and
//! writer (`native`), `follow` (a JSON Lines file read as it grows: appended bytes in, only new
//! lines parsed and new chunks counted; MemLens records applied one by one, other formats rebuilt
//! by their importer from the kept parsed lines, `Document::Records`) and `live` (one chat message
//! or usage object at a time, for the live pool, with the importers' own parsing).
//!
//! ```
//! use memlens_import::{import, ImportOptions};
//!
//! let file = br#"{"model": "gpt-4o", "messages": [
//!     {"role": "user", "content": "What is 2+2?"},
//!     {"role": "assistant", "content": "4"}]}"#;
//! let result = import("chat.json", file, &ImportOptions::default()).unwrap();
//! assert_eq!(result.format, "openai");
//! let trace = &result.traces[0];
//! assert_eq!(trace.calls.len(), 1);
//! assert_eq!(trace.chunks[0].content_tokens, 7);
//! ```
//!
//! Pure like the core: no file system, no clock. Bad input never panics: an unusable file is an
//! [`ImportError`] naming the file and the line or record; recoverable problems are [`Warning`]s.

mod anthropic;
mod atif;
mod chat;
mod claude_code;
mod codex;
pub mod document;
mod error;
pub mod follow;
mod gemini;
pub mod gzip;
mod json;
mod langfuse;
mod langsmith;
pub mod live;
mod locomo;
mod logs;
pub mod native;
mod openai;
mod openhands;
mod openinference;
mod otel;
mod swe_agent;
mod tau;

pub use error::{ImportError, Location, Warning};

use document::Document;
use memlens_core::builder::TraceBuilder;
use memlens_core::tokens::{count_trace, TokenCounter};
use memlens_core::Trace;
use serde_json::Value;
use std::collections::BTreeMap;

/// One trace format.
pub trait Importer: Sync {
    /// The name used by `--format` and reported as the trace's format.
    fn name(&self) -> &'static str;
    /// One line on what it reads.
    fn description(&self) -> &'static str;
    /// Whether `record`, one of the document's leading records (the whole document, an element
    /// of a top-level array, or a JSON Lines record; see [`sniff`]), looks like this format.
    fn sniff(&self, record: &Value) -> bool;
    /// Reads the document.
    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError>;
}

/// Every importer, in sniffing order: the most specific shapes first.
pub static IMPORTERS: &[&dyn Importer] = &[
    &native::Native,
    &openinference::OpenInference,
    &otel::Otel,
    &locomo::Locomo,
    &tau::TauBench,
    &atif::Atif,
    &claude_code::ClaudeCode,
    &codex::Codex,
    &gemini::GeminiCli,
    &swe_agent::SweAgent,
    &swe_agent::MiniSweAgent,
    &openhands::OpenHands,
    &langfuse::Langfuse,
    &langsmith::LangSmith,
    &anthropic::Anthropic,
    &openai::OpenAi,
];

/// What the caller may set.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Skip sniffing and use this importer (its [`Importer::name`]).
    pub format: Option<String>,
    /// Count and price as this model, whatever the trace says.
    pub model: Option<String>,
}

/// The result of an import.
#[derive(Debug, Clone)]
pub struct Import {
    /// The importer used.
    pub format: &'static str,
    /// The traces, tokens counted.
    pub traces: Vec<Trace>,
    /// Recoverable problems (at most [`MAX_WARNINGS`] kept).
    pub warnings: Vec<Warning>,
    /// All warnings, including those not kept.
    pub warning_count: usize,
    /// Every warning counted by its kind ([`warning_kind`]): what the summary lists when
    /// there are more than are kept.
    pub warning_kinds: BTreeMap<String, usize>,
}

/// The kind of a warning: its message with every number written `N`, so that warnings that
/// differ only in a line, an index or a count are one kind (`unknown record type "x"
/// skipped`, `line N is not JSON`).
pub fn warning_kind(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut in_number = false;
    for ch in message.chars() {
        if ch.is_ascii_digit() {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(ch);
        }
    }
    out
}

/// How many warnings are kept in full; the rest are only counted.
pub const MAX_WARNINGS: usize = 200;

/// Collects warnings while an importer runs.
#[derive(Debug)]
pub struct Context<'a> {
    file: &'a str,
    warnings: Vec<Warning>,
    warning_count: usize,
    warning_kinds: BTreeMap<String, usize>,
}

impl<'a> Context<'a> {
    fn new(file: &'a str) -> Context<'a> {
        Context {
            file,
            warnings: Vec::new(),
            warning_count: 0,
            warning_kinds: BTreeMap::new(),
        }
    }

    /// Records a recoverable problem.
    pub fn warn(&mut self, location: Location, message: impl Into<String>) {
        let message = message.into();
        self.warning_count += 1;
        *self
            .warning_kinds
            .entry(warning_kind(&message))
            .or_insert(0) += 1;
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(Warning {
                file: self.file.to_string(),
                location,
                message,
            });
        }
    }

    /// An error for unusable content at `location`.
    pub fn invalid(&self, location: Location, message: impl Into<String>) -> ImportError {
        ImportError::Invalid {
            file: self.file.to_string(),
            location,
            message: message.into(),
        }
    }

    /// Passes a parsed record through; a record that failed to parse becomes a warning.
    pub fn accept(&mut self, item: document::RecordItem) -> Option<(Location, Value)> {
        match item {
            (location, Ok(value)) => Some((location, value)),
            (location, Err(message)) => {
                self.warn(location, format!("skipped: {message}"));
                None
            }
        }
    }

    /// Finishes a builder, keeping its warnings.
    pub fn finish(&mut self, builder: TraceBuilder, location: Location) -> Trace {
        let (trace, warnings) = builder.finish();
        for w in warnings {
            self.warn(location, w);
        }
        trace
    }
}

/// Finds the importer named `name`.
pub fn importer_named(name: &str) -> Result<&'static dyn Importer, ImportError> {
    IMPORTERS
        .iter()
        .copied()
        .find(|i| i.name() == name)
        .ok_or_else(|| ImportError::UnknownFormat {
            name: name.to_string(),
            known: IMPORTERS
                .iter()
                .map(|i| i.name())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// How many leading records [`sniff`] looks at.
pub(crate) const SNIFF_RECORDS: usize = 32;

/// Which importer would read `doc`, if any. The leading records are tried in order (at most the
/// first 32, so a huge file stays fast; records that do not parse are passed over), each
/// against every importer in [`IMPORTERS`] order: the first record an importer recognises decides,
/// so a file may open with metadata records no importer claims (a Claude Code session's `mode`
/// or `tag` line), and the order of [`IMPORTERS`] is still the priority.
pub fn sniff(doc: &Document) -> Option<&'static dyn Importer> {
    doc.leading_values(SNIFF_RECORDS).find_map(|record| {
        let record = match record.as_ref() {
            // A JSON Lines record that is itself an array (a bare message list per line).
            Value::Array(items) => items.first()?,
            record => record,
        };
        IMPORTERS.iter().copied().find(|i| i.sniff(record))
    })
}

const EXPECTED: &str = "OpenAI or Anthropic messages or request/response logs, OTLP JSON spans \
(OpenInference too), a Claude Code, Codex or Gemini CLI session, an OpenHands event stream, a \
SWE-agent or mini-swe-agent trajectory, an ATIF trajectory (Harbor), a Langfuse or LangSmith \
export, a tau-bench trajectory, a LoCoMo conversation, or MemLens JSON Lines";

/// Imports a trace file: decompress (gzip, up to [`gzip::limit`]), decode, parse, sniff (or
/// `options.format`), import, count tokens.
pub fn import(file: &str, bytes: &[u8], options: &ImportOptions) -> Result<Import, ImportError> {
    let bytes = gzip::decompress(file, bytes, gzip::limit())?;
    let (text, bad_utf8) = document::decode(&bytes);
    let doc = document::parse(file, &text)?;
    let mut cx = Context::new(file);
    if let Some(offset) = bad_utf8 {
        cx.warn(
            Location::default(),
            format!(
                "invalid UTF-8 at byte offset {offset}; invalid sequences replaced with U+FFFD"
            ),
        );
    }
    let importer = match &options.format {
        Some(name) => importer_named(name)?,
        None => sniff(&doc).ok_or_else(|| ImportError::Unrecognized {
            file: file.to_string(),
            found: match doc.first_value() {
                Some(first) => json::describe(first),
                None => doc
                    .why_no_first_value()
                    .unwrap_or_else(|| "no records".to_string()),
            },
            expected: EXPECTED,
        })?,
    };
    let mut traces = importer.import(doc, &mut cx)?;
    if traces.is_empty() {
        return Err(cx.invalid(
            Location::default(),
            format!("no traces found in this {} file", importer.name()),
        ));
    }
    for trace in &mut traces {
        if let Some(model) = &options.model {
            trace.model = Some(model.clone());
        }
        count_trace(trace, &TokenCounter::for_model(trace.main_model()));
        memlens_core::unrecorded::account(trace);
    }
    Ok(Import {
        format: importer.name(),
        traces,
        warning_count: cx.warning_count,
        warnings: cx.warnings,
        warning_kinds: cx.warning_kinds,
    })
}

/// One file of a set handed to [`import_many`].
#[derive(Debug, Clone, Copy)]
pub struct FileInput<'a> {
    /// The file's name as the user knows it (a path relative to the folder opened).
    pub name: &'a str,
    /// Its bytes.
    pub bytes: &'a [u8],
}

/// Imports several files at once (a project folder, a session with its subagents' files) and
/// links traces across them: a trace whose [`memlens_core::TraceLink`] names a parent trace
/// found in the set gets the parent's call that started it. Each file succeeds or fails on its
/// own; the results are in the order of `files`.
pub fn import_many(
    files: &[FileInput<'_>],
    options: &ImportOptions,
) -> Vec<Result<Import, ImportError>> {
    let mut results: Vec<Result<Import, ImportError>> = files
        .iter()
        .map(|f| import(f.name, f.bytes, options))
        .collect();
    let mut traces: Vec<&mut Trace> = results
        .iter_mut()
        .filter_map(|r| r.as_mut().ok())
        .flat_map(|i| i.traces.iter_mut())
        .collect();
    link_traces(&mut traces);
    results
}

/// Fills in [`memlens_core::TraceLink::call`] for traces whose parent is in `traces`: the
/// parent's call whose output holds the tool call that started the child. A child that does not
/// know that tool call's id gets it from the parent (see [`spawning_tool_call`]).
pub fn link_traces(traces: &mut [&mut Trace]) {
    let mut links = Vec::new();
    for (i, child) in traces.iter().enumerate() {
        let Some(link) = &child.parent else { continue };
        if link.call.is_some() {
            continue;
        }
        let Some(parent) = traces.iter().find(|t| t.id == link.trace) else {
            continue;
        };
        let Some(tool_call_id) = link
            .tool_call_id
            .clone()
            .or_else(|| spawning_tool_call(parent, child))
        else {
            continue;
        };
        let call = parent.calls.iter().find(|c| {
            c.output
                .iter()
                .any(|&id| parent.chunk(id).meta.tool_call_id.as_deref() == Some(&tool_call_id))
        });
        if let Some(call) = call {
            links.push((i, call.index, tool_call_id));
        }
    }
    for (i, call, tool_call_id) in links {
        if let Some(link) = traces[i].parent.as_mut() {
            link.call = Some(call);
            link.tool_call_id.get_or_insert(tool_call_id);
        }
    }
}

/// The parent's tool call that started `child`, for a child whose own file cannot name it (a
/// Claude Code subagent): the parent's attribute `agent_tool_call.<id>` for the child's
/// `agent_id` attribute, else the parent tool call whose `prompt` argument is the child's first
/// user message.
fn spawning_tool_call(parent: &Trace, child: &Trace) -> Option<String> {
    if let Some(agent) = child.attributes.get("agent_id") {
        if let Some(id) = parent.attributes.get(&format!("agent_tool_call.{agent}")) {
            return Some(id.clone());
        }
    }
    let prompt = &child
        .chunks
        .iter()
        .find(|c| c.category == memlens_core::Category::User)?
        .content;
    parent
        .chunks
        .iter()
        .filter(|c| c.category == memlens_core::Category::ToolCall)
        .find(|c| {
            serde_json::from_str::<Value>(&c.content)
                .is_ok_and(|args| json::str_at(&args, "prompt") == Some(prompt.as_str()))
        })
        .and_then(|c| c.meta.tool_call_id.clone())
}
