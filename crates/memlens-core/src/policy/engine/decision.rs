//! What the engine hands back: the context for one call and what the policy did to get it.

use super::super::compress::CompressKind;
use crate::model::ChunkId;
use serde::Serialize;
use std::sync::Arc;

/// What the engine needs besides the policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineOptions {
    /// Token budget for the context (input tokens, reply priming included).
    pub budget: u32,
    /// Input price of the model, USD per million tokens, for the compression cost-benefit rule
    /// (`None`: unpriced; summaries are then judged on tokens alone).
    pub input_usd_per_mtok: Option<f64>,
}

/// How an entry of the context relates to its chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "form")]
pub enum EntryForm {
    /// The chunk as it was.
    Original,
    /// Compressed text (see `text`).
    Compressed {
        /// Which compression.
        kind: CompressKind,
    },
    /// Brought back from the archive for this call.
    Retrieved,
    /// A modeled summary of dropped chunks.
    Summary {
        /// The chunks it stands for.
        covers: Vec<ChunkId>,
    },
}

/// One entry of the context to send.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextEntry {
    /// The chunk (`None` for a summary).
    pub chunk: Option<ChunkId>,
    /// Tokens it takes.
    pub tokens: u32,
    /// Original, compressed, retrieved or summary.
    #[serde(flatten)]
    pub form: EntryForm,
    /// The text sent when it differs from the chunk's content (compressed, cleared, summary).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<Arc<str>>,
}

/// The context for one call, and what the policy did to get it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// The call index (0-based count of decisions so far).
    pub call: u32,
    /// Entries in the order to send.
    pub entries: Vec<ContextEntry>,
    /// Tokens of the context, reply priming included.
    pub tokens: u64,
    /// Tokens of every live chunk (what keeping everything would send).
    pub full_tokens: u64,
    /// Protected content alone (or what the strategy insists on) exceeds the budget.
    pub over_budget: bool,
    /// Chunks compressed or cleared during this call.
    pub compressed: Vec<ChunkId>,
    /// Chunks evicted during this call (dropped, archived or summarized).
    pub evicted: Vec<ChunkId>,
    /// Chunks retrieved from the archive for this call.
    pub retrieved: Vec<ChunkId>,
    /// Modeled cost of summaries made during this call, USD.
    pub summary_cost_usd: f64,
}

impl Decision {
    /// The chunks in the context (summaries left out), in order.
    pub fn chunk_ids(&self) -> impl Iterator<Item = ChunkId> + '_ {
        self.entries.iter().filter_map(|e| e.chunk)
    }
}
