//! The invariants, checked independently of the engine's own bookkeeping: the simulator counts
//! violations with this for every policy, and the property tests hold MemLens' policies to zero.

use super::engine::{Decision, EntryForm};
use crate::model::{Category, Chunk, ChunkId};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// A broken invariant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Violation {
    /// A system prompt chunk, or another part of the request's preamble (tool definitions,
    /// unrecorded context: [`Chunk::is_preamble`]), was left out.
    SystemDropped {
        /// Its key.
        chunk: String,
    },
    /// A tool call and its result were split (one sent without the other).
    ToolPairSplit {
        /// The tool call id.
        id: String,
    },
    /// The newest user message was left out.
    NewestUserDropped {
        /// Its key.
        chunk: String,
    },
    /// After the system prompt, the context does not start on a user message (Anthropic rejects
    /// it; a leading tool result is an orphan), while the recorded input has a user message and
    /// did not start that way itself.
    StartsOffUser {
        /// The key of the first chunk.
        chunk: String,
    },
}

/// Checks a decision against the chunks that were live (`full`, in order).
pub fn check<'a>(
    chunk: impl Fn(ChunkId) -> &'a Chunk,
    full: &[ChunkId],
    decision: &Decision,
) -> Vec<Violation> {
    let sent: HashSet<ChunkId> = decision.chunk_ids().collect();
    let mut out = Vec::new();
    let mut calls: HashMap<&str, bool> = HashMap::new();
    let mut results: HashMap<&str, bool> = HashMap::new();
    let mut newest_user: Option<usize> = None;
    let mut message = 0usize;
    let mut message_of: Vec<usize> = Vec::with_capacity(full.len());
    for (k, &id) in full.iter().enumerate() {
        let c = chunk(id);
        if c.starts_message || k == 0 {
            message += 1;
        }
        message_of.push(message);
        if c.is_preamble() && !sent.contains(&id) {
            out.push(Violation::SystemDropped {
                chunk: c.key.clone(),
            });
        }
        match c.category {
            Category::ToolCall => {
                if let Some(tid) = &c.meta.tool_call_id {
                    calls.insert(tid, sent.contains(&id));
                }
            }
            Category::ToolResult => {
                if let Some(tid) = &c.meta.tool_call_id {
                    results.insert(tid, sent.contains(&id));
                }
            }
            Category::User => newest_user = Some(message),
            _ => {}
        }
    }
    let mut split: Vec<&str> = calls
        .iter()
        .filter_map(|(id, in_call)| results.get(id).filter(|r| *r != in_call).map(|_| *id))
        .collect();
    split.sort_unstable();
    out.extend(
        split
            .into_iter()
            .map(|id| Violation::ToolPairSplit { id: id.to_string() }),
    );
    if let Some(m) = newest_user {
        for (k, &id) in full.iter().enumerate() {
            let c = chunk(id);
            if message_of[k] == m && c.category == Category::User && !sent.contains(&id) {
                out.push(Violation::NewestUserDropped {
                    chunk: c.key.clone(),
                });
            }
        }
    }
    let first = decision.entries.iter().find(|e| match e.chunk {
        Some(id) => !chunk(id).is_preamble(),
        None => true,
    });
    // The recorded agent's own first message (after system) is not the policy's doing.
    let original_first = full.iter().copied().find(|&id| !chunk(id).is_preamble());
    let has_user = newest_user.is_some();
    if let Some(e) = first.filter(|_| has_user) {
        let starts_user = match (&e.form, e.chunk) {
            (EntryForm::Summary { .. }, _) | (_, None) => true,
            (_, Some(id)) => chunk(id).opens_user_turn() || Some(id) == original_first,
        };
        if !starts_user {
            let key = e.chunk.map(|id| chunk(id).key.clone()).unwrap_or_default();
            out.push(Violation::StartsOffUser { chunk: key });
        }
    }
    out
}
