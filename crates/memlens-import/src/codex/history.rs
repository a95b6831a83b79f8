//! The model context as an agent holds it, at message granularity, and the calls made on it: a
//! small layer over [`TraceBuilder`]'s request-log mode (`push_call` with explicit inputs) for
//! agents that rewrite their history (compaction, rewind). Used by the Codex and Gemini CLI
//! importers.

use crate::error::Location;
use crate::Context;
use memlens_core::builder::{CallInfo, CompactionInfo, Message, TraceBuilder};
use memlens_core::{ChunkId, Compaction, Trace};
use std::collections::{HashMap, HashSet};

/// The context and the trace being built.
pub(crate) struct History {
    builder: TraceBuilder,
    /// The context now, in order.
    pub(crate) context: Vec<Entry>,
    /// How many messages of each identity were created, so that every message gets new chunks.
    created: HashMap<u64, usize>,
    /// A compaction waiting for the next call.
    compaction: Option<CompactionInfo>,
}

/// One message of the context.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// [`Message::identity_hash`]: equal messages in a replacement history are the same entry.
    pub(crate) hash: u64,
    pub(crate) chunks: Vec<ChunkId>,
    pub(crate) kind: EntryKind,
    /// The source's id for the message, when it has one.
    pub(crate) key: Option<String>,
}

/// What a context entry is, for the compaction rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    /// Instructions sent outside the history: kept through every compaction.
    System,
    /// Context the agent rebuilds after a compaction (developer messages, environment).
    Initial,
    /// A message the user typed; `bytes` of text.
    User { bytes: usize },
    /// Anything else.
    Other,
}

impl History {
    pub(crate) fn new(id: impl Into<String>, format: &str) -> History {
        History {
            builder: TraceBuilder::new(id, format),
            context: Vec::new(),
            created: HashMap::new(),
            compaction: None,
        }
    }

    pub(crate) fn builder(&mut self) -> &mut TraceBuilder {
        &mut self.builder
    }

    /// New chunks for `message` (never shared with an earlier identical message).
    pub(crate) fn create(&mut self, message: &Message, kind: EntryKind) -> Entry {
        let hash = message.identity_hash();
        let n = self.created.entry(hash).or_insert(0);
        let chunks = self.builder.intern_message(message, *n);
        *n += 1;
        Entry {
            hash,
            chunks,
            kind,
            key: None,
        }
    }

    /// Creates `message` and appends it to the context; returns its chunks.
    pub(crate) fn push(&mut self, message: &Message, kind: EntryKind) -> Vec<ChunkId> {
        let entry = self.create(message, kind);
        let chunks = entry.chunks.clone();
        self.context.push(entry);
        chunks
    }

    /// The context as a call input.
    pub(crate) fn input(&self) -> Vec<ChunkId> {
        self.context
            .iter()
            .flat_map(|e| e.chunks.iter().copied())
            .collect()
    }

    /// Records a call (after the compaction waiting for it, if any).
    pub(crate) fn call(&mut self, input: Vec<ChunkId>, output: Vec<ChunkId>, info: CallInfo) {
        if let Some(compaction) = self.compaction.take() {
            self.builder.push_compaction(compaction);
        }
        self.builder.push_call(input, output, info);
    }

    /// Replaces the context by `entries`; with `compaction`, records what left it as replaced.
    pub(crate) fn replace(&mut self, entries: Vec<Entry>, compaction: Option<CompactionInfo>) {
        let kept: HashSet<ChunkId> = entries.iter().flat_map(|e| e.chunks.clone()).collect();
        let replaced: Vec<ChunkId> = self
            .context
            .iter()
            .flat_map(|e| e.chunks.iter().copied())
            .filter(|id| !kept.contains(id))
            .collect();
        self.context = entries;
        if let Some(info) = compaction {
            if let Some(earlier) = self.compaction.take() {
                // Two compactions without a call between them: the first one is recorded alone.
                self.builder.push_compaction(earlier);
            }
            self.compaction = Some(CompactionInfo {
                replaced: Some(replaced),
                ..info
            });
        }
    }

    /// Finishes the trace; a compaction no call followed is recorded with `first_call` = the
    /// number of calls.
    pub(crate) fn finish(self, cx: &mut Context<'_>, location: Location) -> Trace {
        let mut trace = cx.finish(self.builder, location);
        if let Some(info) = self.compaction {
            trace.compactions.push(Compaction {
                first_call: trace.calls.len() as u32,
                trigger: info.trigger,
                timestamp: info.timestamp,
                reported_tokens_before: info.reported_tokens_before,
                reported_tokens_after: info.reported_tokens_after,
                replaced: info.replaced.unwrap_or_default(),
                summary: info.summary,
                source: info.source,
            });
        }
        trace
    }
}
