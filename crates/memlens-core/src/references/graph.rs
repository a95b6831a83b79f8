//! The access graph: who used what, with the evidence.

use crate::model::ChunkId;
use serde::{Deserialize, Serialize};

/// What kind of evidence linked an output to an earlier chunk. Ordered from strongest to weakest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// The output contains the tool call id of an earlier tool call or result.
    ToolCallId,
    /// A distinctive token: a code with letters and digits, an email, URL, path or code identifier.
    Identifier,
    /// A number with 3+ significant digits, a date or a clock time.
    Number,
    /// A span of 8+ consecutive words copied from a received chunk.
    Quote,
    /// 3+ rare content terms shared with a received chunk (the weakest signal).
    RareTerm,
}

/// One piece of evidence: its kind and the matched text as the output spells it (for a quote, its
/// words up to about 160 bytes; for rare terms, the shared words, lowercase, separated by spaces).
/// The spelling may differ from the used chunk's (`1,234.50` for `1234.5`): test a text for it with
/// [`contains_evidence`](super::contains_evidence).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Evidence {
    /// What kind of match.
    pub kind: EvidenceKind,
    /// The matched text.
    pub text: String,
}

/// An output chunk of a call used an earlier chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    /// Index of the call whose output did the using.
    pub call: u32,
    /// The output chunk (assistant text, reasoning or tool call).
    pub by: ChunkId,
    /// The earlier chunk it used.
    pub used: ChunkId,
    /// Every evidence item linking `by` to `used`, sorted by kind then text.
    pub evidence: Vec<Evidence>,
}

/// One evidence item of one output chunk with every observed chunk that contains it: the
/// alternatives the agent could have taken it from. A simulator counts a miss when none of
/// `chunks` is in the call's context (see [`AccessGraph::missed`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceGroup {
    /// Index of the call.
    pub call: u32,
    /// The output chunk.
    pub by: ChunkId,
    /// The evidence item.
    pub evidence: Evidence,
    /// The chunks that contain it, ascending (at most 32).
    pub chunks: Vec<ChunkId>,
}

/// Who used what: references sorted by `(call, by, used)`, evidence groups sorted by
/// `(call, by, evidence)`, and indexes by call and by chunk.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccessGraph {
    references: Vec<Reference>,
    groups: Vec<EvidenceGroup>,
    /// Per call index: the chunks its outputs used, sorted and deduplicated.
    used_at: Vec<Vec<ChunkId>>,
    /// Per chunk index: the calls whose outputs used it, sorted and deduplicated.
    uses_of: Vec<Vec<u32>>,
}

impl AccessGraph {
    /// Every reference, sorted by `(call, by, used)`.
    pub fn references(&self) -> &[Reference] {
        &self.references
    }

    /// Every evidence group, sorted by `(call, by, evidence)`.
    pub fn groups(&self) -> &[EvidenceGroup] {
        &self.groups
    }

    /// The evidence groups of one call's outputs.
    pub fn groups_at(&self, call: u32) -> &[EvidenceGroup] {
        let start = self.groups.partition_point(|g| g.call < call);
        let end = self.groups.partition_point(|g| g.call <= call);
        &self.groups[start..end]
    }

    /// The chunks that call's outputs used (through references), sorted and deduplicated.
    pub fn used_at(&self, call: u32) -> &[ChunkId] {
        self.used_at.get(call as usize).map_or(&[], Vec::as_slice)
    }

    /// The calls whose outputs used the chunk (through references), sorted and deduplicated.
    pub fn uses_of(&self, chunk: ChunkId) -> &[u32] {
        self.uses_of.get(chunk.index()).map_or(&[], Vec::as_slice)
    }

    /// How many distinct calls used the chunk: `uses_of(chunk).len()`.
    pub fn use_count(&self, chunk: ChunkId) -> u32 {
        self.uses_of(chunk).len() as u32
    }

    /// The first call after `call` whose outputs use the chunk, if any (the hindsight oracle).
    pub fn next_use_after(&self, chunk: ChunkId, call: u32) -> Option<u32> {
        let uses = self.uses_of(chunk);
        uses.get(uses.partition_point(|&c| c <= call)).copied()
    }

    /// The evidence groups of `call` none of whose chunks is in context (`in_context` says which
    /// chunks the policy kept for that call): the misses. In group order.
    pub fn missed(&self, call: u32, in_context: impl Fn(ChunkId) -> bool) -> Vec<&EvidenceGroup> {
        self.groups_at(call)
            .iter()
            .filter(|g| !g.chunks.iter().any(|&c| in_context(c)))
            .collect()
    }

    /// Adds one batch (references sorted by `(by, used)`, groups by `(by, evidence)`, all of one
    /// call), keeping the orders and indexes.
    pub(super) fn add(
        &mut self,
        call: u32,
        references: Vec<Reference>,
        groups: Vec<EvidenceGroup>,
    ) {
        let key = |r: &Reference| (r.call, r.by, r.used);
        for r in &references {
            let at = self.used_at_mut(call);
            if let Err(i) = at.binary_search(&r.used) {
                at.insert(i, r.used);
            }
            let idx = r.used.index();
            if self.uses_of.len() <= idx {
                self.uses_of.resize_with(idx + 1, Vec::new);
            }
            if let Err(i) = self.uses_of[idx].binary_search(&call) {
                self.uses_of[idx].insert(i, call);
            }
        }
        let in_order = match (self.references.last(), references.first()) {
            (Some(last), Some(first)) => key(last) < key(first),
            _ => true,
        };
        self.references.extend(references);
        if !in_order {
            // Calls fed out of order or twice: restore the order and merge duplicates.
            self.references.sort_by_key(key);
            let mut merged: Vec<Reference> = Vec::with_capacity(self.references.len());
            for r in std::mem::take(&mut self.references) {
                match merged.last_mut() {
                    Some(m) if key(m) == key(&r) => {
                        m.evidence.extend(r.evidence);
                        m.evidence.sort();
                        m.evidence.dedup();
                    }
                    _ => merged.push(r),
                }
            }
            self.references = merged;
        }
        let gkey = |g: &EvidenceGroup| (g.call, g.by, g.evidence.clone());
        let in_order = match (self.groups.last(), groups.first()) {
            (Some(last), Some(first)) => gkey(last) <= gkey(first),
            _ => true,
        };
        self.groups.extend(groups);
        if !in_order {
            self.groups.sort_by_key(gkey);
            let mut merged: Vec<EvidenceGroup> = Vec::with_capacity(self.groups.len());
            for g in std::mem::take(&mut self.groups) {
                match merged.last_mut() {
                    Some(m) if (m.call, m.by, &m.evidence) == (g.call, g.by, &g.evidence) => {
                        m.chunks.extend(g.chunks);
                        m.chunks.sort_unstable();
                        m.chunks.dedup();
                    }
                    _ => merged.push(g),
                }
            }
            self.groups = merged;
        }
    }

    fn used_at_mut(&mut self, call: u32) -> &mut Vec<ChunkId> {
        let idx = call as usize;
        if self.used_at.len() <= idx {
            self.used_at.resize_with(idx + 1, Vec::new);
        }
        &mut self.used_at[idx]
    }
}
