//! The value engine: how much each chunk is worth keeping in the context, and why.
//!
//! Every chunk gets eight *factors*, each in `[0, 1]` and each explained in a short sentence:
//!
//! | factor | what it measures | formula |
//! |---|---|---|
//! | `recency` | how recently the chunk was added | `0.5^(calls_ago / half_life_calls)`, times `0.5^(secs_ago / half_life_secs)` when the time half-life is set and both times are known |
//! | `popularity` | how often later steps used it | `1 - exp(-uses / popularity_scale)` |
//! | `density` | informative content per token | `sqrt(term_density * uniqueness)`: `term_density = t / (t + density_scale)` with `t` = distinct informative terms per content token, `uniqueness` = distinct word 3-grams / all word 3-grams |
//! | `redundancy` | near-duplicate of an earlier chunk | the estimated Jaccard similarity of word 3-gram sets (MinHash, 64 hashes, LSH 16 bands x 4 rows) to the most similar earlier chunk; 0 below `redundancy_threshold` |
//! | `category` | what kind of item it is | `category_weights[category]` |
//! | `relevance` | lexical relevance to the task or query | BM25 score / best BM25 score among the candidates |
//! | `generation_cost` | what it costs to get it back | `base * (0.5 + 0.5 * size)`: `base` = `1 - exp(-latency_ms / latency_scale_ms)` when the latency is known, else a per-category prior; `size = 1 - exp(-tokens / size_scale_tokens)` |
//! | `pinned` | explicit user intent | 1 when pinned or labelled important, else 0 |
//!
//! The value is the weighted mean `Σ w_f x_f / Σ w_f`, where `x_f` is the factor except for
//! redundancy, which enters as `1 - redundancy` (a duplicate is worth less). A chunk labelled
//! [`Label::Useless`] has value 0 whatever its factors. The value per token divides by the chunk's
//! tokens (framing included; estimated as `ceil(chars / 4)` when the trace was not counted).
//!
//! [`ValueEngine`] is incremental (the live engine and the simulator add one chunk per turn):
//! everything that depends only on the chunk is computed once in [`ValueEngine::add`], and
//! [`ValueEngine::score`] is O(1). [`score_trace`] scores a whole trace at once. [`fit_weights`]
//! learns weights from labelled chunks and [`agreement`] measures how well weights agree with labels.
//!
//! ```
//! use memlens_core::builder::{Message, TraceBuilder};
//! use memlens_core::value::{Label, ValueConfig, ValueEngine};
//!
//! let mut b = TraceBuilder::new("demo", "example");
//! b.push_message(Message::text("system", "You are a travel agent."), None);
//! b.push_message(Message::text("user", "Book a flight from Lisbon to Paris on Friday."), None);
//! b.push_message(Message::text("assistant", "Searching flights from Lisbon to Paris."), None);
//! b.push_message(Message::text("user", "Book a flight from Lisbon to Paris on Friday."), None);
//! let (trace, _) = b.finish();
//!
//! let mut engine = ValueEngine::new(ValueConfig::preset("support-bot").expect("a preset"));
//! for (call, chunk) in trace.chunks.iter().enumerate() {
//!     engine.add(chunk, call as u32, None);
//! }
//! engine.record_use(trace.chunks[1].id);
//! engine.set_label(trace.chunks[2].id, Some(Label::Useless));
//!
//! let ids: Vec<_> = trace.chunks.iter().map(|c| c.id).collect();
//! let values = engine.score_all(&ids, 4, None, Some("flight to Paris"));
//! assert!((values[1].factors.popularity - 0.39).abs() < 0.01); // 1 - exp(-1 use / scale 2)
//! assert_eq!(values[2].value, 0.0); // labelled useless
//! assert!(values[3].factors.redundancy > 0.99); // a repeat of chunk 1
//! assert!(values[3].explanation.iter().any(|s| s.contains("near-duplicate")));
//! assert!(values.iter().all(|v| (0.0..=1.0).contains(&v.value)));
//! ```
//!
//! The module's files, by job: `config` (weights, category weights, presets), `factors` (the
//! factors, labels and the weighted value), `engine` (the incremental [`ValueEngine`] and
//! [`score_trace`]), `score` (one chunk's factors as of now, with their sentences), `minhash`
//! (what is computed from a chunk's text once: density terms, word 3-gram MinHash), `fit`
//! (weights from labels, agreement).

mod config;
mod engine;
mod factors;
mod fit;
mod minhash;
mod replay;
mod score;
#[cfg(test)]
mod tests;

pub use config::{default_category_weight, ValueConfig, Weights};
pub(crate) use engine::ChunkReading;
pub use engine::{score_trace, ValueEngine};
pub use factors::{ChunkValue, Factors, Label};
pub use fit::{agreement, fit_weights, FitReport, FIT_STEPS};
pub use minhash::splitmix64;
pub use replay::{replay_values, ValueStep};

/// Number of MinHash functions per chunk.
pub const MINHASH_HASHES: usize = 64;
/// LSH bands over the MinHash signature.
pub const LSH_BANDS: usize = 16;
/// Signature rows per LSH band (`LSH_BANDS * LSH_ROWS == MINHASH_HASHES`).
pub const LSH_ROWS: usize = 4;
/// Words per shingle for redundancy and uniqueness.
pub const SHINGLE_WORDS: usize = 3;
