//! The evidence benchmark: does a context strategy keep the turns a question needs?
//!
//! A crate of its own, outside `memlens-core`: the benchmark drives the policy engine
//! ([`PolicyBuilder`]) and MemLens recall ([`recall::MemLensRecall`]), while the engine itself
//! only needs the core's [`memlens_core::recall::RecallIndex`]; keeping the benchmark here keeps
//! the core free of a `policy -> recall -> benchmark -> policy` cycle. Pure like the core: no I/O
//! and no clock; hosts (`memlens bench-evidence`) read the files and time the runs. Its
//! [`ContextBuilder`]s: recency, BM25, the oracle, MemLens policies replayed through the engine,
//! and MemLens recall with its ablations (`recall`); `tests/it/evidence.rs` runs them on LoCoMo.
//!
//! Each question of a conversation (a [`Probe`](memlens_core::Probe), e.g. LoCoMo QA) arrives
//! after the last turn. A [`ContextBuilder`] picks turns for a context of at most `budget`
//! tokens, seeing only the conversation and the question text. A question is answered when
//! **every** evidence turn is in the context (`all_evidence`); `turn_recall` is the share of its
//! evidence turns in the context. Both are averaged over questions (macro), overall and per
//! question category.
//!
//! Scored questions are those in categories 1-4 (LoCoMo's 5 is adversarial) with at least one
//! evidence id that resolves to a turn. Evidence strings are split on `;`, `,` and whitespace
//! (LoCoMo writes a few as `"D9:1 D4:4 D4:6"`); ids matching no turn are ignored. On LoCoMo
//! that scores 1,535 of the 1,540 category 1-4 questions (4 have no evidence, 1 only `D30:05`).
//!
//! A turn is rendered as `"{speaker}: {content}"` (the content keeps the importer's
//! `[shares a photo: ...]` caption) and costs the tokens of that text in the trace's encoding
//! (o200k when the trace names no model), with no chat framing. BM25 indexes the same text.
//!
//! ```
//! use memlens_core::builder::{Message, TraceBuilder};
//! use memlens_core::{ChunkMeta, Probe};
//! use memlens_evidence::{self as evidence, Bm25, ContextBuilder, Oracle, Recency};
//!
//! let mut b = TraceBuilder::new("conv", "locomo");
//! let turns = [
//!     ("Ann", "I adopted a cat named Pixel last week."),
//!     ("Bo", "Lovely. The weather in Lisbon is sunny and warm today."),
//!     ("Ann", "I am going hiking in the mountains with my sister tomorrow."),
//! ];
//! for (i, (who, text)) in turns.iter().enumerate() {
//!     let mut m = Message::text("user", *text);
//!     m.name = Some(who.to_string());
//!     m.meta = ChunkMeta { dia_id: Some(format!("D1:{}", i + 1)), ..ChunkMeta::default() };
//!     b.push_message(m, None);
//! }
//! b.push_probe(Probe {
//!     question: "What is the name of Ann's cat?".into(),
//!     answer: Some("Pixel".into()),
//!     evidence: vec!["D1:1".into()],
//!     evidence_chunks: vec![],
//!     category: Some(4),
//! });
//! let (trace, _) = b.finish();
//!
//! let mut builders: Vec<Box<dyn ContextBuilder>> =
//!     vec![Box::new(Recency), Box::new(Bm25::new()), Box::new(Oracle)];
//! let rows = evidence::run(&[trace], &mut builders, &[16]);
//! let rate = |name: &str| rows.iter().find(|r| r.policy == name).map(|r| r.all_evidence);
//! assert_eq!(rows[0].questions, 1);
//! assert_eq!(rate("recency"), Some(0.0)); // 16 tokens hold only the newest turn
//! assert_eq!(rate("bm25"), Some(1.0)); // "cat" finds the first turn
//! assert_eq!(rate("oracle"), Some(1.0));
//! ```

pub mod recall;

mod anchors;
mod conversation;
mod policy;
mod score;
mod strategies;
#[cfg(test)]
mod tests;

pub use anchors::{Anchor, ANCHORS, ANCHOR_BUDGETS};
pub use conversation::{render_turn, Analyzer, Conversation};
pub use policy::PolicyBuilder;
pub use score::{Benchmark, CategoryScore, Question, Row};
pub use strategies::{Bm25, Oracle, Recency};

use memlens_core::Trace;

/// The question categories scored (LoCoMo, as commonly read: 1 multi-hop, 2 temporal,
/// 3 open-domain, 4 single-hop; 5, adversarial, is left out).
pub const SCORED_CATEGORIES: [u32; 4] = [1, 2, 3, 4];

/// A strategy that builds a context for one question.
pub trait ContextBuilder {
    /// The name shown in results (`recency`, `bm25`, ...).
    fn name(&self) -> String;
    /// Indices into `conv.turns` (the conversation's turns, in order) to put in context; their
    /// total [`Conversation::tokens`] must be at most `budget`. Order does not matter; duplicates
    /// and out-of-range indices are ignored when scoring.
    fn build(&mut self, conv: &Conversation<'_>, question: &str, budget: u32) -> Vec<usize>;
}

/// Runs every builder at every budget over the traces' scored questions; rows in builder order,
/// then budget order. Deterministic for deterministic builders.
pub fn run(
    traces: &[Trace],
    builders: &mut [Box<dyn ContextBuilder>],
    budgets: &[u32],
) -> Vec<Row> {
    let bench = Benchmark::new(traces);
    let mut rows = Vec::with_capacity(builders.len() * budgets.len());
    for builder in builders.iter_mut() {
        for &budget in budgets {
            rows.push(bench.row(builder.as_mut(), budget));
        }
    }
    rows
}
