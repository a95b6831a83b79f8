//! The reference results the benchmark's rows are read against: all-evidence rates measured
//! independently on LoCoMo.

use serde::Serialize;

/// A reference result measured independently on LoCoMo (`locomo10.json`, o200k tokens): the
/// all-evidence rate at each of [`ANCHOR_BUDGETS`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Anchor {
    /// The strategy, as the reference names it.
    pub strategy: &'static str,
    /// The builder here that reproduces it
    /// ([`ContextBuilder::name`](crate::ContextBuilder::name)); `None` when it cannot run here.
    pub reproduced_by: Option<&'static str>,
    /// All-evidence rates at 1000, 2000, 4000 and 8000 tokens.
    pub all_evidence: [f64; 4],
}

/// The budgets of [`ANCHORS`].
pub const ANCHOR_BUDGETS: [u32; 4] = [1000, 2000, 4000, 8000];

/// Reference all-evidence rates on LoCoMo. The dense row (MiniLM embeddings) needs a neural
/// model and is quoted only, never run.
pub const ANCHORS: [Anchor; 4] = [
    Anchor {
        strategy: "recency (keep the newest turns)",
        reproduced_by: Some("recency"),
        all_evidence: [0.041, 0.085, 0.173, 0.339],
    },
    Anchor {
        strategy: "BM25 over turns, question as query",
        reproduced_by: Some("bm25"),
        all_evidence: [0.560, 0.631, 0.679, 0.768],
    },
    Anchor {
        strategy: "BM25 + adjacent turns",
        reproduced_by: Some("bm25-adjacent"),
        all_evidence: [0.623, 0.683, 0.752, 0.819],
    },
    Anchor {
        strategy: "dense retrieval (MiniLM)",
        reproduced_by: None,
        all_evidence: [0.556, 0.651, 0.775, 0.907],
    },
];
