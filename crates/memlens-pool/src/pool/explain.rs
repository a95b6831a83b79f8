//! Looking into the latest context: why a chunk is (not) in it, with its value factors, and the
//! invariants it broke.

use super::{Pool, PoolError};
use memlens_core::policy::{
    validate::{self, Violation},
    EntryForm,
};
use memlens_core::value::ChunkValue;
use memlens_core::{Category, ChunkId};
use serde::Serialize;

/// The explanation of one chunk.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The chunk.
    pub chunk: u32,
    /// The message it belongs to (index in `add` order).
    pub message: u32,
    /// Its category.
    pub category: Category,
    /// Its tokens.
    pub tokens: u32,
    /// In the latest context: `kept`, `compressed`, `retrieved`, `dropped`, or `pending` (added
    /// after the latest context).
    pub status: &'static str,
    /// Why, in a sentence.
    pub reason: String,
    /// Its value now, with the factors and their explanations.
    pub value: ChunkValue,
}

impl Pool {
    /// Why a chunk is (not) in the latest context, with its value factors.
    pub fn explain(&mut self, chunk: u32) -> Result<Explanation, PoolError> {
        let id = self.known(chunk)?;
        let (category, tokens) = match self.builder.chunk(id).or_else(|| self.engine.chunk(id)) {
            Some(c) => (c.category, c.tokens),
            None => return Err(PoolError::Released(chunk)),
        };
        let query = self.newest_user_text();
        let now = self.engine.calls();
        let now_secs = self.times.latest;
        let ve = self.engine.value_engine();
        let relevance = query.as_deref().map_or(0.0, |q| {
            ve.relevance(q, &[id]).first().copied().unwrap_or(0.0)
        });
        let value = ve.score(id, now, now_secs, relevance);
        let entry = self
            .last
            .as_ref()
            .and_then(|d| d.entries.iter().find(|e| e.chunk == Some(id)));
        // Chunks added after the latest decision have higher ids than every chunk it saw.
        let decided = self.last.is_some() && id.0 < self.decided_chunks;
        let (status, reason) = match (entry.map(|e| &e.form), decided) {
            (_, false) => ("pending", "added after the latest context was decided".to_string()),
            (Some(EntryForm::Compressed { kind }), _) => (
                "compressed",
                format!("sent compressed ({kind:?}) to fit the budget"),
            ),
            (Some(EntryForm::Retrieved), _) => (
                "retrieved",
                "brought back from the archive: relevant to the current query".to_string(),
            ),
            (Some(_), _) => ("kept", keep_reason(category, &value)),
            (None, _) => (
                "dropped",
                format!(
                    "dropped by the {} policy under a budget of {} tokens (value {:.2}, {:.2} per 1k tokens)",
                    self.options.policy.name, self.options.budget, value.value, value.value_per_1k_tokens
                ),
            ),
        };
        Ok(Explanation {
            chunk,
            message: self.chunk_message[id.0 as usize],
            category,
            tokens,
            status,
            reason,
            value,
        })
    }

    /// The invariants the latest context broke, checked independently of the engine
    /// (`policy::validate::check` against every message added before it): always empty for
    /// MemLens' own policies; the incumbents replay their libraries, violations included.
    pub fn violations(&self) -> Vec<Violation> {
        let Some(d) = &self.last else {
            return Vec::new();
        };
        if !self.options.keep_history {
            // What was released is out of every context for good: the chunks the engine
            // holds are what the invariants are about.
            let held: std::collections::HashMap<ChunkId, &memlens_core::Chunk> = self
                .engine
                .held_chunks()
                .filter(|c| c.id.0 < self.decided_chunks)
                .map(|c| (c.id, c))
                .collect();
            let full: Vec<ChunkId> = self
                .engine
                .held_chunks()
                .map(|c| c.id)
                .filter(|id| held.contains_key(id))
                .collect();
            // Every chunk of the latest decision is held: compaction, the only place the engine
            // forgets, runs in the same `context` call and keeps what that context sent.
            return validate::check(|id| held[&id], &full, d);
        }
        let chunks = &self.builder.trace().chunks;
        let decided = chunks.len().min(self.decided_chunks as usize);
        let full: Vec<ChunkId> = chunks[..decided].iter().map(|c| c.id).collect();
        // Pool chunk ids are indices into the builder's chunks (see `add`).
        validate::check(|id| &chunks[id.index()], &full, d)
    }

    fn newest_user_text(&self) -> Option<String> {
        if !self.options.keep_history {
            return self.engine.newest_user_text();
        }
        self.builder
            .trace()
            .chunks
            .iter()
            .rev()
            .find(|c| c.category == Category::User)
            .map(|c| c.content.clone())
    }
}

fn keep_reason(category: Category, value: &ChunkValue) -> String {
    match category {
        Category::System => "kept: the system prompt is always kept".to_string(),
        _ if value.factors.pinned >= 1.0 => "kept: pinned (labelled important or protected)".into(),
        _ => format!(
            "kept: fits the budget at value {:.2} ({:.2} per 1k tokens)",
            value.value, value.value_per_1k_tokens
        ),
    }
}
