//! The incremental [`ValueEngine`]: per-chunk facts computed once on add (terms, MinHash,
//! density, redundancy against earlier chunks by LSH, the BM25 document), use counts, labels and
//! pins; and [`score_trace`], which scores a whole trace with it.

use super::factors::{clamp01, decay, ChunkValue, Factors, Label, SanitizedWeights};
use super::minhash::{analyze, hash_rows, Analysis};
use super::score::{popularity_of_uses, Entry, FixedFactors, Tables};
use super::{ValueConfig, LSH_BANDS, LSH_ROWS, MINHASH_HASHES};
use crate::memo::PerChunk;
use crate::model::{Category, Chunk, ChunkId, Trace};
use crate::retrieval::{Bm25Index, QueryCache};
use foldhash::{HashMap, HashMapExt};
use std::sync::Arc;

/// At most this many chunks are kept per LSH bucket (the earliest): bounds the comparisons per add
/// when many similar chunks arrive. Exact repeats are never added to buckets (the first copy stands
/// for them all).
pub(super) const MAX_BUCKET: usize = 64;

/// The longest recency decay table kept (ages in calls; 8 MB).
const MAX_DECAY_TABLE: u32 = 1 << 20;

/// Incremental scorer for the live engine and the simulator: chunks are added in order; state per
/// chunk is computed once on add (terms, MinHash, density, redundancy vs earlier chunks, BM25
/// document). Adding is O(chunk size + a bounded number of signature comparisons, found by LSH);
/// scoring is O(1) per chunk.
#[derive(Debug, Clone)]
pub struct ValueEngine {
    pub(super) config: ValueConfig,
    /// `config.weights` sanitized once (set with the config).
    pub(super) weights: SanitizedWeights,
    pub(super) entries: Vec<Entry>,
    /// Per slot, the factors that depend only on the entry and the config: computed on add and
    /// again when the config changes, not for every chunk at every turn.
    pub(super) fixed: Vec<FixedFactors>,
    /// Chunk -> slot in `entries`.
    slots: HashMap<ChunkId, u32>,
    /// MinHash signature per slot (`None` for a chunk without words).
    signatures: Vec<Option<[u32; MINHASH_HASHES]>>,
    /// Per band: band hash -> slots (earliest first, at most `MAX_BUCKET`).
    pub(super) bands: Vec<HashMap<u64, Vec<u32>>>,
    /// Whole-signature hash -> the first slot with that signature.
    exact: HashMap<u64, u32>,
    /// One document per slot.
    bm25: Bm25Index,
    /// The ranking's query and its matches ([`ValueEngine::ranked_values`]).
    ranking_query: QueryCache,
    /// `decay(age, half-life in calls)` for ages 0, 1, 2... calls, as far as a ranking needed
    /// ([`ValueEngine::ranked_values`]); emptied when the config changes.
    decay_by_age: Vec<f64>,
    /// The popularity factor for 0, 1, 2... uses, as far as a ranking needed (an `exp` per chunk
    /// per turn otherwise); emptied when the config changes.
    popularity_by_uses: Vec<f32>,
    /// Readings of chunk texts kept across replays of one trace, where a host gives them.
    memo: Option<Arc<PerChunk<ChunkReading>>>,
}

/// What the engine reads of a chunk's text: its analysis and its estimated tokens, kept across
/// replays by a memo ([`crate::simulate::TraceMemo`]).
pub(crate) type ChunkReading = (Analysis, u32);

impl Default for ValueEngine {
    fn default() -> Self {
        ValueEngine::new(ValueConfig::default())
    }
}

impl ValueEngine {
    /// An empty engine.
    pub fn new(config: ValueConfig) -> ValueEngine {
        ValueEngine {
            weights: SanitizedWeights::of(&config.weights),
            config,
            entries: Vec::new(),
            fixed: Vec::new(),
            slots: HashMap::new(),
            signatures: Vec::new(),
            bands: vec![HashMap::new(); LSH_BANDS],
            exact: HashMap::new(),
            bm25: Bm25Index::new(),
            ranking_query: QueryCache::default(),
            decay_by_age: Vec::new(),
            popularity_by_uses: Vec::new(),
            memo: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ValueConfig {
        &self.config
    }

    /// Replaces the configuration; takes effect on the next score (each chunk's fixed factors are
    /// recomputed, nothing else).
    pub fn set_config(&mut self, config: ValueConfig) {
        self.weights = SanitizedWeights::of(&config.weights);
        self.config = config;
        self.fixed = self.entries.iter().map(|e| self.fixed_factors(e)).collect();
        self.decay_by_age.clear();
        self.popularity_by_uses.clear();
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

    pub(super) fn slot(&self, chunk: ChunkId) -> Option<usize> {
        self.slots.get(&chunk).map(|&s| s as usize)
    }

    /// Keeps the readings of chunk texts in `memo`, shared with other replays of the same trace.
    pub(crate) fn set_memo(&mut self, memo: Arc<PerChunk<ChunkReading>>) {
        self.memo = Some(memo);
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

        let read = |text: &str| (analyze(text), estimate_tokens(text));
        let (analysis, estimate) = self
            .memo
            .as_ref()
            .and_then(|m| m.get(chunk, read).cloned())
            .unwrap_or_else(|| read(&chunk.content));
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
        self.bm25.add_terms(analysis.terms);
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
            host_value: None,
            pinned: false,
        });
        let fixed = self.fixed_factors(&self.entries[slot as usize]);
        self.fixed.push(fixed);
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

    /// Copies what was learned about a chunk since it was added (its uses, label, host value and
    /// pin) from another engine that holds it: how a forgetting policy engine rebuilds its value
    /// engine from the chunks it still holds. Ignored when either engine lacks the chunk.
    pub fn carry(&mut self, from: &ValueEngine, chunk: ChunkId) {
        if let (Some(to), Some(old)) = (self.slot(chunk), from.slot(chunk)) {
            let old = &from.entries[old];
            let entry = &mut self.entries[to];
            entry.uses = old.uses;
            entry.label = old.label;
            entry.host_value = old.host_value;
            entry.pinned = old.pinned;
        }
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

    /// Sets (or clears) the host's value for a chunk, clamped to `[0, 1]`: a pluggable scorer
    /// (a JS callback in npm). It replaces the weighted sum of the factors; a `useless` label
    /// still forces 0, and protection (the engine's) still applies. Ignored for a chunk not
    /// added, or a value that is not a number.
    pub fn set_host_value(&mut self, chunk: ChunkId, value: Option<f32>) {
        if let Some(s) = self.slot(chunk) {
            self.entries[s].host_value = value.filter(|v| v.is_finite()).map(|v| v.clamp(0.0, 1.0));
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
        let slots: Vec<Option<usize>> = candidates.iter().map(|&c| self.slot(c)).collect();
        self.relevance_of_slots(query, &slots)
    }

    /// [`ValueEngine::relevance`] for candidates' slots, already looked up.
    fn relevance_of_slots(&self, query: &str, slots: &[Option<usize>]) -> Vec<f32> {
        // Score only the candidates: the cost follows the context, not the whole history.
        let docs: Vec<u32> = slots.iter().flatten().map(|&s| s as u32).collect();
        relative(self.bm25.scores_for(query, &docs), slots)
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
        self.scored(candidates, now_call, now_secs, query, |v| {
            v.map_or(0.0, |v| v.value)
        })
    }

    /// The factors of each candidate as of call `now_call` (`None` for a chunk not added),
    /// computed as [`ValueEngine::values`] computes the value: what fitting weights to labels
    /// learns from ([`super::fit_weights`]).
    pub fn factors(
        &self,
        candidates: &[ChunkId],
        now_call: u32,
        now_secs: Option<f64>,
        query: Option<&str>,
    ) -> Vec<Option<Factors>> {
        self.scored(candidates, now_call, now_secs, query, |v| {
            v.map(|v| v.factors)
        })
    }

    /// [`ValueEngine::values`] as a policy ranking its context every call needs it: the same
    /// numbers, with the query's BM25 matches kept while the query stays the same
    /// ([`Bm25Index::scores_for_cached`]) and the recency decay looked up by age in a table
    /// instead of a power per chunk.
    pub fn ranked_values(
        &mut self,
        candidates: &[ChunkId],
        now_call: u32,
        now_secs: Option<f64>,
        query: Option<&str>,
    ) -> Vec<f32> {
        let slots: Vec<Option<usize>> = candidates.iter().map(|&c| self.slot(c)).collect();
        let relevance = match query {
            Some(q) => {
                let mut docs: Vec<u32> = Vec::with_capacity(slots.len());
                docs.extend(slots.iter().flatten().map(|&s| s as u32));
                let scores = self
                    .bm25
                    .scores_for_cached(&mut self.ranking_query, q, &docs);
                relative(scores, &slots)
            }
            None => vec![0.0; candidates.len()],
        };
        let (mut oldest, mut most_uses) = (now_call, 0);
        for &s in slots.iter().flatten() {
            oldest = oldest.min(self.entries[s].added_at_call);
            most_uses = most_uses.max(self.entries[s].uses);
        }
        let max_age = now_call.saturating_sub(oldest);
        // Past a million calls (or uses) each chunk's factors are computed: a table is not
        // worth its memory.
        let table = max_age <= MAX_DECAY_TABLE && most_uses <= MAX_DECAY_TABLE;
        if table {
            let half_life = f64::from(self.config.recency_half_life_calls);
            while self.decay_by_age.len() <= max_age as usize {
                let age = self.decay_by_age.len() as f64;
                self.decay_by_age.push(decay(age, half_life));
            }
            while self.popularity_by_uses.len() <= most_uses as usize {
                let uses = self.popularity_by_uses.len() as u32;
                self.popularity_by_uses
                    .push(popularity_of_uses(uses, &self.config));
            }
        }
        if !table {
            return self.scored_slots(&slots, relevance, now_call, now_secs, None, |v| {
                v.map_or(0.0, |v| v.value)
            });
        }
        let tables = Tables {
            decay_by_age: &self.decay_by_age,
            popularity_by_uses: &self.popularity_by_uses,
        };
        slots
            .iter()
            .zip(relevance)
            .map(|(slot, r)| {
                slot.map_or(0.0, |s| {
                    self.value_of_slot(s, now_call, now_secs, r, tables)
                })
            })
            .collect()
    }

    /// Each candidate scored without explanations (`None`: not added), mapped by `each`.
    fn scored<T>(
        &self,
        candidates: &[ChunkId],
        now_call: u32,
        now_secs: Option<f64>,
        query: Option<&str>,
        each: impl Fn(Option<ChunkValue>) -> T,
    ) -> Vec<T> {
        // One slot lookup per candidate, shared by relevance and scoring: this runs for every
        // live chunk every turn.
        let slots: Vec<Option<usize>> = candidates.iter().map(|&c| self.slot(c)).collect();
        let relevance = match query {
            Some(q) => self.relevance_of_slots(q, &slots),
            None => vec![0.0; candidates.len()],
        };
        self.scored_slots(&slots, relevance, now_call, now_secs, None, each)
    }

    /// Candidates' slots scored with their relevance, mapped by `each` (see `score_slot` for
    /// `tables`).
    fn scored_slots<T>(
        &self,
        slots: &[Option<usize>],
        relevance: Vec<f32>,
        now_call: u32,
        now_secs: Option<f64>,
        tables: Option<Tables<'_>>,
        each: impl Fn(Option<ChunkValue>) -> T,
    ) -> Vec<T> {
        slots
            .iter()
            .zip(relevance)
            .map(|(slot, r)| {
                each(slot.map(|s| self.score_slot(s, now_call, now_secs, r, false, tables)))
            })
            .collect()
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

fn estimate_tokens(content: &str) -> u32 {
    u32::try_from(content.chars().count().div_ceil(4)).unwrap_or(u32::MAX)
}

/// BM25 scores of the added candidates (in order) relative to the best, in `[0, 1]`, 0 for a
/// candidate not added; all 0 when none scores.
fn relative(scores: Vec<f32>, slots: &[Option<usize>]) -> Vec<f32> {
    let mut next = scores.into_iter();
    let raw: Vec<f32> = slots
        .iter()
        .map(|s| s.and_then(|_| next.next()).unwrap_or(0.0))
        .collect();
    let max = raw.iter().copied().fold(0.0f32, f32::max);
    if max <= 0.0 || !max.is_finite() {
        return vec![0.0; slots.len()];
    }
    raw.iter().map(|&s| clamp01(f64::from(s / max))).collect()
}
