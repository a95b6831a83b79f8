//! The incremental [`Detector`]: postings of the tokens, quote shingles and rare terms of the
//! chunks observed so far, and the access graph found.

use super::analysis::Analysis;
use super::graph::{AccessGraph, Evidence, EvidenceGroup, Reference};
use super::{MAX_DF, MAX_REFERENCED, MIN_IDENT_LEN, QUOTE_MAX_DF, RARE_MAX_DF};
use crate::memo::PerChunk;
use crate::model::{Category, Chunk, ChunkId};
use foldhash::{HashMap, HashSet};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Postings of a key: the observed chunks that contain it, in observation order, until it becomes
/// too common (then `common` and the list is dropped).
#[derive(Debug, Clone, Default)]
pub(super) struct Postings {
    pub(super) chunks: Vec<ChunkId>,
    pub(super) common: bool,
}

impl Postings {
    fn push(&mut self, id: ChunkId, cap: usize) {
        if self.common {
            return;
        }
        if self.chunks.len() >= cap {
            self.common = true;
            self.chunks = Vec::new();
        } else {
            self.chunks.push(id);
        }
    }
}

/// The preamble (system prompts, tool definitions, unrecorded context): policy text every policy
/// keeps, never a target.
pub(super) fn is_policy(chunk: &Chunk) -> bool {
    chunk.is_preamble()
}

/// What the detector remembers of an observed chunk.
#[derive(Debug, Clone, Copy)]
struct Observed {
    /// Observation order (recency).
    seq: u32,
    /// Whether quotes and rare terms may target it (a chunk the agent received, not produced).
    received: bool,
}

/// The incremental detector the live engine uses: feed it chunks as they enter the context and
/// each call's outputs as they come. Fed a trace call by call as [`detect`](super::detect) does,
/// it gives the same results. Work per output is proportional to the output's size plus the
/// matched postings.
#[derive(Debug, Clone, Default)]
pub struct Detector {
    observed: HashMap<ChunkId, Observed>,
    /// Non-system chunks observed.
    pub(super) docs: u32,
    pub(super) tokens: HashMap<String, Postings>,
    pub(super) tool_ids: HashMap<String, Vec<ChunkId>>,
    pub(super) shingles: HashMap<u64, Postings>,
    pub(super) terms: HashMap<String, Postings>,
    pub(super) system_tokens: HashSet<String>,
    pub(super) system_shingles: HashSet<u64>,
    pub(super) system_terms: HashSet<String>,
    graph: AccessGraph,
    /// Readings of chunk texts kept across replays of one trace, where a host gives them.
    memo: Option<Arc<PerChunk<Analysis>>>,
}

impl Detector {
    /// An empty detector.
    pub fn new() -> Detector {
        Detector::default()
    }

    /// True when a distinctive token (its `key`, as [`super::distinctive_tokens`] gives it) is
    /// policy vocabulary, never evidence: it occurs in an observed system prompt or tool
    /// definitions, or is a phrase of them written as an identifier.
    pub fn ignores(&self, key: &str) -> bool {
        self.system_tokens.contains(key)
    }

    /// True when the chunk was observed (as an input, or as an output after its call).
    pub fn contains(&self, chunk: ChunkId) -> bool {
        self.observed.contains_key(&chunk)
    }

    /// An input chunk becomes a candidate target (call it once per chunk, in context order; calling
    /// it again for the same chunk id does nothing). A system prompt or tool definitions chunk is
    /// not a target: its tokens, quotes and terms are ignored as evidence from then on.
    pub fn observe(&mut self, chunk: &Chunk) {
        if !self.observed.contains_key(&chunk.id) {
            let a = self.read(chunk);
            self.add(chunk, a);
        }
    }

    /// Keeps the readings of chunk texts in `memo`, shared with other replays of the same trace.
    pub(crate) fn set_memo(&mut self, memo: Arc<PerChunk<Analysis>>) {
        self.memo = Some(memo);
    }

    /// The chunk's text read: from the memo where it holds this chunk, else afresh.
    fn read(&self, chunk: &Chunk) -> Analysis {
        self.memo
            .as_ref()
            .and_then(|m| m.get(chunk, Analysis::of).cloned())
            .unwrap_or_else(|| Analysis::of(&chunk.content))
    }

    fn add(&mut self, chunk: &Chunk, a: Analysis) {
        if self.observed.contains_key(&chunk.id) {
            return;
        }
        let seq = self.observed.len() as u32;
        let received = !matches!(
            chunk.category,
            Category::Assistant | Category::Reasoning | Category::ToolCall
        );
        self.observed.insert(chunk.id, Observed { seq, received });
        let terms = a.terms();
        if is_policy(chunk) {
            self.system_tokens
                .extend(a.tokens.into_iter().map(|t| t.key));
            // Policy vocabulary: "round trip" in the prompt makes `round_trip` / `roundTrip` an
            // enum value, not a distinctive identifier.
            for f in &a.fragments {
                let lower: Vec<String> = f
                    .words
                    .iter()
                    .map(|&(s, e)| f.text[s..e].to_lowercase())
                    .collect();
                for n in 2..=3 {
                    for w in lower.windows(n) {
                        self.system_tokens.insert(w.join("_"));
                        self.system_tokens.insert(w.concat());
                    }
                }
            }
            self.system_shingles
                .extend(a.fragments.iter().flat_map(|f| f.shingles()).map(|s| s.1));
            self.system_terms.extend(terms.into_iter().map(|t| t.0));
            return;
        }
        self.docs += 1;
        for t in a.tokens {
            self.tokens.entry(t.key).or_default().push(chunk.id, MAX_DF);
        }
        if let Some(id) = chunk.meta.tool_call_id.as_deref() {
            if id.chars().count() >= MIN_IDENT_LEN {
                let list = self.tool_ids.entry(id.to_lowercase()).or_default();
                if list.len() < MAX_DF {
                    list.push(chunk.id);
                }
            }
        }
        let mut hashes: Vec<u64> = a
            .fragments
            .iter()
            .flat_map(|f| f.shingles())
            .map(|s| s.1)
            .collect();
        hashes.sort_unstable();
        hashes.dedup();
        for h in hashes {
            self.shingles
                .entry(h)
                .or_default()
                .push(chunk.id, QUOTE_MAX_DF);
        }
        for (term, _) in terms {
            self.terms
                .entry(term)
                .or_default()
                .push(chunk.id, RARE_MAX_DF);
        }
    }

    /// Links this call's output chunks to the observed chunks and returns the new references,
    /// sorted by `(by, used)`; then the outputs themselves become observed. Calls are expected in
    /// increasing order (a call fed out of order or twice is merged into place).
    pub fn outputs(&mut self, call: u32, outputs: &[&Chunk]) -> Vec<Reference> {
        let own: HashSet<ChunkId> = outputs.iter().map(|c| c.id).collect();
        let mut groups: BTreeMap<(ChunkId, Evidence), Vec<ChunkId>> = BTreeMap::new();
        let mut credited: BTreeMap<(ChunkId, ChunkId), Vec<Evidence>> = BTreeMap::new();
        let mut analyses = Vec::with_capacity(outputs.len());
        for out in outputs {
            let a = self.read(out);
            for (evidence, ranked) in self.link(&a, &own) {
                for &used in ranked.iter().take(MAX_REFERENCED) {
                    credited
                        .entry((out.id, used))
                        .or_default()
                        .push(evidence.clone());
                }
                let chunks = groups.entry((out.id, evidence)).or_default();
                chunks.extend(ranked);
                chunks.sort_unstable();
                chunks.dedup();
                chunks.truncate(MAX_DF);
            }
            analyses.push(a);
        }
        let references: Vec<Reference> = credited
            .into_iter()
            .map(|((by, used), mut evidence)| {
                evidence.sort();
                evidence.dedup();
                Reference {
                    call,
                    by,
                    used,
                    evidence,
                }
            })
            .collect();
        let groups: Vec<EvidenceGroup> = groups
            .into_iter()
            .map(|((by, evidence), chunks)| EvidenceGroup {
                call,
                by,
                evidence,
                chunks,
            })
            .collect();
        self.graph.add(call, references.clone(), groups);
        for (out, a) in outputs.iter().zip(analyses) {
            self.add(out, a);
        }
        references
    }

    /// Everything found so far.
    pub fn graph(&self) -> &AccessGraph {
        &self.graph
    }

    /// Everything found, by value.
    pub fn into_graph(self) -> AccessGraph {
        self.graph
    }

    pub(super) fn target(
        &self,
        id: ChunkId,
        own: &HashSet<ChunkId>,
        received_only: bool,
    ) -> Option<u32> {
        if own.contains(&id) {
            return None;
        }
        let o = self.observed.get(&id)?;
        (!received_only || o.received).then_some(o.seq)
    }
}
