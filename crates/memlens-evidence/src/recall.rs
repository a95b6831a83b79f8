//! MemLens recall ([`memlens_core::recall`], `docs/recall.md`) as a strategy of the benchmark:
//! [`MemLensRecall`] answers each question from one [`RecallIndex`] per conversation, built by
//! [`index_conversation`]; [`MemLensRecall::ablations`] are the policy without each ingredient.

use crate::{render_turn, ContextBuilder, Conversation};
use memlens_core::recall::{RecallIndex, RecallParams};
use std::collections::HashMap;

/// Builds the [`RecallIndex`] of a benchmark conversation: each turn rendered as in context
/// ([`render_turn`]), its speaker, its session (the session date, else the `D<n>` prefix of its
/// dialogue id) and its token cost.
pub fn index_conversation(conv: &Conversation<'_>) -> RecallIndex {
    let mut ix = RecallIndex::new();
    for i in 0..conv.len() {
        let chunk = conv.turn(i);
        let session = chunk.meta.session_date.as_deref().or_else(|| {
            chunk
                .meta
                .dia_id
                .as_deref()
                .and_then(|d| d.split(':').next())
        });
        ix.add(
            &render_turn(chunk),
            chunk.meta.speaker.as_deref(),
            session,
            conv.tokens[i],
        );
    }
    ix
}

/// MemLens recall as a benchmark [`ContextBuilder`]: one [`RecallIndex`] per conversation (cached
/// by trace id), queried with the question.
#[derive(Debug, Clone, Default)]
pub struct MemLensRecall {
    name: String,
    params: RecallParams,
    cache: HashMap<String, RecallIndex>,
}

impl MemLensRecall {
    /// The MemLens recall policy ([`RecallParams::default`]), named `memlens-recall`.
    pub fn new() -> MemLensRecall {
        MemLensRecall::with_params("memlens-recall", RecallParams::default())
    }

    /// A variant with its own name and parameters (ablations).
    pub fn with_params(name: &str, params: RecallParams) -> MemLensRecall {
        MemLensRecall {
            name: name.to_string(),
            params,
            cache: HashMap::new(),
        }
    }

    /// The ablations: the policy without each ingredient, with the speaker cue, and with
    /// nothing but BM25-terms plus same-session neighbours (`memlens-recall bare`).
    pub fn ablations() -> Vec<MemLensRecall> {
        let d = RecallParams::default();
        let bare = RecallParams {
            prf_docs: 0,
            session_weight: 0.0,
            window: 0.0,
            backfill: false,
            semantic_weight: 0.0,
            expansion_weight: 0.0,
            ..d
        };
        vec![
            MemLensRecall::with_params("memlens-recall bare", bare),
            MemLensRecall::with_params(
                "memlens-recall -vectors",
                RecallParams {
                    semantic_weight: 0.0,
                    expansion_weight: 0.0,
                    ..d
                },
            ),
            MemLensRecall::with_params(
                "memlens-recall -expansion",
                RecallParams {
                    expansion_weight: 0.0,
                    ..d
                },
            ),
            MemLensRecall::with_params(
                "memlens-recall -similarity",
                RecallParams {
                    semantic_weight: 0.0,
                    ..d
                },
            ),
            MemLensRecall::with_params("memlens-recall -prf", RecallParams { prf_docs: 0, ..d }),
            MemLensRecall::with_params(
                "memlens-recall +session",
                RecallParams {
                    session_weight: 0.3,
                    ..d
                },
            ),
            MemLensRecall::with_params("memlens-recall -window", RecallParams { window: 0.0, ..d }),
            MemLensRecall::with_params(
                "memlens-recall -neighbours",
                RecallParams {
                    neighbours: false,
                    ..d
                },
            ),
            MemLensRecall::with_params(
                "memlens-recall +speaker",
                RecallParams {
                    speaker_boost: 1.5,
                    ..d
                },
            ),
        ]
    }

    /// The policy or one of its [`MemLensRecall::ablations`], by name.
    pub fn variant(name: &str) -> Option<MemLensRecall> {
        std::iter::once(MemLensRecall::new())
            .chain(MemLensRecall::ablations())
            .find(|b| b.name == name)
    }

    /// The parameters.
    pub fn params(&self) -> RecallParams {
        self.params
    }
}

impl ContextBuilder for MemLensRecall {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn build(&mut self, conv: &Conversation<'_>, question: &str, budget: u32) -> Vec<usize> {
        let ix = self
            .cache
            .entry(conv.trace.id.clone())
            .or_insert_with(|| index_conversation(conv));
        if ix.len() != conv.len() {
            *ix = index_conversation(conv);
        }
        ix.query(question, budget, &self.params)
    }
}
