//! Building a [`Trace`] from chat messages, whichever format they came in.
//!
//! Importers turn their format into [`Message`]s (a role and typed parts) and hand them to a
//! [`TraceBuilder`], which creates chunks, pairs tool calls with results and records calls. Two ways
//! to get calls:
//! - [`TraceBuilder::push_message`] for a final message list; then
//!   [`TraceBuilder::reconstruct_calls`]: every assistant message is the output of one call whose
//!   input is everything before it;
//! - [`TraceBuilder::intern_message`] + [`TraceBuilder::push_call`] for request/response logs, where
//!   each call lists its whole input: a message seen before is the same chunk, not a copy.

use crate::model::{
    Call, Category, Chunk, ChunkId, ChunkMeta, Compaction, Probe, SourcePos, ToolPair, Trace, Usage,
};
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

/// The role of a chat message, normalized across formats.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Role {
    /// `system` or `developer`.
    System,
    /// `user` (or `human`).
    User,
    /// `assistant` (or `model`, `ai`).
    Assistant,
    /// `tool` / `function` results.
    Tool,
    /// Any other role, kept by name.
    Other(String),
}

impl Role {
    /// Maps a role name from any supported format.
    pub fn parse(name: &str) -> Role {
        match name {
            "system" | "developer" => Role::System,
            "user" | "human" => Role::User,
            "assistant" | "model" | "ai" | "bot" => Role::Assistant,
            "tool" | "function" | "ipython" => Role::Tool,
            other => Role::Other(other.to_string()),
        }
    }

    fn default_category(&self) -> Category {
        match self {
            Role::System => Category::System,
            Role::User => Category::User,
            Role::Assistant => Category::Assistant,
            Role::Tool => Category::ToolResult,
            Role::Other(_) => Category::Other,
        }
    }
}

/// One typed part of a message.
#[derive(Debug, Clone, PartialEq, Hash)]
pub enum Part {
    /// Text; its category follows the message role.
    Text(String),
    /// Reasoning / thinking text.
    Reasoning(String),
    /// A tool call: id, tool name, arguments as the original JSON text.
    ToolCall {
        /// Tool call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments, original JSON text.
        arguments: String,
    },
    /// A tool result: id of the call it answers, and its content as text.
    ToolResult {
        /// Tool call id this answers.
        id: String,
        /// Tool name when the format gives it.
        name: Option<String>,
        /// Result content, original text.
        content: String,
    },
    /// Anything else (image, file, unknown block type), kept as descriptive text.
    Other {
        /// The source's name for it.
        kind: String,
        /// A text rendering.
        text: String,
    },
}

impl Part {
    /// The text of content parts as one string, one part a line: text and other parts' text;
    /// tool calls and results, and reasoning, are left out (a tool result's own content parts).
    pub fn joined_text(parts: Vec<Part>) -> String {
        parts
            .into_iter()
            .filter_map(|p| match p {
                Part::Text(t) | Part::Other { text: t, .. } => Some(t),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A chat message in normalized form.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Message {
    /// Role.
    pub role: Option<Role>,
    /// The original role name (kept in chunk metadata).
    pub role_name: String,
    /// The `name` field of the message, or a speaker.
    pub name: Option<String>,
    /// Content parts, in order.
    pub parts: Vec<Part>,
    /// Category for text parts when it is not the role's default (e.g. a summary).
    pub category: Option<Category>,
    /// Extra metadata copied to every chunk made from this message.
    pub meta: ChunkMeta,
    /// True for content sent outside the message list (tool definitions): no message framing.
    pub unframed: bool,
}

impl Message {
    /// A message with one text part.
    pub fn text(role_name: &str, text: impl Into<String>) -> Message {
        Message {
            role: Some(Role::parse(role_name)),
            role_name: role_name.to_string(),
            parts: vec![Part::Text(text.into())],
            ..Message::default()
        }
    }

    fn role(&self) -> Role {
        self.role
            .clone()
            .unwrap_or_else(|| Role::parse(&self.role_name))
    }

    /// A hash of role, name and parts: equal messages hash equal (used to intern resent history).
    pub fn identity_hash(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.role_name.hash(&mut h);
        self.name.hash(&mut h);
        self.parts.hash(&mut h);
        h.finish()
    }
}

/// Options of a call recorded with [`TraceBuilder::push_call`].
#[derive(Debug, Clone, Default)]
pub struct CallInfo {
    /// Model name.
    pub model: Option<String>,
    /// Reported usage.
    pub usage: Option<Usage>,
    /// Start time.
    pub started_at: Option<String>,
    /// End time.
    pub ended_at: Option<String>,
    /// Duration in milliseconds.
    pub latency_ms: Option<f64>,
    /// Position of the record in the file.
    pub source: Option<SourcePos>,
}

/// What a source says of a compaction; see [`TraceBuilder::push_compaction`].
#[derive(Debug, Clone, Default)]
pub struct CompactionInfo {
    /// What started it (`auto`, `manual`, ...).
    pub trigger: Option<String>,
    /// When it happened.
    pub timestamp: Option<String>,
    /// Context tokens before, as reported.
    pub reported_tokens_before: Option<u64>,
    /// Context tokens after, as reported.
    pub reported_tokens_after: Option<u64>,
    /// The chunks it took out of the context; `None`: everything in the context but system
    /// prompts and tool definitions (a full compaction).
    pub replaced: Option<Vec<ChunkId>>,
    /// The summary chunk; `None`: the first [`Category::Summary`] chunk that follows.
    pub summary: Option<ChunkId>,
    /// Where the record is.
    pub source: Option<SourcePos>,
}

/// Builds one [`Trace`]. See the module docs.
#[derive(Debug, Default)]
pub struct TraceBuilder {
    trace: Trace,
    /// For each pushed message: its chunks and whether it came from an assistant.
    messages: Vec<(Vec<ChunkId>, bool, Option<CallInfo>)>,
    /// Compactions of a message list, by the index of the first message after them.
    compaction_marks: Vec<(usize, CompactionInfo)>,
    /// A compaction of a request log, resolved against the next call pushed.
    pending_compaction: Option<CompactionInfo>,
    /// Chunks of each distinct message, by identity hash, in order of appearance (interning).
    seen: HashMap<u64, Vec<Vec<ChunkId>>>,
    /// Tool call id -> position of its pair counted from the first pair ever pushed.
    pair_index: HashMap<String, usize>,
    warnings: Vec<String>,
    /// Records dropped from the front ([`TraceBuilder::drop_front`]).
    dropped: Dropped,
}

/// How many records of each kind [`TraceBuilder::drop_front`] dropped.
#[derive(Debug, Default)]
struct Dropped {
    chunks: usize,
    calls: usize,
    pairs: usize,
    messages: usize,
}

impl TraceBuilder {
    /// A builder for a trace with this id and format name.
    pub fn new(id: impl Into<String>, format: &str) -> TraceBuilder {
        TraceBuilder {
            trace: Trace {
                id: id.into(),
                format: format.to_string(),
                ..Trace::default()
            },
            ..TraceBuilder::default()
        }
    }

    /// Sets the trace's main model.
    pub fn set_model(&mut self, model: Option<String>) {
        self.trace.model = model;
    }

    /// Adds a free-form attribute (task id, reward, ...).
    pub fn attribute(&mut self, key: &str, value: impl Into<String>) {
        self.trace.attributes.insert(key.to_string(), value.into());
    }

    /// Adds a probe; its evidence ids are resolved against chunk `dia_id`s when the trace is built.
    pub fn push_probe(&mut self, probe: Probe) {
        self.trace.probes.push(probe);
    }

    /// Number of messages pushed so far.
    pub fn message_count(&self) -> usize {
        self.dropped.messages + self.messages.len()
    }

    /// Appends a message of a final message list and returns its chunks. `call` carries what the
    /// source knows of the call that produced it (assistant messages only).
    pub fn push_message(&mut self, message: Message, call: Option<CallInfo>) -> Vec<ChunkId> {
        let is_assistant = message.role() == Role::Assistant;
        let ids = self.create_chunks(&message);
        self.messages.push((ids.clone(), is_assistant, call));
        ids
    }

    /// Returns the chunks of `message` as it appears at position `occurrence` among identical
    /// messages (0 = the first such message), creating them when this occurrence is new. Request/
    /// response logs resend the whole history each call; interning makes it one chunk per message.
    pub fn intern_message(&mut self, message: &Message, occurrence: usize) -> Vec<ChunkId> {
        let hash = message.identity_hash();
        if let Some(found) = self.seen.get(&hash).and_then(|v| v.get(occurrence)) {
            return found.clone();
        }
        let ids = self.create_chunks(message);
        self.seen.entry(hash).or_default().push(ids.clone());
        ids
    }

    /// Interns a call's whole input message list, in order, and returns the chunk references.
    pub fn intern_messages(&mut self, messages: &[Message]) -> Vec<ChunkId> {
        let mut occurrences: HashMap<u64, usize> = HashMap::new();
        let mut input = Vec::new();
        for message in messages {
            let n = occurrences.entry(message.identity_hash()).or_insert(0);
            input.extend(self.intern_message(message, *n));
            *n += 1;
        }
        input
    }

    /// Records a compaction at this point of the trace.
    ///
    /// Message lists ([`TraceBuilder::push_message`]): the calls reconstructed after this point
    /// no longer carry the replaced chunks. Request logs ([`TraceBuilder::push_call`]): resolved
    /// against the next call pushed; unless `info.replaced` says otherwise, what the previous call
    /// carried (input and output) and the next one does not was replaced. Either way the summary
    /// is, unless given, the first summary chunk that follows.
    pub fn push_compaction(&mut self, info: CompactionInfo) {
        // Request logs never push messages, only calls.
        if !self.messages.is_empty() {
            self.compaction_marks.push((self.messages.len(), info));
        } else {
            self.pending_compaction = Some(info);
        }
    }

    fn is_kept_through_compaction(&self, id: ChunkId) -> bool {
        self.chunk(id).is_some_and(Chunk::is_preamble)
    }

    fn compaction(&self, info: CompactionInfo, replaced: Vec<ChunkId>) -> Compaction {
        Compaction {
            first_call: (self.dropped.calls + self.trace.calls.len()) as u32,
            trigger: info.trigger,
            timestamp: info.timestamp,
            reported_tokens_before: info.reported_tokens_before,
            reported_tokens_after: info.reported_tokens_after,
            replaced,
            summary: info.summary,
            source: info.source,
        }
    }

    /// Records a call with its input references and output message(s).
    pub fn push_call(&mut self, input: Vec<ChunkId>, output: Vec<ChunkId>, info: CallInfo) {
        if let Some(compaction) = self.pending_compaction.take() {
            let previous: Vec<ChunkId> = self
                .trace
                .calls
                .last()
                .map(|c| c.input.iter().chain(&c.output).copied().collect())
                .unwrap_or_default();
            let replaced = compaction.replaced.clone().unwrap_or_else(|| {
                let mut seen = std::collections::HashSet::new();
                previous
                    .iter()
                    .copied()
                    .filter(|id| {
                        !input.contains(id)
                            && !self.is_kept_through_compaction(*id)
                            && seen.insert(*id)
                    })
                    .collect()
            });
            let mut record = self.compaction(compaction, replaced);
            if record.summary.is_none() {
                record.summary = input.iter().copied().find(|id| {
                    !previous.contains(id)
                        && self.chunk(*id).map(|c| c.category) == Some(Category::Summary)
                });
            }
            self.trace.compactions.push(record);
        }
        let index = (self.dropped.calls + self.trace.calls.len()) as u32;
        self.trace.calls.push(Call {
            index,
            model: info.model,
            input,
            output,
            usage: info.usage.filter(|u| !u.is_empty()),
            started_at: info.started_at,
            ended_at: info.ended_at,
            latency_ms: info.latency_ms,
            source: info.source,
        });
    }

    /// Turns the pushed message list into calls: each assistant message is the output of one call
    /// whose input is every chunk before it.
    /// A compaction recorded with [`TraceBuilder::push_compaction`] takes its chunks out of the
    /// input of every call after it.
    pub fn reconstruct_calls(&mut self) {
        let mut before: Vec<ChunkId> = Vec::new();
        let mut marks = std::mem::take(&mut self.compaction_marks)
            .into_iter()
            .peekable();
        // The compaction waiting for its summary chunk (the first summary after it).
        let mut open: Option<usize> = None;
        for (i, (ids, is_assistant, info)) in
            std::mem::take(&mut self.messages).into_iter().enumerate()
        {
            while let Some((_, compaction)) = marks.next_if(|(at, _)| *at <= i) {
                let at = self.apply_compaction(compaction, &mut before);
                open = self.trace.compactions[at].summary.is_none().then_some(at);
            }
            if let Some(at) = open {
                if let Some(summary) = ids
                    .iter()
                    .copied()
                    .find(|&id| self.chunk(id).map(|c| c.category) == Some(Category::Summary))
                {
                    self.trace.compactions[at].summary = Some(summary);
                    open = None;
                }
            }
            if is_assistant {
                open = None;
                self.push_call(before.clone(), ids.clone(), info.unwrap_or_default());
            }
            before.extend(ids);
        }
        for (_, compaction) in marks {
            // A compaction after the last message: nothing followed it.
            self.apply_compaction(compaction, &mut before);
        }
    }

    /// Takes a compaction's chunks out of the running context `before`, records it and returns
    /// its index in [`Trace::compactions`].
    fn apply_compaction(&mut self, info: CompactionInfo, before: &mut Vec<ChunkId>) -> usize {
        let replaced = info.replaced.clone().unwrap_or_else(|| {
            before
                .iter()
                .copied()
                .filter(|id| !self.is_kept_through_compaction(*id))
                .collect()
        });
        before.retain(|id| !replaced.contains(id));
        let record = self.compaction(info, replaced);
        self.trace.compactions.push(record);
        self.trace.compactions.len() - 1
    }

    /// The trace built so far (calls pushed with [`TraceBuilder::push_call`] included; probe
    /// evidence unresolved until [`TraceBuilder::finish`]). Live hosts read chunks from it.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// A chunk created so far, to fill in its token counts (see [`crate::tokens::count_chunk`]).
    pub fn chunk_mut(&mut self, id: ChunkId) -> Option<&mut Chunk> {
        let i = id.index().checked_sub(self.dropped.chunks)?;
        self.trace.chunks.get_mut(i)
    }

    /// A chunk still held (see [`TraceBuilder::drop_front`]).
    pub fn chunk(&self, id: ChunkId) -> Option<&Chunk> {
        let i = id.index().checked_sub(self.dropped.chunks)?;
        self.trace.chunks.get(i)
    }

    /// Drops the first `chunks` chunks, `calls` calls and `pairs` tool pairs the trace still
    /// holds, for a live host that has written them out (or given them up) and keeps no
    /// history: chunk ids and call indices of what follows stay as they were, so [`Self::trace`]
    /// then holds the rest of the trace only (its chunks no longer at the index of their id; see
    /// [`TraceBuilder::chunk`]). Messages whose chunks all went go too.
    pub fn drop_front(&mut self, chunks: usize, calls: usize, pairs: usize) {
        let chunks = chunks.min(self.trace.chunks.len());
        self.trace.chunks.drain(..chunks);
        self.dropped.chunks += chunks;
        let calls = calls.min(self.trace.calls.len());
        self.trace.calls.drain(..calls);
        self.dropped.calls += calls;
        let pairs = pairs.min(self.trace.tool_pairs.len());
        for (k, pair) in self.trace.tool_pairs.drain(..pairs).enumerate() {
            if self.pair_index.get(&pair.id) == Some(&(self.dropped.pairs + k)) {
                self.pair_index.remove(&pair.id);
            }
        }
        self.dropped.pairs += pairs;
        let first_chunk = self.dropped.chunks;
        let gone = self
            .messages
            .iter()
            .take_while(|m| m.0.iter().all(|id| id.index() < first_chunk))
            .count();
        self.messages.drain(..gone);
        self.dropped.messages += gone;
    }

    /// Drops every complete tool pair (call and result both seen), wherever it is: for a host
    /// that writes no trace, only an unanswered call can still be looked up.
    pub fn drop_complete_pairs(&mut self) {
        let base = self.dropped.pairs;
        let mut kept = Vec::new();
        for (k, pair) in std::mem::take(&mut self.trace.tool_pairs)
            .into_iter()
            .enumerate()
        {
            let complete = pair.call.is_some() && pair.result.is_some();
            if self.pair_index.get(&pair.id) == Some(&(base + k)) {
                self.pair_index.remove(&pair.id);
            }
            if !complete {
                kept.push(pair);
            }
        }
        // The kept pairs move to the front: indexed again at their new positions.
        for (k, pair) in kept.iter().enumerate() {
            self.pair_index.insert(pair.id.clone(), base + k);
        }
        self.trace.tool_pairs = kept;
    }

    /// The latest call pushed, to attach what is learned after it (reported usage).
    pub fn last_call_mut(&mut self) -> Option<&mut Call> {
        self.trace.calls.last_mut()
    }

    /// Warnings so far (e.g. a tool result with no call before it).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// A warning about this trace, reported with the import.
    pub fn warn(&mut self, message: impl Into<String>) {
        self.warnings.push(message.into());
    }

    /// Finishes the trace: resolves probe evidence, sets the model. Returns the trace and warnings.
    /// Token counts are filled in later by [`crate::tokens::count_trace`].
    pub fn finish(mut self) -> (Trace, Vec<String>) {
        if self.trace.model.is_none() {
            self.trace.model = self.trace.calls.iter().find_map(|c| c.model.clone());
        }
        if !self.trace.probes.is_empty() {
            let by_dia: HashMap<&str, ChunkId> = self
                .trace
                .chunks
                .iter()
                .filter_map(|c| c.meta.dia_id.as_deref().map(|d| (d, c.id)))
                .collect();
            let mut unresolved = BTreeMap::new();
            for probe in &mut self.trace.probes {
                probe.evidence_chunks.clear();
                for ev in &probe.evidence {
                    match by_dia.get(ev.as_str()) {
                        Some(id) => probe.evidence_chunks.push(*id),
                        None => {
                            unresolved.insert(ev.clone(), ());
                        }
                    }
                }
            }
            if !unresolved.is_empty() {
                let list: Vec<_> = unresolved.into_keys().collect();
                self.warnings.push(format!(
                    "trace {}: {} probe evidence id(s) match no dialogue turn: {}",
                    self.trace.id,
                    list.len(),
                    list.join(", ")
                ));
            }
        }
        (self.trace, self.warnings)
    }

    fn create_chunks(&mut self, message: &Message) -> Vec<ChunkId> {
        let role = message.role();
        let msg_index = self.message_count() + self.seen.values().map(Vec::len).sum::<usize>();
        let mut ids = Vec::with_capacity(message.parts.len().max(1));
        let parts: Vec<Part> = if message.parts.is_empty() {
            // An empty message still costs its framing tokens: keep it as an empty chunk.
            vec![Part::Text(String::new())]
        } else {
            message.parts.clone()
        };
        let multi = parts.len() > 1;
        for (i, part) in parts.into_iter().enumerate() {
            let mut meta = message.meta.clone();
            meta.role = Some(message.role_name.clone());
            if meta.speaker.is_none() {
                meta.speaker = message.name.clone();
            }
            let (category, content) = match part {
                Part::Text(text) => (
                    message.category.unwrap_or_else(|| role.default_category()),
                    text,
                ),
                Part::Reasoning(text) => (Category::Reasoning, text),
                Part::ToolCall {
                    id,
                    name,
                    arguments,
                } => {
                    meta.tool_name = Some(name);
                    meta.tool_call_id = Some(id);
                    (Category::ToolCall, arguments)
                }
                Part::ToolResult { id, name, content } => {
                    meta.tool_name = name.or(meta.tool_name);
                    meta.tool_call_id = Some(id);
                    (Category::ToolResult, content)
                }
                Part::Other { kind, text } => {
                    meta.kind = Some(kind);
                    (Category::Other, text)
                }
            };
            if let (Role::Other(name), None) = (&role, &meta.kind) {
                meta.kind = Some(name.clone());
            }
            let id = ChunkId((self.dropped.chunks + self.trace.chunks.len()) as u32);
            let key = match (&meta.dia_id, multi) {
                (Some(dia), _) => dia.clone(),
                (None, false) => format!("m{msg_index}"),
                (None, true) => format!("m{msg_index}.{i}"),
            };
            self.pair(category, &meta, id);
            self.trace.chunks.push(Chunk {
                id,
                key,
                category,
                content,
                starts_message: i == 0 && !message.unframed,
                content_tokens: 0,
                tokens: 0,
                meta,
            });
            ids.push(id);
        }
        ids
    }

    fn pair(&mut self, category: Category, meta: &ChunkMeta, id: ChunkId) {
        let Some(call_id) = meta.tool_call_id.clone() else {
            return;
        };
        let pairs = &mut self.trace.tool_pairs;
        let base = self.dropped.pairs;
        // The pair's position in what is held (a dropped pair is not found).
        let held = self
            .pair_index
            .get(&call_id)
            .and_then(|&i| i.checked_sub(base))
            .filter(|&i| i < pairs.len());
        match category {
            Category::ToolCall => match held {
                Some(i) if pairs[i].call.is_none() => pairs[i].call = Some(id),
                _ => {
                    self.pair_index.insert(call_id.clone(), base + pairs.len());
                    pairs.push(ToolPair {
                        id: call_id,
                        call: Some(id),
                        result: None,
                    });
                }
            },
            Category::ToolResult => match held {
                Some(i) if pairs[i].result.is_none() => pairs[i].result = Some(id),
                _ => {
                    self.warnings.push(format!(
                        "trace {}: tool result {call_id:?} has no matching tool call before it",
                        self.trace.id
                    ));
                    self.pair_index.insert(call_id.clone(), base + pairs.len());
                    pairs.push(ToolPair {
                        id: call_id,
                        call: None,
                        result: Some(id),
                    });
                }
            },
            _ => {}
        }
    }
}
