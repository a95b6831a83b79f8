//! The trace model: a trace holds LLM calls in order; a call's input context is an ordered list of
//! references to chunks; a chunk is one memory item, stored once however many calls carried it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Index of a chunk in [`Trace::chunks`]. Calls refer to chunks by id, never by copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ChunkId(pub u32);

impl ChunkId {
    /// The position of the chunk in [`Trace::chunks`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What kind of memory item a chunk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// System prompt or developer instructions.
    System,
    /// A user turn.
    User,
    /// Assistant text.
    Assistant,
    /// A tool (function) call the assistant made; content is the arguments JSON text.
    ToolCall,
    /// The result of a tool call; content is the original result text (often JSON).
    ToolResult,
    /// Reasoning / thinking content.
    Reasoning,
    /// A summary of earlier context.
    Summary,
    /// A remembered user preference or fact.
    Preference,
    /// Anything else (tool definitions, images, unknown roles); [`ChunkMeta::kind`] says what.
    Other,
    /// Context the provider was sent and counted but the log does not hold (a system prompt,
    /// tool definitions, provider-added instructions): one estimated item, never dropped
    /// ([`crate::unrecorded`]).
    Unrecorded,
}

impl Category {
    /// Every category, in display order.
    pub const ALL: [Category; 10] = [
        Category::System,
        Category::User,
        Category::Assistant,
        Category::ToolCall,
        Category::ToolResult,
        Category::Reasoning,
        Category::Summary,
        Category::Preference,
        Category::Other,
        Category::Unrecorded,
    ];

    /// The snake_case name used in JSON and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::System => "system",
            Category::User => "user",
            Category::Assistant => "assistant",
            Category::ToolCall => "tool_call",
            Category::ToolResult => "tool_result",
            Category::Reasoning => "reasoning",
            Category::Summary => "summary",
            Category::Preference => "preference",
            Category::Other => "other",
            Category::Unrecorded => "unrecorded",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where something came from in the source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SourcePos {
    /// 1-based line of the record (JSON Lines) or of the value start when known; 0 when unknown.
    pub line: u32,
    /// Index of the record in the file (array element or JSONL line), 0-based.
    pub record: u32,
}

/// Metadata of a chunk. Every field is optional: formats carry different things.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChunkMeta {
    /// The chat role of the message the chunk came from (`system`, `user`, `assistant`, `tool`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// A named speaker (LoCoMo speakers, the `name` field of a chat message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
    /// Tool name, for tool calls and results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Tool call id, shared by a call and its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Timestamp as given by the source (ISO 8601, a date string, or unix nanoseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Latency to produce the chunk (tool execution, model call), in milliseconds, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
    /// Dialogue id (LoCoMo `dia_id`, e.g. `D1:3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dia_id: Option<String>,
    /// Session date (LoCoMo `session_N_date_time`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_date: Option<String>,
    /// The source's own name for this kind of item when the category is [`Category::Other`] or lossy
    /// (`image`, `tool_definitions`, an unknown role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Position of the message in the source file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourcePos>,
}

/// One memory item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// Position in [`Trace::chunks`].
    pub id: ChunkId,
    /// Stable, human-readable id, deterministic for a given file (e.g. `m12`, `m12.1`, `D3:7`).
    pub key: String,
    /// What kind of item this is.
    pub category: Category,
    /// The text; tool arguments and results keep their original JSON text.
    pub content: String,
    /// Whether this chunk starts a chat message: the message framing tokens are counted on it.
    #[serde(default)]
    pub starts_message: bool,
    /// Tokens of `content` alone, with the trace's encoding.
    #[serde(default)]
    pub content_tokens: u32,
    /// Tokens the chunk adds to a call's input: content plus its share of the chat format's framing.
    #[serde(default)]
    pub tokens: u32,
    /// Metadata.
    #[serde(default)]
    pub meta: ChunkMeta,
}

impl Chunk {
    /// Whether the chunk belongs to the request's fixed preamble rather than to the
    /// conversation: the system prompt, tool definitions (sent beside the messages, not among
    /// them) and unrecorded context. Every policy keeps these, and the start-on-user rule
    /// passes over them as over the system prompt.
    pub fn is_preamble(&self) -> bool {
        match self.category {
            Category::System | Category::Unrecorded => true,
            Category::Other => self.meta.kind.as_deref() == Some(TOOL_DEFINITIONS_KIND),
            _ => false,
        }
    }
}

impl Chunk {
    /// Whether the chunk opens a user turn as providers see it: user text, or an image, a
    /// file, a summary or a preference sent in a user message (not a tool result, which
    /// Anthropic sends in one too).
    pub fn opens_user_turn(&self) -> bool {
        match self.category {
            Category::User => true,
            Category::Other | Category::Summary | Category::Preference => {
                self.meta.role.as_deref() == Some("user")
            }
            _ => false,
        }
    }
}

/// [`ChunkMeta::kind`] of the chunk holding a request's tool definitions.
pub const TOOL_DEFINITIONS_KIND: &str = "tool_definitions";

/// [`ChunkMeta::kind`] of a [`Category::ToolCall`] chunk that is an action the model wrote in
/// its message text (a fenced shell block a text-based scaffold parses and runs), not a native
/// tool call: it is part of the text the model sent, so it carries no tool-call framing.
pub const TEXT_ACTION_KIND: &str = "text_action";

/// Token usage a provider reported for one call. `input_tokens` includes cached tokens (the
/// OpenAI convention); importers of formats that report them apart (Anthropic) add them up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// All input (prompt) tokens, cached ones included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output (completion) tokens, reasoning included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Input tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Reasoning tokens (part of the output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }
}

/// One LLM call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Call {
    /// Position in [`Trace::calls`].
    pub index: u32,
    /// Model name as the source gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The input context, in order: references into [`Trace::chunks`].
    pub input: Vec<ChunkId>,
    /// The chunks this call produced (assistant text, reasoning, tool calls).
    pub output: Vec<ChunkId>,
    /// Usage reported by the provider, when the trace has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Start time as given by the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// End time as given by the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// Duration of the call in milliseconds, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
    /// Where the call's record is in the source file (request/response logs, spans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourcePos>,
}

/// A tool call and its result, paired by id. Policies must keep or drop both together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPair {
    /// The tool call id.
    pub id: String,
    /// The tool call chunk; `None` for a result whose call is not in the trace (an orphan).
    pub call: Option<ChunkId>,
    /// The result chunk; `None` while the call is unanswered (e.g. the trace ends on it).
    pub result: Option<ChunkId>,
}

/// A question about the trace with the evidence needed to answer it (LoCoMo QA), kept for benchmarks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// The question.
    pub question: String,
    /// The reference answer, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Evidence ids as the source names them (LoCoMo `dia_id`s).
    pub evidence: Vec<String>,
    /// The evidence resolved to chunks (ids that resolve; unresolved ones are reported as warnings).
    pub evidence_chunks: Vec<ChunkId>,
    /// The source's question category, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<u32>,
}

/// A compaction: the agent or its harness replaced part of its context with a summary (Claude
/// Code's `/compact`, Codex's `compacted`, an OpenHands condensation). Later calls carry the
/// summary instead of the replaced chunks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Compaction {
    /// The first call whose input reflects the compaction (`calls.len()` when no call followed).
    pub first_call: u32,
    /// What started it, as the source says (`auto`, `manual`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// When it happened, as given by the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Context tokens before the compaction, as the source reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_tokens_before: Option<u64>,
    /// Context tokens after the compaction, as the source reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_tokens_after: Option<u64>,
    /// The chunks the compaction took out of the context, in context order.
    pub replaced: Vec<ChunkId>,
    /// The summary chunk that replaced them, when the source records one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<ChunkId>,
    /// Where the compaction's record is in the source file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourcePos>,
}

/// Where a trace was started from: a subagent's trace names the trace and call that spawned it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TraceLink {
    /// The parent trace's id.
    pub trace: String,
    /// The parent's call whose output started this trace (its tool call), once linked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<u32>,
    /// The parent's tool call id that started this trace, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// One agent run or session.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Trace {
    /// Id, unique within the file (a source id when present, else derived from the position).
    pub id: String,
    /// The importer that read it (`openai`, `anthropic`, `otel`, `tau-bench`, `locomo`, `memlens`).
    pub format: String,
    /// The main model of the run (the first call's model, or one given by the user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Every memory item, each stored once.
    pub chunks: Vec<Chunk>,
    /// LLM calls in order.
    pub calls: Vec<Call>,
    /// Tool call / result pairing.
    pub tool_pairs: Vec<ToolPair>,
    /// Questions with evidence, for benchmarks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<Probe>,
    /// Free-form attributes from the source (task id, reward, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
    /// Compactions, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compactions: Vec<Compaction>,
    /// The trace that started this one (a subagent's parent session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<TraceLink>,
}

impl Trace {
    /// The chunk with this id. Ids come from this trace, so the index is in range.
    pub fn chunk(&self, id: ChunkId) -> &Chunk {
        &self.chunks[id.index()]
    }

    /// Tool pairs missing their call (a result with no call): an API error at OpenAI and Anthropic.
    pub fn orphan_results(&self) -> impl Iterator<Item = &ToolPair> {
        self.tool_pairs.iter().filter(|p| p.call.is_none())
    }

    /// Tool calls with no result in the trace.
    pub fn unanswered_calls(&self) -> impl Iterator<Item = &ToolPair> {
        self.tool_pairs.iter().filter(|p| p.result.is_none())
    }

    /// The model used for counting and pricing: the trace's model, else the first call's.
    pub fn main_model(&self) -> Option<&str> {
        self.model
            .as_deref()
            .or_else(|| self.calls.iter().find_map(|c| c.model.as_deref()))
    }
}
