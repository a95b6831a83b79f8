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

use crate::model::{Category, Chunk, ChunkId, Trace};
use crate::retrieval::Bm25Index;
use crate::text;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Number of MinHash functions per chunk.
pub const MINHASH_HASHES: usize = 64;
/// LSH bands over the MinHash signature.
pub const LSH_BANDS: usize = 16;
/// Signature rows per LSH band (`LSH_BANDS * LSH_ROWS == MINHASH_HASHES`).
pub const LSH_ROWS: usize = 4;
/// Words per shingle for redundancy and uniqueness.
pub const SHINGLE_WORDS: usize = 3;
/// At most this many chunks are kept per LSH bucket (the earliest): bounds the comparisons per add
/// when many similar chunks arrive. Exact repeats are never added to buckets (the first copy stands
/// for them all).
const MAX_BUCKET: usize = 64;

/// Factor weights. Negative or non-finite weights count as 0.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Weights {
    /// Weight of [`Factors::recency`].
    pub recency: f32,
    /// Weight of [`Factors::popularity`].
    pub popularity: f32,
    /// Weight of [`Factors::density`].
    pub density: f32,
    /// Weight of `1 - `[`Factors::redundancy`].
    pub redundancy: f32,
    /// Weight of [`Factors::category`].
    pub category: f32,
    /// Weight of [`Factors::relevance`].
    pub relevance: f32,
    /// Weight of [`Factors::generation_cost`].
    pub generation_cost: f32,
    /// Weight of [`Factors::pinned`].
    pub pinned: f32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            recency: 1.0,
            popularity: 1.0,
            density: 0.5,
            redundancy: 1.0,
            category: 1.0,
            relevance: 1.0,
            generation_cost: 0.5,
            pinned: 2.0,
        }
    }
}

impl Weights {
    /// The weights in [`Factors::NAMES`] order.
    pub fn to_array(&self) -> [f32; 8] {
        [
            self.recency,
            self.popularity,
            self.density,
            self.redundancy,
            self.category,
            self.relevance,
            self.generation_cost,
            self.pinned,
        ]
    }

    /// Weights from an array in [`Factors::NAMES`] order.
    pub fn from_array(a: [f32; 8]) -> Weights {
        Weights {
            recency: a[0],
            popularity: a[1],
            density: a[2],
            redundancy: a[3],
            category: a[4],
            relevance: a[5],
            generation_cost: a[6],
            pinned: a[7],
        }
    }
}

/// The built-in category weight (used for categories missing from
/// [`ValueConfig::category_weights`]).
pub fn default_category_weight(category: Category) -> f32 {
    match category {
        Category::System => 1.0,
        Category::User => 0.8,
        Category::ToolResult => 0.6,
        Category::ToolCall => 0.5,
        Category::Assistant => 0.4,
        Category::Reasoning => 0.2,
        Category::Summary => 0.7,
        Category::Preference => 0.9,
        Category::Other => 0.3,
    }
}

/// The regeneration-cost prior of a category when the latency is unknown: a tool result means
/// re-running the tool, assistant text a model call; user input and static prompts are cheap.
fn generation_cost_prior(category: Category) -> f64 {
    match category {
        Category::ToolResult => 0.8,
        Category::Summary => 0.6,
        Category::Assistant => 0.5,
        Category::Reasoning => 0.4,
        Category::ToolCall => 0.4,
        Category::Preference => 0.3,
        Category::System | Category::User | Category::Other => 0.2,
    }
}

/// Value engine settings. Every field has a default, so a partial JSON or TOML object works;
/// a category missing from `category_weights` keeps its built-in weight.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ValueConfig {
    /// Factor weights.
    pub weights: Weights,
    /// Weight (the category factor, in `[0, 1]`) per category.
    pub category_weights: BTreeMap<Category, f32>,
    /// Recency half-life in calls; 0 or less disables decay over calls.
    pub recency_half_life_calls: f32,
    /// Recency half-life in seconds, applied (multiplied) on top of the call decay when set and
    /// both the chunk and "now" have times; 0 or less disables it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recency_half_life_secs: Option<f32>,
    /// Uses at which popularity reaches `1 - 1/e` (≈ 0.63).
    pub popularity_scale: f32,
    /// Distinct informative terms per token at which term density is 0.5.
    pub density_scale: f32,
    /// Estimated Jaccard similarity below which a chunk is not counted as redundant.
    pub redundancy_threshold: f32,
    /// Latency (ms) at which the latency part of the generation cost reaches `1 - 1/e`.
    pub latency_scale_ms: f32,
    /// Content tokens at which the size part of the generation cost reaches `1 - 1/e`.
    pub size_scale_tokens: f32,
}

impl Default for ValueConfig {
    fn default() -> Self {
        ValueConfig {
            weights: Weights::default(),
            category_weights: Category::ALL
                .iter()
                .map(|&c| (c, default_category_weight(c)))
                .collect(),
            recency_half_life_calls: 20.0,
            recency_half_life_secs: None,
            popularity_scale: 2.0,
            density_scale: 0.25,
            redundancy_threshold: 0.5,
            latency_scale_ms: 2000.0,
            size_scale_tokens: 500.0,
        }
    }
}

impl ValueConfig {
    /// The preset names [`ValueConfig::preset`] knows.
    pub const PRESETS: &'static [&'static str] =
        &["default", "support-bot", "coding-agent", "research"];

    /// A preset by name:
    /// - `default`: balanced;
    /// - `support-bot`: recent turns, user facts and preferences, the customer's question;
    ///   cheap to regenerate assistant text; time decay with a 6 h half-life;
    /// - `coding-agent`: tool results (file contents, test output) are costly to regenerate and
    ///   re-read files are redundant; reasoning is cheap; slow decay (30 calls);
    /// - `research`: relevance to the question and dense content first; slow decay (50 calls).
    pub fn preset(name: &str) -> Option<ValueConfig> {
        let base = ValueConfig::default();
        let with = |mut config: ValueConfig, cats: &[(Category, f32)]| {
            for &(c, w) in cats {
                config.category_weights.insert(c, w);
            }
            config
        };
        Some(match name {
            "default" => base,
            "support-bot" => with(
                ValueConfig {
                    weights: Weights {
                        recency: 1.5,
                        popularity: 0.5,
                        density: 0.5,
                        redundancy: 1.0,
                        category: 1.0,
                        relevance: 1.5,
                        generation_cost: 0.25,
                        pinned: 2.0,
                    },
                    recency_half_life_calls: 10.0,
                    recency_half_life_secs: Some(6.0 * 3600.0),
                    ..base
                },
                &[
                    (Category::User, 0.9),
                    (Category::Preference, 1.0),
                    (Category::ToolResult, 0.7),
                    (Category::Reasoning, 0.1),
                ],
            ),
            "coding-agent" => with(
                ValueConfig {
                    weights: Weights {
                        recency: 1.0,
                        popularity: 1.5,
                        density: 0.5,
                        redundancy: 1.5,
                        category: 1.0,
                        relevance: 1.0,
                        generation_cost: 1.0,
                        pinned: 2.0,
                    },
                    recency_half_life_calls: 30.0,
                    ..base
                },
                &[
                    (Category::User, 0.9),
                    (Category::ToolResult, 0.8),
                    (Category::ToolCall, 0.5),
                    (Category::Reasoning, 0.1),
                ],
            ),
            "research" => with(
                ValueConfig {
                    weights: Weights {
                        recency: 0.5,
                        popularity: 1.0,
                        density: 1.0,
                        redundancy: 1.0,
                        category: 0.5,
                        relevance: 2.0,
                        generation_cost: 0.75,
                        pinned: 2.0,
                    },
                    recency_half_life_calls: 50.0,
                    ..base
                },
                &[(Category::Summary, 0.9), (Category::ToolResult, 0.8)],
            ),
            _ => return None,
        })
    }

    /// The category factor of a category: the configured weight, else the built-in one, in `[0, 1]`.
    pub fn category_weight(&self, category: Category) -> f32 {
        let w = self
            .category_weights
            .get(&category)
            .copied()
            .unwrap_or_else(|| default_category_weight(category));
        clamp01(f64::from(w))
    }
}

/// The factors of one chunk, each in `[0, 1]`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Default)]
#[serde(default)]
pub struct Factors {
    /// Exponential decay since the chunk was added (1 = just added).
    pub recency: f32,
    /// How often later steps used it (0 = never).
    pub popularity: f32,
    /// Informative content per token.
    pub density: f32,
    /// Similarity to the most similar earlier chunk (1 = exact duplicate); lowers the value.
    pub redundancy: f32,
    /// The category's weight.
    pub category: f32,
    /// Lexical relevance to the task or query, relative to the best candidate.
    pub relevance: f32,
    /// Cost to regenerate it if dropped.
    pub generation_cost: f32,
    /// 1 when pinned or labelled important.
    pub pinned: f32,
}

impl Factors {
    /// Factor names, in the order of [`Factors::to_array`] and [`Weights::to_array`].
    pub const NAMES: [&'static str; 8] = [
        "recency",
        "popularity",
        "density",
        "redundancy",
        "category",
        "relevance",
        "generation_cost",
        "pinned",
    ];

    /// The factors in [`Factors::NAMES`] order.
    pub fn to_array(&self) -> [f32; 8] {
        [
            self.recency,
            self.popularity,
            self.density,
            self.redundancy,
            self.category,
            self.relevance,
            self.generation_cost,
            self.pinned,
        ]
    }

    /// The terms of the weighted sum in [`Factors::NAMES`] order: each factor clamped to `[0, 1]`,
    /// redundancy as `1 - redundancy`.
    fn terms(&self) -> [f64; 8] {
        let mut t = self.to_array().map(|x| f64::from(clamp01(f64::from(x))));
        t[3] = 1.0 - t[3];
        t
    }

    /// The weighted value `Σ w_f x_f / Σ w_f` in `[0, 1]` (redundancy as `1 - redundancy`;
    /// negative or non-finite weights count as 0; all weights 0 gives 0). Labels are not applied.
    pub fn value(&self, weights: &Weights) -> f32 {
        let w = weights.to_array().map(sanitize_weight);
        let total: f64 = w.iter().sum();
        if total <= 0.0 {
            return 0.0;
        }
        let sum: f64 = w.iter().zip(self.terms()).map(|(w, x)| w * x).sum();
        clamp01(sum / total)
    }
}

/// A user's label on a chunk.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// Worth keeping: the pinned factor is 1.
    Important,
    /// Not worth keeping: the value is forced to 0.
    Useless,
}

/// The value of one chunk, with its factors and the reasons.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ChunkValue {
    /// The chunk.
    pub chunk: ChunkId,
    /// The factors.
    pub factors: Factors,
    /// The weighted value in `[0, 1]` (0 for a chunk labelled useless).
    pub value: f32,
    /// Tokens the chunk costs in a call's input (estimated when the trace was not counted).
    pub tokens: u32,
    /// `value / max(tokens, 1)`.
    pub value_per_token: f32,
    /// `value` per 1,000 tokens, for display.
    pub value_per_1k_tokens: f32,
    /// Short human sentences, one per factor (and label), e.g. "used by 3 later steps".
    pub explanation: Vec<String>,
}

/// What [`ValueEngine::add`] keeps per chunk: only config-independent facts, so the config can be
/// changed ([`ValueEngine::set_config`]) without re-adding.
#[derive(Debug, Clone)]
struct Entry {
    id: ChunkId,
    key: String,
    category: Category,
    /// Tokens for value per token (framing included).
    tokens: u32,
    /// Tokens of the content alone.
    content_tokens: u32,
    tokens_estimated: bool,
    added_at_call: u32,
    time_secs: Option<f64>,
    distinct_terms: u32,
    /// Distinct / total word shingles (1 when there are none).
    uniqueness: f64,
    /// Estimated Jaccard similarity to the most similar earlier chunk found, and its slot.
    similarity: f64,
    similar_to: Option<u32>,
    latency_ms: Option<f64>,
    uses: u32,
    label: Option<Label>,
    pinned: bool,
}

/// Incremental scorer for the live engine and the simulator: chunks are added in order; state per
/// chunk is computed once on add (terms, MinHash, density, redundancy vs earlier chunks, BM25
/// document). Adding is O(chunk size + a bounded number of signature comparisons, found by LSH);
/// scoring is O(1) per chunk.
#[derive(Debug, Clone)]
pub struct ValueEngine {
    config: ValueConfig,
    entries: Vec<Entry>,
    /// Chunk -> slot in `entries`.
    slots: std::collections::HashMap<ChunkId, u32>,
    /// MinHash signature per slot (`None` for a chunk without words).
    signatures: Vec<Option<[u32; MINHASH_HASHES]>>,
    /// Per band: band hash -> slots (earliest first, at most `MAX_BUCKET`).
    bands: Vec<HashMap<u64, Vec<u32>>>,
    /// Whole-signature hash -> the first slot with that signature.
    exact: HashMap<u64, u32>,
    /// One document per slot.
    bm25: Bm25Index,
}

impl Default for ValueEngine {
    fn default() -> Self {
        ValueEngine::new(ValueConfig::default())
    }
}

impl ValueEngine {
    /// An empty engine.
    pub fn new(config: ValueConfig) -> ValueEngine {
        ValueEngine {
            config,
            entries: Vec::new(),
            slots: std::collections::HashMap::new(),
            signatures: Vec::new(),
            bands: vec![HashMap::new(); LSH_BANDS],
            exact: HashMap::new(),
            bm25: Bm25Index::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ValueConfig {
        &self.config
    }

    /// Replaces the configuration; takes effect on the next score (nothing is recomputed).
    pub fn set_config(&mut self, config: ValueConfig) {
        self.config = config;
    }

    /// Number of chunks added.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no chunk was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True when the chunk was added.
    pub fn contains(&self, chunk: ChunkId) -> bool {
        self.slot(chunk).is_some()
    }

    fn slot(&self, chunk: ChunkId) -> Option<usize> {
        self.slots.get(&chunk).map(|&s| s as usize)
    }

    /// Adds a chunk, available from call `added_at_call` (time `time_secs`, in seconds on any
    /// fixed clock, when known). Chunk ids are added in increasing order (redundancy is measured
    /// against the chunks added before); a repeated add is ignored.
    pub fn add(&mut self, chunk: &Chunk, added_at_call: u32, time_secs: Option<f64>) {
        if self.slot(chunk.id).is_some() {
            return;
        }
        let slot = self.entries.len() as u32;
        // A map, not a vector indexed by id: ids need not be dense (live engines, native files).
        self.slots.insert(chunk.id, slot);

        let analysis = analyze(&chunk.content);
        let estimate = estimate_tokens(&chunk.content);
        let (content_tokens, tokens_estimated) = if chunk.content_tokens > 0 {
            (chunk.content_tokens, false)
        } else {
            (estimate, estimate > 0)
        };
        let tokens = if chunk.tokens > 0 {
            chunk.tokens
        } else {
            content_tokens
        };
        let (similarity, similar_to) = match &analysis.signature {
            Some(sig) => self.index_signature(slot, sig),
            None => (0.0, None),
        };
        self.signatures.push(analysis.signature);
        self.bm25.add(&chunk.content);
        self.entries.push(Entry {
            id: chunk.id,
            key: chunk.key.clone(),
            category: chunk.category,
            tokens,
            content_tokens,
            tokens_estimated,
            added_at_call,
            time_secs: time_secs.filter(|t| t.is_finite()),
            distinct_terms: analysis.distinct_terms,
            uniqueness: analysis.uniqueness,
            similarity,
            similar_to,
            latency_ms: chunk
                .meta
                .latency_ms
                .filter(|ms| ms.is_finite() && *ms >= 0.0),
            uses: 0,
            label: None,
            pinned: false,
        });
    }

    /// Finds the most similar earlier signature (exact repeats first, then LSH candidates) and
    /// indexes this one. Returns the estimated Jaccard similarity and the earlier slot.
    fn index_signature(&mut self, slot: u32, sig: &[u32; MINHASH_HASHES]) -> (f64, Option<u32>) {
        let whole = hash_rows(sig);
        if let Some(&first) = self.exact.get(&whole) {
            if self.signatures[first as usize].as_ref() == Some(sig) {
                // Identical signature: the first copy stands for this one in every bucket.
                return (1.0, Some(first));
            }
        }
        let band_keys: Vec<u64> = sig.chunks(LSH_ROWS).map(hash_rows).collect();
        let mut candidates: Vec<u32> = Vec::new();
        for (band, key) in self.bands.iter().zip(&band_keys) {
            if let Some(bucket) = band.get(key) {
                candidates.extend_from_slice(bucket);
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut best = (0.0, None);
        for c in candidates {
            if let Some(other) = &self.signatures[c as usize] {
                let same = other.iter().zip(sig).filter(|(a, b)| a == b).count();
                let j = same as f64 / MINHASH_HASHES as f64;
                if j > best.0 {
                    best = (j, Some(c));
                }
            }
        }
        self.exact.entry(whole).or_insert(slot);
        for (band, key) in self.bands.iter_mut().zip(band_keys) {
            let bucket = band.entry(key).or_default();
            if bucket.len() < MAX_BUCKET {
                bucket.push(slot);
            }
        }
        best
    }

    /// Records that a later step used the chunk (ignored for a chunk not added).
    pub fn record_use(&mut self, chunk: ChunkId) {
        if let Some(s) = self.slot(chunk) {
            self.entries[s].uses = self.entries[s].uses.saturating_add(1);
        }
    }

    /// Sets the use count of a chunk (ignored for a chunk not added).
    pub fn set_uses(&mut self, chunk: ChunkId, uses: u32) {
        if let Some(s) = self.slot(chunk) {
            self.entries[s].uses = uses;
        }
    }

    /// Sets or clears a label (ignored for a chunk not added).
    pub fn set_label(&mut self, chunk: ChunkId, label: Option<Label>) {
        if let Some(s) = self.slot(chunk) {
            self.entries[s].label = label;
        }
    }

    /// Pins or unpins a chunk (ignored for a chunk not added).
    pub fn pin(&mut self, chunk: ChunkId, pinned: bool) {
        if let Some(s) = self.slot(chunk) {
            self.entries[s].pinned = pinned;
        }
    }

    /// Lexical relevance of each candidate to `query`: its BM25 score (IDF over every chunk added)
    /// divided by the best candidate's, in `[0, 1]`, in the order of `candidates`. All 0 when no
    /// candidate shares a term with the query; 0 for a chunk not added.
    pub fn relevance(&self, query: &str, candidates: &[ChunkId]) -> Vec<f32> {
        // Score only the candidates: the cost follows the context, not the whole history.
        let slots: Vec<Option<usize>> = candidates.iter().map(|&c| self.slot(c)).collect();
        let docs: Vec<u32> = slots.iter().flatten().map(|&s| s as u32).collect();
        let scores = self.bm25.scores_for(query, &docs);
        let mut next = scores.into_iter();
        let raw: Vec<f32> = slots
            .iter()
            .map(|s| s.and_then(|_| next.next()).unwrap_or(0.0))
            .collect();
        let max = raw.iter().copied().fold(0.0f32, f32::max);
        if max <= 0.0 || !max.is_finite() {
            return vec![0.0; candidates.len()];
        }
        raw.iter().map(|&s| clamp01(f64::from(s / max))).collect()
    }

    /// Scores every candidate; relevance to `query` when given (else 0).
    pub fn score_all(
        &self,
        candidates: &[ChunkId],
        now_call: u32,
        now_secs: Option<f64>,
        query: Option<&str>,
    ) -> Vec<ChunkValue> {
        let relevance = match query {
            Some(q) => self.relevance(q, candidates),
            None => vec![0.0; candidates.len()],
        };
        candidates
            .iter()
            .zip(relevance)
            .map(|(&c, r)| self.score(c, now_call, now_secs, r))
            .collect()
    }

    /// Scores one chunk as of call `now_call` (and time `now_secs`), with its relevance to the
    /// current task or query precomputed by the caller ([`ValueEngine::relevance`]). O(1). A chunk
    /// that was not added scores 0 with an explanation saying so.
    pub fn score(
        &self,
        chunk: ChunkId,
        now_call: u32,
        now_secs: Option<f64>,
        relevance: f32,
    ) -> ChunkValue {
        self.score_with(chunk, now_call, now_secs, relevance, true)
    }

    /// The value of each candidate, without explanations: what a policy ranking its context
    /// every turn needs (formatting explanations would dominate the cost).
    pub fn values(
        &self,
        candidates: &[ChunkId],
        now_call: u32,
        now_secs: Option<f64>,
        query: Option<&str>,
    ) -> Vec<f32> {
        let relevance = match query {
            Some(q) => self.relevance(q, candidates),
            None => vec![0.0; candidates.len()],
        };
        candidates
            .iter()
            .zip(relevance)
            .map(|(&c, r)| self.score_with(c, now_call, now_secs, r, false).value)
            .collect()
    }

    fn score_with(
        &self,
        chunk: ChunkId,
        now_call: u32,
        now_secs: Option<f64>,
        relevance: f32,
        explain: bool,
    ) -> ChunkValue {
        let Some(slot) = self.slot(chunk) else {
            return ChunkValue {
                chunk,
                factors: Factors::default(),
                value: 0.0,
                tokens: 0,
                value_per_token: 0.0,
                value_per_1k_tokens: 0.0,
                explanation: vec!["not added to the value engine".to_string()],
            };
        };
        let e = &self.entries[slot];
        let cfg = &self.config;
        let mut why = Vec::with_capacity(9);

        // Recency.
        let calls_ago = now_call.saturating_sub(e.added_at_call);
        let mut recency = decay(f64::from(calls_ago), f64::from(cfg.recency_half_life_calls));
        let mut sentence = if !explain {
            String::new()
        } else if calls_ago == 0 {
            "added at this call".to_string()
        } else {
            let hl = f64::from(cfg.recency_half_life_calls);
            let ago = format!("added {calls_ago} call{} ago", plural(u64::from(calls_ago)));
            if hl > 0.0 && hl.is_finite() {
                let s = if hl == 1.0 { "" } else { "s" };
                format!("{ago} (half-life {} call{s})", fmt_num(hl))
            } else {
                format!("{ago} (no decay)")
            }
        };
        if let (Some(hl), Some(t0), Some(now)) = (cfg.recency_half_life_secs, e.time_secs, now_secs)
        {
            let age = (now - t0).max(0.0);
            if age.is_finite() && hl > 0.0 && hl.is_finite() {
                recency *= decay(age, f64::from(hl));
                if explain {
                    sentence += &format!(
                        ", {} ago (half-life {})",
                        fmt_duration(age),
                        fmt_duration(f64::from(hl))
                    );
                }
            }
        }
        let recency = clamp01(recency);
        if explain {
            why.push(format!("{sentence}: recency {recency:.2}"))
        };

        // Popularity.
        let popularity = clamp01(saturate(f64::from(e.uses), f64::from(cfg.popularity_scale)));
        if explain {
            why.push(if e.uses == 0 {
                "not used by a later step yet: popularity 0".to_string()
            } else {
                format!(
                    "used by {} later step{}: popularity {popularity:.2}",
                    e.uses,
                    plural(u64::from(e.uses))
                )
            })
        };

        // Density.
        let per_token = f64::from(e.distinct_terms) / f64::from(e.content_tokens.max(1));
        let scale = f64::from(cfg.density_scale);
        let term_density = if scale > 0.0 && scale.is_finite() {
            per_token / (per_token + scale)
        } else if per_token > 0.0 {
            1.0
        } else {
            0.0
        };
        let density = clamp01((term_density * e.uniqueness).sqrt());
        if explain {
            why.push(format!(
            "{} distinct informative term{} in {} {}token{}, {:.0}% repeated 3-grams: density {density:.2}",
            e.distinct_terms,
            plural(u64::from(e.distinct_terms)),
            e.content_tokens,
            if e.tokens_estimated { "estimated " } else { "" },
            plural(u64::from(e.content_tokens)),
            (1.0 - e.uniqueness) * 100.0,
        ))
        };

        // Redundancy.
        let threshold = f64::from(cfg.redundancy_threshold);
        let redundant = e.similarity > 0.0 && e.similarity >= threshold;
        let redundancy = if redundant {
            clamp01(e.similarity)
        } else {
            0.0
        };
        let similar_key = e.similar_to.map(|s| self.entries[s as usize].key.as_str());
        if explain {
            why.push(match similar_key {
            Some(key) if redundant => format!(
                "near-duplicate ({:.2}) of {key}: redundancy {redundancy:.2} lowers the value",
                e.similarity
            ),
            Some(key) => format!(
                "most similar earlier chunk {key} ({:.2}) is below the {threshold:.2} threshold: not redundant",
                e.similarity
            ),
            None => "no near-duplicate earlier: redundancy 0".to_string(),
        })
        };

        // Category.
        let category = cfg.category_weight(e.category);
        if explain {
            why.push(format!("category {}: weight {category:.2}", e.category))
        };

        // Relevance.
        let relevance = clamp01(f64::from(relevance));
        if explain {
            why.push(if relevance > 0.0 {
                format!("relevance to the task {relevance:.2} (1 = the best match)")
            } else {
                "no lexical overlap with the task: relevance 0".to_string()
            })
        };

        // Generation cost.
        let size = saturate(
            f64::from(e.content_tokens),
            f64::from(cfg.size_scale_tokens),
        );
        let base = match e.latency_ms {
            Some(ms) => saturate(ms, f64::from(cfg.latency_scale_ms)),
            None => generation_cost_prior(e.category),
        };
        let generation_cost = clamp01(base * (0.5 + 0.5 * size));
        if explain {
            why.push(match e.latency_ms {
                Some(ms) => format!(
                    "took {} to produce, {} tokens: regeneration cost {generation_cost:.2}",
                    fmt_duration(ms / 1000.0),
                    e.content_tokens
                ),
                None => format!(
                    "{} of {} tokens: regeneration cost {generation_cost:.2}",
                    e.category, e.content_tokens
                ),
            })
        };

        // Pins and labels.
        let important = e.label == Some(Label::Important);
        let pinned = if e.pinned || important { 1.0 } else { 0.0 };
        match (e.pinned, important) {
            (true, true) => {
                if explain {
                    why.push("pinned and labelled important".to_string())
                }
            }
            (true, false) => {
                if explain {
                    why.push("pinned".to_string())
                }
            }
            (false, true) => {
                if explain {
                    why.push("labelled important".to_string())
                }
            }
            (false, false) => {}
        }

        let factors = Factors {
            recency,
            popularity,
            density,
            redundancy,
            category,
            relevance,
            generation_cost,
            pinned,
        };
        let value = if e.label == Some(Label::Useless) {
            if explain {
                why.push("labelled useless: value forced to 0".to_string())
            };
            0.0
        } else {
            factors.value(&cfg.weights)
        };
        let tokens = e.tokens.max(1);
        ChunkValue {
            chunk: e.id,
            factors,
            value,
            tokens: e.tokens,
            value_per_token: value / tokens as f32,
            value_per_1k_tokens: value * 1000.0 / tokens as f32,
            explanation: why,
        }
    }
}

/// Batch helper: every chunk of a trace scored as of `at_call`, with uses = the given per-chunk use
/// counts (index = [`ChunkId`]; missing entries are 0) and the task = `query`, else the first user
/// message. A chunk is added at the first call that carries it in its input (or the call after the
/// one that produced it; the call count for chunks no call carries). No times: recency decays over
/// calls only.
pub fn score_trace(
    trace: &Trace,
    config: &ValueConfig,
    uses: &[u32],
    at_call: u32,
    query: Option<&str>,
) -> Vec<ChunkValue> {
    let n_calls = trace.calls.len() as u32;
    let mut added = vec![n_calls; trace.chunks.len()];
    for (i, call) in trace.calls.iter().enumerate() {
        let i = i as u32;
        let mut first = |id: ChunkId, at: u32| {
            if let Some(a) = added.get_mut(id.index()) {
                *a = (*a).min(at);
            }
        };
        call.input.iter().for_each(|&id| first(id, i));
        call.output.iter().for_each(|&id| first(id, i + 1));
    }
    let mut engine = ValueEngine::new(config.clone());
    for (chunk, &at) in trace.chunks.iter().zip(&added) {
        engine.add(chunk, at, None);
    }
    for (i, &n) in uses.iter().enumerate() {
        engine.set_uses(ChunkId(i as u32), n);
    }
    let task = query.or_else(|| {
        trace
            .chunks
            .iter()
            .find(|c| c.category == Category::User)
            .map(|c| c.content.as_str())
    });
    let ids: Vec<ChunkId> = trace.chunks.iter().map(|c| c.id).collect();
    engine.score_all(&ids, at_call, None, task)
}

/// How well weights agree with labels.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FitReport {
    /// The weights measured (fitted by [`fit_weights`], given to [`agreement`]).
    pub weights: Weights,
    /// Values at or above this are predicted important.
    pub threshold: f32,
    /// Of the chunks predicted important, the share labelled important (1 when none is predicted
    /// and none is labelled).
    pub precision: f32,
    /// Of the chunks labelled important, the share predicted important (1 when none is labelled).
    pub recall: f32,
    /// Share of samples predicted right.
    pub accuracy: f32,
    /// Probability that an important chunk has a higher value than a useless one (ties count
    /// half): agreement of the ranking, whatever the threshold. 0.5 when a class is missing.
    pub auc: f32,
    /// Number of samples.
    pub samples: usize,
}

/// Number of fitted features: every factor but `pinned`.
const FIT_FEATURES: usize = 7;
/// Full-batch gradient steps of [`fit_weights`].
pub const FIT_STEPS: usize = 2000;
const FIT_LEARNING_RATE: f64 = 0.5;
const FIT_L2: f64 = 1e-3;

/// Learns weights from labelled chunks by logistic regression, in-crate and deterministic.
///
/// - Features: the factors except `pinned`, redundancy as `1 - redundancy` (as the value uses
///   them), standardized; target: important = 1, useless = 0; classes weighted to equal total
///   weight. Coefficients start at 0; [`FIT_STEPS`] full-batch gradient steps (rate 0.5, L2 1e-3).
/// - Mapping back: coefficients are unstandardized; a negative coefficient becomes weight 0
///   (weights cannot be negative: the feature is replaced by its mean, folded into the bias); the
///   rest are scaled so they sum to the base config's weights (pinned excluded). `pinned` keeps the
///   base weight: it is an explicit signal, not learnable from labels (compute the samples'
///   factors before applying labels, or the pinned factor leaks them).
/// - Threshold: the logistic decision boundary `Σ θ x + b = 0` expressed as a value (for an
///   unpinned chunk). Precision, recall and accuracy are measured with the learned weights at that
///   threshold. If no coefficient is positive, the base weights are returned with their agreement.
pub fn fit_weights(samples: &[(Factors, Label)], base: &ValueConfig) -> FitReport {
    let n = samples.len();
    let positives = samples
        .iter()
        .filter(|(_, l)| *l == Label::Important)
        .count();
    if n == 0 || positives == 0 || positives == n {
        return agreement(samples, base);
    }
    let xs: Vec<[f64; FIT_FEATURES]> = samples
        .iter()
        .map(|(f, _)| {
            let t = f.terms();
            [t[0], t[1], t[2], t[3], t[4], t[5], t[6]]
        })
        .collect();
    let ys: Vec<f64> = samples
        .iter()
        .map(|(_, l)| if *l == Label::Important { 1.0 } else { 0.0 })
        .collect();
    // Class weights: each class carries half the total weight.
    let w_pos = n as f64 / (2.0 * positives as f64);
    let w_neg = n as f64 / (2.0 * (n - positives) as f64);
    let sample_w: Vec<f64> = ys
        .iter()
        .map(|&y| if y > 0.5 { w_pos } else { w_neg })
        .collect();

    let mut mean = [0.0f64; FIT_FEATURES];
    let mut sd = [0.0f64; FIT_FEATURES];
    for x in &xs {
        for j in 0..FIT_FEATURES {
            mean[j] += x[j] / n as f64;
        }
    }
    for x in &xs {
        for j in 0..FIT_FEATURES {
            sd[j] += (x[j] - mean[j]).powi(2) / n as f64;
        }
    }
    let sd = sd.map(f64::sqrt);
    let z: Vec<[f64; FIT_FEATURES]> = xs
        .iter()
        .map(|x| {
            let mut z = [0.0; FIT_FEATURES];
            for j in 0..FIT_FEATURES {
                z[j] = if sd[j] > 1e-9 {
                    (x[j] - mean[j]) / sd[j]
                } else {
                    0.0
                };
            }
            z
        })
        .collect();

    let mut theta = [0.0f64; FIT_FEATURES];
    let mut bias = 0.0f64;
    for _ in 0..FIT_STEPS {
        let mut grad = [0.0f64; FIT_FEATURES];
        let mut grad_b = 0.0;
        for ((z, &y), &w) in z.iter().zip(&ys).zip(&sample_w) {
            let margin = bias + theta.iter().zip(z).map(|(t, x)| t * x).sum::<f64>();
            let err = w * (sigmoid(margin) - y);
            for j in 0..FIT_FEATURES {
                grad[j] += err * z[j];
            }
            grad_b += err;
        }
        for j in 0..FIT_FEATURES {
            theta[j] -= FIT_LEARNING_RATE * (grad[j] / n as f64 + FIT_L2 * theta[j]);
        }
        bias -= FIT_LEARNING_RATE * grad_b / n as f64;
    }

    // Back to raw features: margin = b_raw + Σ θ_raw x.
    let mut raw = [0.0f64; FIT_FEATURES];
    let mut b_raw = bias;
    for j in 0..FIT_FEATURES {
        if sd[j] > 1e-9 {
            raw[j] = theta[j] / sd[j];
            b_raw -= theta[j] * mean[j] / sd[j];
        }
    }
    // Negative coefficients cannot be weights: replace those features by their means.
    for j in 0..FIT_FEATURES {
        if raw[j] < 0.0 {
            b_raw += raw[j] * mean[j];
            raw[j] = 0.0;
        }
    }
    let raw_sum: f64 = raw.iter().sum();
    if raw_sum <= 1e-12 || !raw_sum.is_finite() {
        return agreement(samples, base);
    }
    let base_w = base.weights.to_array().map(sanitize_weight);
    let base_sum: f64 = base_w[..FIT_FEATURES].iter().sum();
    let scale = if base_sum > 0.0 { base_sum } else { 1.0 } / raw_sum;
    let mut learned = [0.0f32; 8];
    for j in 0..FIT_FEATURES {
        learned[j] = (raw[j] * scale) as f32;
    }
    learned[7] = base_w[7] as f32;
    let weights = Weights::from_array(learned);
    // Σ θ x ≥ -b  ⇔  value ≥ -b·scale / (Σ w + w_pinned) for an unpinned chunk.
    let total: f64 = learned.iter().map(|&w| f64::from(w)).sum();
    let threshold = clamp01(-b_raw * scale / total);
    measure(samples, weights, threshold)
}

/// How well a config's weights agree with labels: precision, recall and accuracy of "value at or
/// above the threshold" against "labelled important", at the threshold that maximizes accuracy on
/// these samples (ties: the one nearest 0.5), and the threshold-free AUC.
pub fn agreement(samples: &[(Factors, Label)], config: &ValueConfig) -> FitReport {
    let values: Vec<f32> = samples
        .iter()
        .map(|(f, _)| f.value(&config.weights))
        .collect();
    let mut cuts: Vec<f32> = values.clone();
    cuts.push(0.5);
    cuts.push(f32::INFINITY);
    cuts.sort_by(f32::total_cmp);
    cuts.dedup();
    let mut best = (0usize, f32::INFINITY, 0.5f32);
    for &cut in &cuts {
        let right = samples
            .iter()
            .zip(&values)
            .filter(|((_, l), &v)| (v >= cut) == (*l == Label::Important))
            .count();
        let distance = (cut - 0.5).abs();
        if right > best.0 || (right == best.0 && distance < best.1) {
            best = (right, distance, cut);
        }
    }
    let threshold = if best.2.is_finite() { best.2 } else { 1.0 };
    measure(samples, config.weights.clone(), threshold)
}

fn measure(samples: &[(Factors, Label)], weights: Weights, threshold: f32) -> FitReport {
    let (mut tp, mut fp, mut tn, mut fn_) = (0usize, 0usize, 0usize, 0usize);
    let mut scored: Vec<(f32, bool)> = Vec::with_capacity(samples.len());
    for (f, l) in samples {
        let v = f.value(&weights);
        let important = *l == Label::Important;
        scored.push((v, important));
        match (v >= threshold, important) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, false) => tn += 1,
            (false, true) => fn_ += 1,
        }
    }
    let ratio = |a: usize, b: usize, empty: f32| {
        if b == 0 {
            empty
        } else {
            a as f32 / b as f32
        }
    };
    let positives = tp + fn_;
    FitReport {
        weights,
        threshold,
        precision: ratio(tp, tp + fp, if positives == 0 { 1.0 } else { 0.0 }),
        recall: ratio(tp, positives, 1.0),
        accuracy: ratio(tp + tn, samples.len(), 0.0),
        auc: auc(&mut scored),
        samples: samples.len(),
    }
}

/// Mann-Whitney AUC with average ranks for ties.
fn auc(scored: &mut [(f32, bool)]) -> f32 {
    let pos = scored.iter().filter(|s| s.1).count();
    let neg = scored.len() - pos;
    if pos == 0 || neg == 0 {
        return 0.5;
    }
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut rank_sum = 0.0f64;
    let mut i = 0;
    while i < scored.len() {
        let mut j = i;
        while j + 1 < scored.len() && scored[j + 1].0 == scored[i].0 {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share their average.
        let avg = (i + j + 2) as f64 / 2.0;
        rank_sum += avg * scored[i..=j].iter().filter(|s| s.1).count() as f64;
        i = j + 1;
    }
    let u = rank_sum - (pos * (pos + 1)) as f64 / 2.0;
    (u / (pos as f64 * neg as f64)) as f32
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Clamps to `[0, 1]`; NaN becomes 0.
fn clamp01(x: f64) -> f32 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0) as f32
    }
}

fn sanitize_weight(w: f32) -> f64 {
    if w.is_finite() && w > 0.0 {
        f64::from(w)
    } else {
        0.0
    }
}

/// `0.5^(age / half_life)`; a half-life of 0 or less (or not finite) disables decay.
fn decay(age: f64, half_life: f64) -> f64 {
    if !(half_life > 0.0 && half_life.is_finite() && age.is_finite()) {
        return 1.0;
    }
    0.5f64.powf(age / half_life)
}

/// `1 - exp(-x / scale)`; with a scale of 0 or less, 1 for any positive x.
fn saturate(x: f64, scale: f64) -> f64 {
    if !(scale > 0.0 && scale.is_finite()) {
        return if x > 0.0 { 1.0 } else { 0.0 };
    }
    1.0 - (-x / scale).exp()
}

fn estimate_tokens(content: &str) -> u32 {
    u32::try_from(content.chars().count().div_ceil(4)).unwrap_or(u32::MAX)
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e9 {
        format!("{}", x as i64)
    } else {
        format!("{x:.1}")
    }
}

fn fmt_duration(secs: f64) -> String {
    if secs < 1.0 {
        format!("{:.0} ms", secs * 1000.0)
    } else if secs < 10.0 {
        format!("{secs:.1} s")
    } else if secs < 120.0 {
        format!("{secs:.0} s")
    } else if secs < 7200.0 {
        format!("{:.0} min", secs / 60.0)
    } else if secs < 172_800.0 {
        format!("{:.1} h", secs / 3600.0)
    } else {
        format!("{:.1} d", secs / 86400.0)
    }
}

/// What the engine computes from a chunk's text once.
struct Analysis {
    distinct_terms: u32,
    uniqueness: f64,
    signature: Option<[u32; MINHASH_HASHES]>,
}

fn analyze(content: &str) -> Analysis {
    let mut word_hashes = Vec::new();
    let mut term_hashes = Vec::new();
    for w in text::words(content) {
        word_hashes.push(fnv1a(w.as_bytes()));
        if !text::is_stop_word(&w) {
            term_hashes.push(fnv1a(text::stem(&w).as_bytes()));
        }
    }
    term_hashes.sort_unstable();
    term_hashes.dedup();
    let mut shingles: Vec<u64> = if word_hashes.len() >= SHINGLE_WORDS {
        word_hashes.windows(SHINGLE_WORDS).map(hash_words).collect()
    } else if word_hashes.is_empty() {
        Vec::new()
    } else {
        vec![hash_words(&word_hashes)]
    };
    let total = shingles.len();
    shingles.sort_unstable();
    shingles.dedup();
    Analysis {
        distinct_terms: u32::try_from(term_hashes.len()).unwrap_or(u32::MAX),
        uniqueness: if total == 0 {
            1.0
        } else {
            shingles.len() as f64 / total as f64
        },
        signature: (!shingles.is_empty()).then(|| minhash(&shingles)),
    }
}

/// Multipliers and offsets of the MinHash functions `h_i(x) = (a_i·x + b_i) >> 32` (multiply-shift
/// hashing of the already-mixed shingle hash), from a fixed splitmix64 sequence: no OS randomness.
const MINHASH_PARAMS: [(u64, u64); MINHASH_HASHES] = {
    let mut p = [(0u64, 0u64); MINHASH_HASHES];
    let mut i = 0;
    while i < MINHASH_HASHES {
        p[i] = (
            splitmix64(0x5EED_0000 + 2 * i as u64) | 1,
            splitmix64(0x5EED_0001 + 2 * i as u64),
        );
        i += 1;
    }
    p
};

fn minhash(shingles: &[u64]) -> [u32; MINHASH_HASHES] {
    let mut sig = [u32::MAX; MINHASH_HASHES];
    for &x in shingles {
        for (s, &(a, b)) in sig.iter_mut().zip(&MINHASH_PARAMS) {
            let h = (a.wrapping_mul(x).wrapping_add(b) >> 32) as u32;
            if h < *s {
                *s = h;
            }
        }
    }
    sig
}

const fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

/// Order-sensitive hash of a word sequence (a shingle).
fn hash_words(words: &[u64]) -> u64 {
    let mut h = splitmix64(words.len() as u64);
    for &w in words {
        h = splitmix64(h.rotate_left(23) ^ w);
    }
    h
}

/// Hash of signature rows (an LSH band or the whole signature).
fn hash_rows(rows: &[u32]) -> u64 {
    let mut h = splitmix64(rows.len() as u64);
    for &r in rows {
        h = splitmix64(h ^ u64::from(r));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ChunkMeta;

    fn chunk(id: u32, category: Category, content: &str) -> Chunk {
        Chunk {
            id: ChunkId(id),
            key: format!("m{id}"),
            category,
            content: content.to_string(),
            starts_message: true,
            content_tokens: 0,
            tokens: 0,
            meta: ChunkMeta::default(),
        }
    }

    /// A deterministic pseudo-random generator for generated cases.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = splitmix64(self.0);
            self.0
        }
        fn unit(&mut self) -> f32 {
            (self.next() >> 40) as f32 / (1u64 << 24) as f32
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    const VOCAB: &[&str] = &[
        "flight", "paris", "lisbon", "booking", "the", "a", "of", "refund", "error", "cargo",
        "test", "failed", "passed", "file", "src", "main", "rs", "json", "{", "}", ":", "123",
        "ok", "thanks", "hello", "user", "order", "status", "shipped", "é", "日本", "",
    ];

    fn random_text(rng: &mut Lcg, max_words: u64) -> String {
        let n = rng.below(max_words + 1);
        (0..n)
            .map(|_| VOCAB[rng.below(VOCAB.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(if rng.below(2) == 0 { " " } else { "  " })
    }

    fn prose(seed: u64, words: usize) -> String {
        // Distinct synthetic words: w<seed>_<i>.
        (0..words)
            .map(|i| format!("w{seed}x{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn in_unit(x: f32) -> bool {
        (0.0..=1.0).contains(&x)
    }

    #[test]
    fn factors_stay_in_unit_interval_for_arbitrary_inputs() {
        let mut rng = Lcg(7);
        let odd = [
            0.0,
            -1.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e-30,
            1e30,
        ];
        for case in 0..300 {
            let mut config =
                ValueConfig::preset(ValueConfig::PRESETS[case % ValueConfig::PRESETS.len()])
                    .expect("preset");
            let pick = |rng: &mut Lcg| {
                if rng.below(3) == 0 {
                    odd[rng.below(odd.len() as u64) as usize]
                } else {
                    rng.unit() * 100.0
                }
            };
            if case % 2 == 1 {
                config.weights = Weights::from_array([0.0; 8].map(|_| pick(&mut rng)));
                config.recency_half_life_calls = pick(&mut rng);
                config.recency_half_life_secs = Some(pick(&mut rng));
                config.popularity_scale = pick(&mut rng);
                config.density_scale = pick(&mut rng);
                config.redundancy_threshold = pick(&mut rng);
                config.latency_scale_ms = pick(&mut rng);
                config.size_scale_tokens = pick(&mut rng);
                config
                    .category_weights
                    .insert(Category::ToolResult, pick(&mut rng));
            }
            let mut engine = ValueEngine::new(config);
            let n = 1 + rng.below(25) as u32;
            let mut ids = Vec::new();
            for i in 0..n {
                let mut c = chunk(
                    i,
                    Category::ALL[rng.below(9) as usize],
                    &random_text(&mut rng, 40),
                );
                if rng.below(2) == 0 {
                    c.content_tokens = rng.below(100) as u32;
                    c.tokens = c.content_tokens + rng.below(5) as u32;
                }
                if rng.below(3) == 0 {
                    c.meta.latency_ms = Some(f64::from(pick(&mut rng)) * 100.0);
                }
                let time = match rng.below(3) {
                    0 => None,
                    1 => Some(f64::from(rng.unit()) * 1e6),
                    _ => Some(f64::NAN),
                };
                engine.add(&c, rng.below(50) as u32, time);
                for _ in 0..rng.below(4) {
                    engine.record_use(c.id);
                }
                match rng.below(5) {
                    0 => engine.set_label(c.id, Some(Label::Important)),
                    1 => engine.set_label(c.id, Some(Label::Useless)),
                    2 => engine.pin(c.id, true),
                    _ => {}
                }
                ids.push(c.id);
            }
            let now_secs = match rng.below(3) {
                0 => None,
                1 => Some(f64::from(rng.unit()) * 1e6),
                _ => Some(f64::INFINITY),
            };
            let query = random_text(&mut rng, 6);
            let rel = engine.relevance(&query, &ids);
            assert!(rel.iter().all(|&r| in_unit(r)), "{rel:?}");
            for v in engine.score_all(&ids, rng.below(80) as u32, now_secs, Some(&query)) {
                assert!(
                    v.factors.to_array().iter().all(|&x| in_unit(x)),
                    "case {case}: {v:?}"
                );
                assert!(in_unit(v.value), "case {case}: {v:?}");
                assert!(v.value_per_token.is_finite() && v.value_per_token >= 0.0);
                assert!(v.value_per_1k_tokens.is_finite());
                assert!(v.explanation.len() >= 7);
            }
            // Relevance passed in out of range is clamped too.
            for r in [f32::NAN, -3.0, 7.0] {
                let v = engine.score(ids[0], 0, None, r);
                assert!(in_unit(v.factors.relevance) && in_unit(v.value));
            }
        }
    }

    #[test]
    fn duplicates_are_redundant_and_unrelated_chunks_are_not() {
        let mut engine = ValueEngine::default();
        let original = prose(1, 120);
        let mut near: Vec<String> = original.split(' ').map(str::to_string).collect();
        near[60] = "changed".into();
        let near = near.join(" ");
        engine.add(&chunk(0, Category::ToolResult, &original), 0, None);
        engine.add(&chunk(1, Category::ToolResult, &prose(2, 120)), 1, None);
        engine.add(&chunk(2, Category::ToolResult, &original), 2, None);
        engine.add(&chunk(3, Category::ToolResult, &near), 3, None);
        engine.add(&chunk(4, Category::User, "Hello there!"), 4, None);
        let v: Vec<ChunkValue> = (0..5)
            .map(|i| engine.score(ChunkId(i), 5, None, 0.0))
            .collect();
        assert_eq!(v[0].factors.redundancy, 0.0);
        assert_eq!(v[1].factors.redundancy, 0.0, "{:?}", v[1].explanation);
        assert_eq!(v[2].factors.redundancy, 1.0);
        assert!(v[2].explanation.iter().any(|s| s.contains("of m0")));
        // 117 of 118 shingles kept, 3 changed: Jaccard 115 / 121 ≈ 0.95.
        assert!(v[3].factors.redundancy > 0.8, "{:?}", v[3].factors);
        assert_eq!(v[4].factors.redundancy, 0.0);
        // Redundancy lowers the value.
        assert!(v[2].value < v[0].value);
        // A repeated add is ignored.
        engine.add(&chunk(2, Category::ToolResult, "different"), 9, None);
        assert_eq!(engine.len(), 5);
    }

    #[test]
    fn many_similar_chunks_keep_lookups_bounded() {
        let mut engine = ValueEngine::default();
        let prefix = "the build log says that the tool ran with these options and printed item";
        let suffix = "of the batch then it exited with status zero after writing the report";
        for i in 0..3000u32 {
            let text = format!("{prefix} {i} {suffix}");
            engine.add(&chunk(i, Category::ToolResult, &text), i, None);
        }
        let sizes = || engine.bands.iter().flat_map(|b| b.values().map(Vec::len));
        assert!(sizes().all(|n| n <= MAX_BUCKET));
        assert!(sizes().any(|n| n == MAX_BUCKET), "the cap is exercised");
        let v = engine.score(ChunkId(2999), 3000, None, 0.0);
        assert!(v.factors.redundancy > 0.5, "{v:?}");
    }

    #[test]
    fn recency_decays_with_the_half_life() {
        let config = ValueConfig {
            recency_half_life_calls: 10.0,
            recency_half_life_secs: Some(100.0),
            ..ValueConfig::default()
        };
        let mut engine = ValueEngine::new(config);
        engine.add(
            &chunk(0, Category::User, "where is my order"),
            5,
            Some(1000.0),
        );
        let r = |call, secs| engine.score(ChunkId(0), call, secs, 0.0).factors.recency;
        assert_eq!(r(5, None), 1.0);
        assert_eq!(r(0, None), 1.0, "now before the add: no decay");
        assert!((r(15, None) - 0.5).abs() < 1e-6);
        assert!((r(25, None) - 0.25).abs() < 1e-6);
        assert!((r(5, Some(1100.0)) - 0.5).abs() < 1e-6);
        assert!((r(15, Some(1100.0)) - 0.25).abs() < 1e-6, "product of both");
        let e = engine.score(ChunkId(0), 15, Some(1100.0), 0.0).explanation;
        assert!(
            e[0].contains("10 calls ago") && e[0].contains(", 100 s ago"),
            "{e:?}"
        );
        // Half-life 0 disables decay.
        engine.set_config(ValueConfig {
            recency_half_life_calls: 0.0,
            ..ValueConfig::default()
        });
        assert_eq!(
            engine.score(ChunkId(0), 500, None, 0.0).factors.recency,
            1.0
        );
    }

    #[test]
    fn labels_and_pins() {
        let mut engine = ValueEngine::default();
        for i in 0..3 {
            engine.add(
                &chunk(i, Category::Assistant, &format!("answer number {i}")),
                i,
                None,
            );
        }
        let before = engine.score(ChunkId(0), 3, None, 0.5);
        assert_eq!(before.factors.pinned, 0.0);
        engine.set_label(ChunkId(0), Some(Label::Useless));
        engine.set_label(ChunkId(1), Some(Label::Important));
        engine.pin(ChunkId(2), true);
        let useless = engine.score(ChunkId(0), 3, None, 0.5);
        assert_eq!(useless.value, 0.0);
        assert_eq!(useless.value_per_token, 0.0);
        assert_eq!(useless.factors, before.factors);
        assert!(useless.explanation.iter().any(|s| s.contains("useless")));
        let important = engine.score(ChunkId(1), 3, None, 0.5);
        assert_eq!(important.factors.pinned, 1.0);
        assert!(important.value > before.value);
        assert_eq!(engine.score(ChunkId(2), 3, None, 0.5).factors.pinned, 1.0);
        engine.pin(ChunkId(2), false);
        engine.set_label(ChunkId(0), None);
        assert_eq!(engine.score(ChunkId(2), 3, None, 0.5).factors.pinned, 0.0);
        assert_eq!(engine.score(ChunkId(0), 3, None, 0.5), before);
        // Unknown chunks are harmless.
        engine.pin(ChunkId(99), true);
        engine.record_use(ChunkId(99));
        assert_eq!(engine.score(ChunkId(99), 3, None, 1.0).value, 0.0);
    }

    #[test]
    fn popularity_density_cost_and_relevance() {
        let mut engine = ValueEngine::default();
        let mut slow = chunk(
            0,
            Category::ToolResult,
            "Order 4412: shipped via DHL, tracking JD0142, arriving Friday",
        );
        slow.meta.latency_ms = Some(4000.0);
        engine.add(&slow, 0, None);
        engine.add(&chunk(1, Category::User, "thanks"), 1, None);
        engine.add(
            &chunk(2, Category::ToolResult, &"error error error ".repeat(50)),
            2,
            None,
        );
        engine.add(&chunk(3, Category::User, "Where is order 4412?"), 3, None);
        for _ in 0..3 {
            engine.record_use(ChunkId(0));
        }
        let ids = [ChunkId(0), ChunkId(1), ChunkId(2), ChunkId(3)];
        let v = engine.score_all(&ids, 4, None, Some("where is my order 4412"));
        assert!((v[0].factors.popularity - (1.0 - (-1.5f32).exp())).abs() < 1e-6);
        assert!(v[0]
            .explanation
            .iter()
            .any(|s| s == "used by 3 later steps: popularity 0.78"));
        assert_eq!(v[1].factors.popularity, 0.0);
        // Repetitive output is not dense.
        assert!(v[2].factors.density < 0.2, "{:?}", v[2]);
        assert!(v[0].factors.density > 0.5, "{:?}", v[0]);
        // A slow tool result costs more to regenerate than a greeting.
        assert!(v[0].factors.generation_cost > 0.4);
        assert!(v[1].factors.generation_cost < 0.15);
        assert!(v[0].explanation.iter().any(|s| s.contains("took 4.0 s")));
        // Relevance: normalized by the best candidate.
        let best = v.iter().map(|x| x.factors.relevance).fold(0.0, f32::max);
        assert_eq!(best, 1.0);
        assert_eq!(v[1].factors.relevance, 0.0);
        assert_eq!(v[2].factors.relevance, 0.0);
        assert!(v[0].factors.relevance > 0.0);
        assert!(engine.relevance("zebra", &ids).iter().all(|&r| r == 0.0));
        assert!(engine.relevance("order", &[]).is_empty());
        // Value per token.
        assert_eq!(v[1].tokens, 2); // "thanks": 6 chars, estimated
        assert!((v[1].value_per_token - v[1].value / 2.0).abs() < 1e-7);
    }

    #[test]
    fn presets_parse_and_config_round_trips() {
        for name in ValueConfig::PRESETS {
            let config = ValueConfig::preset(name).expect("listed presets exist");
            let json = serde_json::to_string(&config).expect("serializes");
            let back: ValueConfig = serde_json::from_str(&json).expect("parses");
            assert_eq!(back, config, "{name}");
        }
        assert_eq!(ValueConfig::preset("default"), Some(ValueConfig::default()));
        assert_eq!(ValueConfig::preset("nope"), None);
        let partial: ValueConfig = serde_json::from_str(
            r#"{"weights": {"relevance": 3}, "category_weights": {"tool_result": 0.9},
                "recency_half_life_secs": 60}"#,
        )
        .expect("a partial config parses");
        assert_eq!(partial.weights.relevance, 3.0);
        assert_eq!(partial.weights.recency, Weights::default().recency);
        assert_eq!(partial.category_weight(Category::ToolResult), 0.9);
        assert_eq!(partial.category_weight(Category::System), 1.0);
        assert_eq!(partial.recency_half_life_secs, Some(60.0));
        assert_eq!(partial.recency_half_life_calls, 20.0);
        assert!(serde_json::from_str::<ValueConfig>(r#"{"wieghts": {}}"#).is_err());
        let label: Label = serde_json::from_str("\"useless\"").expect("label");
        assert_eq!(label, Label::Useless);
    }

    #[test]
    fn score_trace_scores_every_chunk() {
        use crate::builder::{Message, TraceBuilder};
        let mut b = TraceBuilder::new("t", "test");
        b.push_message(Message::text("system", "You help with orders."), None);
        b.push_message(Message::text("user", "Where is order 4412?"), None);
        b.push_message(Message::text("assistant", "Let me check order 4412."), None);
        b.push_message(Message::text("user", "Also, hello."), None);
        b.push_message(Message::text("assistant", "Hello!"), None);
        b.reconstruct_calls();
        let (trace, _) = b.finish();
        let uses = [0, 2, 1];
        let v = score_trace(&trace, &ValueConfig::default(), &uses, 2, None);
        assert_eq!(v.len(), trace.chunks.len());
        assert!(v.iter().zip(&trace.chunks).all(|(v, c)| v.chunk == c.id));
        assert_eq!(v[1].factors.relevance, 1.0, "the task matches itself");
        assert!(v[1].factors.popularity > v[2].factors.popularity);
        assert_eq!(
            v[4].factors.recency, 1.0,
            "the last reply is not yet in a call"
        );
        assert!(v[0].factors.recency < 1.0);
        assert_eq!(
            v,
            score_trace(&trace, &ValueConfig::default(), &uses, 2, None)
        );
    }

    #[test]
    fn deterministic() {
        let run = || {
            let mut rng = Lcg(42);
            let mut engine = ValueEngine::new(ValueConfig::preset("coding-agent").expect("p"));
            let mut ids = Vec::new();
            for i in 0..200 {
                let c = chunk(
                    i,
                    Category::ALL[(i % 9) as usize],
                    &random_text(&mut rng, 30),
                );
                engine.add(&c, i / 3, Some(f64::from(i) * 10.0));
                if rng.below(2) == 0 {
                    engine.record_use(ChunkId(rng.below(u64::from(i) + 1) as u32));
                }
                ids.push(c.id);
            }
            engine.score_all(&ids, 70, Some(2500.0), Some("cargo test failed"))
        };
        assert_eq!(run(), run());
    }

    fn synthetic_samples(n: usize, seed: u64) -> Vec<(Factors, Label)> {
        let mut rng = Lcg(seed);
        (0..n)
            .map(|_| {
                let f = Factors {
                    recency: rng.unit(),
                    popularity: rng.unit(),
                    density: rng.unit(),
                    redundancy: rng.unit(),
                    category: rng.unit(),
                    relevance: rng.unit(),
                    generation_cost: rng.unit(),
                    pinned: 0.0,
                };
                let label = if f.relevance > 0.6 {
                    Label::Important
                } else {
                    Label::Useless
                };
                (f, label)
            })
            .collect()
    }

    #[test]
    fn fit_recovers_the_factor_behind_the_labels() {
        let samples = synthetic_samples(400, 3);
        let report = fit_weights(&samples, &ValueConfig::default());
        let w = report.weights.to_array();
        for (i, name) in Factors::NAMES.iter().enumerate().take(FIT_FEATURES) {
            if *name != "relevance" {
                assert!(w[5] > 3.0 * w[i], "{name}: {:?}", report.weights);
            }
            assert!(w[i] >= 0.0);
        }
        assert_eq!(report.weights.pinned, Weights::default().pinned);
        assert!(report.precision > 0.9, "{report:?}");
        assert!(report.recall > 0.9, "{report:?}");
        assert!(report.accuracy > 0.9, "{report:?}");
        assert!(report.auc > 0.95, "{report:?}");
        assert_eq!(report.samples, 400);
        // Deterministic.
        assert_eq!(report, fit_weights(&samples, &ValueConfig::default()));
        // The fitted weights agree better than the defaults.
        let before = agreement(&samples, &ValueConfig::default());
        assert!(before.auc < report.auc);
        let fitted = ValueConfig {
            weights: report.weights.clone(),
            ..ValueConfig::default()
        };
        assert!(agreement(&samples, &fitted).accuracy > 0.9);
    }

    #[test]
    fn agreement_of_exact_weights_and_degenerate_inputs() {
        let samples = synthetic_samples(200, 9);
        let only_relevance = ValueConfig {
            weights: Weights::from_array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]),
            ..ValueConfig::default()
        };
        let r = agreement(&samples, &only_relevance);
        assert_eq!(
            (r.precision, r.recall, r.accuracy, r.auc),
            (1.0, 1.0, 1.0, 1.0)
        );
        let empty = fit_weights(&[], &ValueConfig::default());
        assert_eq!(empty.samples, 0);
        assert_eq!(empty.weights, Weights::default());
        let one_class: Vec<_> = samples
            .iter()
            .map(|(f, _)| (*f, Label::Important))
            .collect();
        let r = fit_weights(&one_class, &ValueConfig::default());
        assert_eq!(r.weights, Weights::default());
        assert_eq!(r.auc, 0.5);
    }
}
