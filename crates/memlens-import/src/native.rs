//! The native MemLens format: JSON Lines that round-trip everything the trace model holds. It is
//! what the web app and the npm package export and import. Specified in `docs/native-format.md`.
//!
//! ```text
//! {"$schema":"https://memlens.dev/schema/trace-v1.json","type":"memlens","version":1}
//! {"type":"trace","id":"run-1","format":"openai","model":"gpt-4o"}
//! {"type":"chunk","id":0,"key":"m0","category":"system","content":"...","starts_message":true,...}
//! {"type":"call","index":0,"input":[0,1],"output":[2],...}
//! {"type":"tool_pair","id":"call_1","call":3,"result":4}
//! {"type":"probe","question":"...","evidence":["D1:3"],"evidence_chunks":[2]}
//! {"type":"compaction","first_call":7,"trigger":"auto","replaced":[0,1,2],"summary":9}
//! ```

use crate::document::Document;
use crate::error::ImportError;
use crate::json::str_at;
use crate::{Context, Importer, Location};
use memlens_core::{Call, Chunk, ChunkId, Compaction, Probe, ToolPair, Trace, TraceLink};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The `$schema` of the header line.
pub const SCHEMA: &str = "https://memlens.dev/schema/trace-v1.json";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;

/// The native format importer.
pub struct Native;

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line {
    Memlens {
        #[serde(rename = "$schema")]
        schema: String,
        version: u32,
    },
    Trace {
        id: String,
        format: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        attributes: BTreeMap<String, String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<TraceLink>,
    },
    Chunk(Chunk),
    Call(Call),
    ToolPair(ToolPair),
    Probe(Probe),
    Compaction(Compaction),
}

/// Writes traces in the native format (one header line, then each trace's lines).
pub fn write(traces: &[Trace]) -> String {
    let mut out = String::new();
    let mut push = |line: &Line| {
        // Serializing these plain data types cannot fail: all map keys are strings.
        out.push_str(&serde_json::to_string(line).expect("native records serialize to JSON"));
        out.push('\n');
    };
    push(&Line::Memlens {
        schema: SCHEMA.to_string(),
        version: VERSION,
    });
    for t in traces {
        push(&Line::Trace {
            id: t.id.clone(),
            format: t.format.clone(),
            model: t.model.clone(),
            attributes: t.attributes.clone(),
            parent: t.parent.clone(),
        });
        t.chunks.iter().for_each(|c| push(&Line::Chunk(c.clone())));
        t.calls.iter().for_each(|c| push(&Line::Call(c.clone())));
        t.tool_pairs
            .iter()
            .for_each(|p| push(&Line::ToolPair(p.clone())));
        t.probes.iter().for_each(|p| push(&Line::Probe(p.clone())));
        t.compactions
            .iter()
            .for_each(|c| push(&Line::Compaction(c.clone())));
    }
    out
}

/// Writes one trace in the native format as it grows, for a file an agent appends to while it
/// runs (a viewer can follow it): each [`NativeAppender::lines`] returns only the records not
/// written yet, so the file is append-only and every prefix of it that ends on a line is a valid
/// file. Records whose content can still change are held back: the newest call (usage reported
/// after a call is recorded into it) until another call follows, and tool pairs until they are
/// complete, in order; `finish` writes them all.
#[derive(Debug, Default)]
pub struct NativeAppender {
    header: bool,
    chunks: usize,
    calls: usize,
    pairs: usize,
    probes: usize,
    compactions: usize,
}

impl NativeAppender {
    /// An appender that has written nothing yet.
    pub fn new() -> NativeAppender {
        NativeAppender::default()
    }

    /// How many of the chunks the trace holds were written so far (counted from its first held
    /// chunk: see [`NativeAppender::dropped_front`]).
    pub fn chunks_written(&self) -> usize {
        self.chunks
    }

    /// How many of the calls the trace holds were written so far (the newest is held back).
    pub fn calls_written(&self) -> usize {
        self.calls
    }

    /// How many of the tool pairs the trace holds were written so far (complete ones, in order).
    pub fn pairs_written(&self) -> usize {
        self.pairs
    }

    /// True once anything was written (the header first).
    pub fn started(&self) -> bool {
        self.header
    }

    /// The host dropped this many written records from the front of the trace
    /// ([`memlens_core::builder::TraceBuilder::drop_front`]): what follows is found that much
    /// nearer the front.
    pub fn dropped_front(&mut self, chunks: usize, calls: usize, pairs: usize) {
        self.chunks = self.chunks.saturating_sub(chunks);
        self.calls = self.calls.saturating_sub(calls);
        self.pairs = self.pairs.saturating_sub(pairs);
    }

    /// The lines to append for `trace` since the last call (the header and the trace line
    /// first). `trace` must be the same trace, grown: records already written are not checked.
    pub fn lines(&mut self, trace: &Trace, finish: bool) -> String {
        let mut out = String::new();
        let mut push = |line: &Line| {
            // As in `write`: these plain data types always serialize.
            out.push_str(&serde_json::to_string(line).expect("native records serialize to JSON"));
            out.push('\n');
        };
        if !self.header {
            push(&Line::Memlens {
                schema: SCHEMA.to_string(),
                version: VERSION,
            });
            push(&Line::Trace {
                id: trace.id.clone(),
                format: trace.format.clone(),
                model: trace.model.clone(),
                attributes: trace.attributes.clone(),
                parent: trace.parent.clone(),
            });
            self.header = true;
        }
        for c in trace.chunks.iter().skip(self.chunks) {
            push(&Line::Chunk(c.clone()));
        }
        self.chunks = self.chunks.max(trace.chunks.len());
        let settled_calls = if finish {
            trace.calls.len()
        } else {
            trace.calls.len().saturating_sub(1)
        };
        for c in trace.calls.iter().take(settled_calls).skip(self.calls) {
            push(&Line::Call(c.clone()));
        }
        self.calls = self.calls.max(settled_calls);
        for p in trace.tool_pairs.iter().skip(self.pairs) {
            if !finish && (p.call.is_none() || p.result.is_none()) {
                break;
            }
            push(&Line::ToolPair(p.clone()));
            self.pairs += 1;
        }
        for p in trace.probes.iter().skip(self.probes) {
            push(&Line::Probe(p.clone()));
        }
        self.probes = self.probes.max(trace.probes.len());
        for c in trace.compactions.iter().skip(self.compactions) {
            push(&Line::Compaction(c.clone()));
        }
        self.compactions = self.compactions.max(trace.compactions.len());
        out
    }
}

impl Importer for Native {
    fn name(&self) -> &'static str {
        "memlens"
    }

    fn description(&self) -> &'static str {
        "MemLens native JSON Lines (docs/native-format.md)"
    }

    fn sniff(&self, first: &Value) -> bool {
        str_at(first, "$schema").is_some_and(|s| s.contains("memlens"))
            || str_at(first, "type") == Some("memlens")
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let mut reader = Reader::default();
        for item in doc.into_records() {
            let Some((location, value)) = cx.accept(item) else {
                continue;
            };
            reader.apply(location, &value, cx)?;
        }
        Ok(reader.traces)
    }
}

/// The native format's records applied one at a time: what the importer and the
/// [`crate::follow::Follower`] (a file read as it grows) share.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    header_seen: bool,
    /// The traces read so far.
    pub(crate) traces: Vec<Trace>,
}

/// Whether a record is one of MemLens' own (a header, a trace, a chunk, ...).
pub(crate) fn is_record(value: &Value) -> bool {
    str_at(value, "type").is_some_and(|t| KNOWN.contains(&t))
}

impl Reader {
    /// Applies one record. Returns the index of the trace it added to or started (`None`: the
    /// header, or a record of an unknown type, skipped with a warning).
    pub(crate) fn apply(
        &mut self,
        location: Location,
        value: &Value,
        cx: &mut Context<'_>,
    ) -> Result<Option<usize>, ImportError> {
        if str_at(value, "type").is_some_and(|t| !KNOWN.contains(&t)) {
            // Newer writers may add record types: skip them, keep the rest.
            cx.warn(
                location,
                format!("unknown record type {:?} skipped", str_at(value, "type")),
            );
            return Ok(None);
        }
        let line = Line::deserialize(value)
            .map_err(|e| cx.invalid(location, format!("not a valid MemLens record: {e}")))?;
        if !self.header_seen && !matches!(line, Line::Memlens { .. }) {
            return Err(cx.invalid(
                location,
                "expected the {\"type\":\"memlens\"} header line first",
            ));
        }
        match line {
            Line::Memlens { version, .. } => {
                if version > VERSION {
                    return Err(cx.invalid(
                        location,
                        format!(
                            "format version {version} is newer than this MemLens reads ({VERSION})"
                        ),
                    ));
                }
                self.header_seen = true;
                Ok(None)
            }
            Line::Trace {
                id,
                format,
                model,
                attributes,
                parent,
            } => {
                self.traces.push(Trace {
                    id,
                    format,
                    model,
                    attributes,
                    parent,
                    ..Trace::default()
                });
                Ok(Some(self.traces.len() - 1))
            }
            other => {
                let index = self.traces.len().checked_sub(1).ok_or_else(|| {
                    cx.invalid(location, "record before any {\"type\":\"trace\"} line")
                })?;
                add(&mut self.traces[index], other).map_err(|m| cx.invalid(location, m))?;
                Ok(Some(index))
            }
        }
    }
}

const KNOWN: [&str; 7] = [
    "memlens",
    "trace",
    "chunk",
    "call",
    "tool_pair",
    "probe",
    "compaction",
];

/// Adds a record to a trace, checking that every reference points at an existing chunk.
fn add(trace: &mut Trace, line: Line) -> Result<(), String> {
    let n = trace.chunks.len();
    let check = |id: ChunkId| {
        if id.index() < n {
            Ok(())
        } else {
            Err(format!(
                "chunk {} is referenced before it is defined (trace {:?} has {n} chunks so far)",
                id.0, trace.id
            ))
        }
    };
    match line {
        Line::Chunk(chunk) => {
            if chunk.id.index() != n {
                return Err(format!(
                    "chunk id {} out of sequence: expected {n}",
                    chunk.id.0
                ));
            }
            trace.chunks.push(chunk);
        }
        Line::Call(call) => {
            call.input
                .iter()
                .chain(&call.output)
                .try_for_each(|&id| check(id))?;
            trace.calls.push(call);
        }
        Line::ToolPair(pair) => {
            pair.call
                .into_iter()
                .chain(pair.result)
                .try_for_each(check)?;
            trace.tool_pairs.push(pair);
        }
        Line::Probe(probe) => {
            probe.evidence_chunks.iter().try_for_each(|&id| check(id))?;
            trace.probes.push(probe);
        }
        Line::Compaction(compaction) => {
            compaction
                .replaced
                .iter()
                .copied()
                .chain(compaction.summary)
                .try_for_each(check)?;
            trace.compactions.push(compaction);
        }
        Line::Memlens { .. } | Line::Trace { .. } => {}
    }
    Ok(())
}
