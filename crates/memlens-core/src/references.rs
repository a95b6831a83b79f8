//! The reference detector: which later assistant outputs and tool-call arguments used which
//! earlier chunk, with the matched evidence.
//!
//! It is the ground truth for "misses" in the policy simulator (a later step used content a policy
//! had dropped) and feeds the popularity factor of the value engine, so it favours precision over
//! recall: it only links an output to an earlier chunk on literal, distinctive evidence.
//!
//! # Signals
//! Every output chunk of a call (assistant text, reasoning, tool calls) is matched against the
//! chunks observed before it. JSON content (tool arguments, tool results) is read as JSON: only
//! values count, and object keys only when they hold a digit (ids used as keys); plain keys such as
//! `"user_id"` are schema, not content.
//! - [`EvidenceKind::ToolCallId`]: the output literally contains an earlier chunk's tool call id.
//! - [`EvidenceKind::Identifier`]: a distinctive token, compared case-insensitively: a code with
//!   letters and digits (`HAT136`, `mia_li_3668`; not quantities like `20th`, `5pm`), an email, a
//!   URL, a path, a dotted name (`os.path`, `lib.rs`), a `snake_case` or `camelCase` name; at
//!   least 4 characters.
//! - [`EvidenceKind::Number`]: a number with at least 3 significant digits (`250`, `1,234.50` =
//!   `1234.5`), a date (`2024-05-20`) or a clock time (`06:00:00`, `6:00 AM` and `6am` all mean
//!   `6:00`); numbers below 100 and bare years in prose (`2024`) are ignored.
//! - [`EvidenceKind::Quote`]: a span of at least 8 consecutive words copied from a chunk the agent
//!   received (user, tool result, summary, ...; not its own earlier outputs, which it merely
//!   repeats). Every 6-word window of the span has 4 distinct content words and occurs in at most 2
//!   observed chunks: stock phrases ("your support means a lot to me") are not copies.
//! - [`EvidenceKind::RareTerm`]: at least 3 content terms (stemmed, 4+ letters) that each occur in
//!   at most 2 of the (at least 20) chunks observed so far, shared with one received chunk.
//!
//! Tokens, quotes and terms that occur in a system prompt or in tool definitions are ignored (they
//! are policy text; a phrase of the prompt written as an identifier counts too: "round trip" there
//! makes `round_trip` an enum value), and so are tokens that occur in more than 32 observed chunks
//! (not distinctive).
//!
//! # Targets, alternatives and misses
//! Targets are the earlier chunks other than system prompts and tool definitions (a
//! [`Category::Other`] chunk of kind `tool_definitions`): every policy keeps those, so they are left
//! out as targets (their content only serves to ignore policy text). An output never links to
//! itself or to another output of the same call.
//!
//! One evidence item (an identifier, a number, a quote...) of one output chunk is an
//! [`EvidenceGroup`]: it lists *every* observed chunk that contains the item (at most 32), all of
//! them alternatives: had any of them been in context, the agent could have taken the value from
//! it. [`AccessGraph::missed`] returns, for a call, the groups none of whose chunks are in a given
//! context: that is what the simulator counts as misses (two outputs of one call that use the same
//! value are two groups). A [`Reference`] credits only the 3 most
//! recent chunks of each group (for quotes and terms: the ones sharing the most, then the most
//! recent), so popularity goes to the copies the agent most plausibly read; it carries every
//! evidence item that linked that output to that chunk. References and groups of the same
//! `(call, by)` with the same evidence text belong together.
//!
//! # Example
//! ```
//! use memlens_core::builder::{Message, Part, TraceBuilder};
//! use memlens_core::references::{detect, EvidenceKind};
//!
//! let mut b = TraceBuilder::new("demo", "example");
//! b.push_message(Message::text("system", "You are an airline agent."), None);
//! b.push_message(Message::text("user", "Please cancel my reservation ZFA04Y."), None);
//! let mut call = Message::text("assistant", "");
//! call.parts = vec![Part::ToolCall {
//!     id: "call_1".into(),
//!     name: "cancel_reservation".into(),
//!     arguments: r#"{"reservation_id": "ZFA04Y"}"#.into(),
//! }];
//! b.push_message(call, None);
//! b.reconstruct_calls();
//! let (trace, _) = b.finish();
//!
//! let graph = detect(&trace);
//! let r = &graph.references()[0];
//! assert_eq!((r.call, r.by.0, r.used.0), (0, 2, 1)); // the tool call used the user turn
//! assert_eq!(r.evidence[0].kind, EvidenceKind::Identifier);
//! assert_eq!(r.evidence[0].text, "ZFA04Y");
//! assert_eq!(graph.used_at(0), &[r.used]);
//! // A policy that dropped the user turn misses the evidence; one that kept it does not.
//! assert_eq!(graph.missed(0, |_| false).len(), 1);
//! assert!(graph.missed(0, |c| c == r.used).is_empty());
//! ```

use crate::model::{Category, Chunk, ChunkId, Trace};
use crate::text::{is_stop_word, stem};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A token in more observed chunks than this is not distinctive; also the cap on the alternatives
/// of an [`EvidenceGroup`].
const MAX_DF: usize = 32;
/// References per evidence item: the most recent (or best-matching) chunks of its group.
const MAX_REFERENCED: usize = 3;
/// Minimum identifier length, in characters.
const MIN_IDENT_LEN: usize = 4;
/// Minimum significant digits of a number.
const MIN_NUMBER_DIGITS: usize = 3;
/// Words of a quote shingle.
const QUOTE_WORDS: usize = 6;
/// Distinct content words a shingle needs.
const QUOTE_MIN_CONTENT: usize = 4;
/// A shingle in more observed chunks than this is a stock phrase, not a copy.
const QUOTE_MAX_DF: usize = 2;
/// Words a quote must span (overlapping shingles merged): 6-word stock phrases are not copies.
const QUOTE_MIN_RUN: usize = 8;
/// Evidence text of a quote is cut after its last whole word within this many bytes.
const QUOTE_TEXT_MAX: usize = 160;
/// A rare term occurs in at most this many observed chunks...
const RARE_MAX_DF: usize = 2;
/// ...of at least this many.
const RARE_MIN_DOCS: u32 = 20;
/// Rare terms an output must share with a chunk.
const RARE_MIN_SHARED: usize = 3;
/// Minimum length of a rare term (after stemming).
const RARE_MIN_LEN: usize = 4;
/// Longest token considered (longer runs are blobs: base64, minified data).
const MAX_TOKEN_LEN: usize = 256;

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
/// [`contains_evidence`].
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
    fn add(&mut self, call: u32, references: Vec<Reference>, groups: Vec<EvidenceGroup>) {
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

/// Runs the detector over a whole trace: for each call in order, observes its input chunks not
/// yet observed, then links its outputs ([`Detector::outputs`]).
pub fn detect(trace: &Trace) -> AccessGraph {
    let mut d = Detector::new();
    // Inputs repeat the whole history call after call: skip the known ones cheaply.
    let mut seen = vec![false; trace.chunks.len()];
    for call in &trace.calls {
        for &id in &call.input {
            if let (Some(chunk), Some(false)) = (trace.chunks.get(id.index()), seen.get(id.index()))
            {
                seen[id.index()] = true;
                d.observe(chunk);
            }
        }
        for &id in &call.output {
            if let Some(s) = seen.get_mut(id.index()) {
                *s = true;
            }
        }
        let outputs: Vec<&Chunk> = call
            .output
            .iter()
            .filter_map(|&id| trace.chunks.get(id.index()))
            .collect();
        d.outputs(call.index, &outputs);
    }
    d.into_graph()
}

/// Whether `text` contains the evidence item, matched as the detector matches it: identifiers
/// case-insensitively, numbers by value (`1,234.50` = `1234.5`, `6:00 AM` = `06:00:00`), quotes by
/// their words, rare terms by stem; JSON text by its values. For a simulator that keeps a chunk in
/// altered form (compressed, truncated): the evidence survived when this holds. The evidence text
/// is the output's spelling, so a plain substring test would miss many of these.
pub fn contains_evidence(text: &str, evidence: &Evidence) -> bool {
    match evidence.kind {
        EvidenceKind::ToolCallId | EvidenceKind::Identifier | EvidenceKind::Number => {
            let Some(key) = Analysis::of(&evidence.text).tokens.into_iter().next() else {
                return false;
            };
            Analysis::of(text).keys.contains(&key.key)
        }
        EvidenceKind::Quote => {
            let want = Fragment::new(evidence.text.clone()).hashes;
            !want.is_empty()
                && Analysis::of(text)
                    .fragments
                    .iter()
                    .any(|f| f.hashes.windows(want.len()).any(|w| w == want.as_slice()))
        }
        EvidenceKind::RareTerm => {
            let have: HashSet<String> = Analysis::of(text)
                .terms()
                .into_iter()
                .map(|t| t.0)
                .collect();
            evidence
                .text
                .split(' ')
                .all(|w| have.contains(&stem(&w.to_lowercase())))
        }
    }
}

/// Postings of a key: the observed chunks that contain it, in observation order, until it becomes
/// too common (then `common` and the list is dropped).
#[derive(Debug, Clone, Default)]
struct Postings {
    chunks: Vec<ChunkId>,
    common: bool,
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

/// System prompts and tool definitions: policy text every policy keeps, never a target.
fn is_policy(chunk: &Chunk) -> bool {
    chunk.category == Category::System
        || (chunk.category == Category::Other
            && chunk.meta.kind.as_deref() == Some("tool_definitions"))
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
/// each call's outputs as they come. Fed a trace call by call as [`detect`] does, it gives the same
/// results. Work per output is proportional to the output's size plus the matched postings.
#[derive(Debug, Clone, Default)]
pub struct Detector {
    observed: HashMap<ChunkId, Observed>,
    /// Non-system chunks observed.
    docs: u32,
    tokens: HashMap<String, Postings>,
    tool_ids: HashMap<String, Vec<ChunkId>>,
    shingles: HashMap<u64, Postings>,
    terms: HashMap<String, Postings>,
    system_tokens: HashSet<String>,
    system_shingles: HashSet<u64>,
    system_terms: HashSet<String>,
    graph: AccessGraph,
}

impl Detector {
    /// An empty detector.
    pub fn new() -> Detector {
        Detector::default()
    }

    /// An input chunk becomes a candidate target (call it once per chunk, in context order; calling
    /// it again for the same chunk id does nothing). A system prompt or tool definitions chunk is
    /// not a target: its tokens, quotes and terms are ignored as evidence from then on.
    pub fn observe(&mut self, chunk: &Chunk) {
        if !self.observed.contains_key(&chunk.id) {
            self.add(chunk, Analysis::of(&chunk.content));
        }
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
            let a = Analysis::of(&out.content);
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

    fn target(&self, id: ChunkId, own: &HashSet<ChunkId>, received_only: bool) -> Option<u32> {
        if own.contains(&id) {
            return None;
        }
        let o = self.observed.get(&id)?;
        (!received_only || o.received).then_some(o.seq)
    }

    /// The evidence items of one analyzed output, each with its candidate chunks ranked best first.
    fn link(&self, a: &Analysis, own: &HashSet<ChunkId>) -> Vec<(Evidence, Vec<ChunkId>)> {
        let mut found = Vec::new();
        // Identifiers, numbers, tool call ids: every chunk that contains the token, most recent first.
        for t in &a.tokens {
            if self.system_tokens.contains(&t.key) {
                continue;
            }
            let mut kind = t.kind;
            let mut cands: Vec<ChunkId> = Vec::new();
            if let Some(ids) = self.tool_ids.get(&t.key) {
                kind = EvidenceKind::ToolCallId;
                cands.extend(ids);
            }
            match self.tokens.get(&t.key) {
                Some(p) if p.common && kind != EvidenceKind::ToolCallId => continue,
                Some(p) => cands.extend(&p.chunks),
                None => {}
            }
            let mut ranked: Vec<(u32, ChunkId)> = cands
                .into_iter()
                .filter_map(|c| self.target(c, own, false).map(|s| (s, c)))
                .collect();
            if ranked.is_empty() {
                continue;
            }
            ranked.sort_unstable_by(|x, y| y.cmp(x));
            ranked.dedup();
            ranked.truncate(MAX_DF);
            found.push((
                Evidence {
                    kind,
                    text: t.text.clone(),
                },
                ranked.into_iter().map(|(_, c)| c).collect(),
            ));
        }
        // Quotes: runs of overlapping 6-word shingles found in received chunks.
        for f in &a.fragments {
            let mut run: Option<(usize, usize, HashMap<ChunkId, u32>)> = None;
            let mut runs = Vec::new();
            for (pos, hash) in f.shingles() {
                if self.system_shingles.contains(&hash) {
                    continue;
                }
                let Some(p) = self.shingles.get(&hash).filter(|p| !p.common) else {
                    continue;
                };
                let cands: Vec<ChunkId> = p
                    .chunks
                    .iter()
                    .copied()
                    .filter(|&c| self.target(c, own, true).is_some())
                    .collect();
                if cands.is_empty() {
                    continue;
                }
                match &mut run {
                    Some((_, last, counts)) if pos < *last + QUOTE_WORDS => {
                        *last = pos;
                        for c in cands {
                            *counts.entry(c).or_insert(0) += 1;
                        }
                    }
                    _ => {
                        if let Some(done) = run.take() {
                            runs.push(done);
                        }
                        let counts = cands.into_iter().map(|c| (c, 1)).collect();
                        run = Some((pos, pos, counts));
                    }
                }
            }
            runs.extend(run);
            for (first, last, counts) in runs {
                if last + QUOTE_WORDS - first < QUOTE_MIN_RUN {
                    continue;
                }
                // The span, cut after its last whole word within QUOTE_TEXT_MAX bytes (never
                // shorter than one shingle).
                let start = f.words[first].0;
                let end = f.words[first..last + QUOTE_WORDS]
                    .iter()
                    .enumerate()
                    .filter(|&(i, &(_, e))| i < QUOTE_WORDS || e - start <= QUOTE_TEXT_MAX)
                    .map(|(_, &(_, e))| e)
                    .next_back()
                    .unwrap_or(start);
                let text = f.text[start..end].to_string();
                let mut ranked: Vec<(u32, u32, ChunkId)> = counts
                    .into_iter()
                    .filter_map(|(c, n)| self.target(c, own, true).map(|s| (n, s, c)))
                    .collect();
                ranked.sort_unstable_by(|x, y| y.cmp(x));
                ranked.truncate(MAX_DF);
                found.push((
                    Evidence {
                        kind: EvidenceKind::Quote,
                        text,
                    },
                    ranked.into_iter().map(|(_, _, c)| c).collect(),
                ));
            }
        }
        // Rare terms: a received chunk sharing 3+ terms that few observed chunks contain.
        if self.docs >= RARE_MIN_DOCS {
            let mut shared: HashMap<ChunkId, Vec<Term>> = HashMap::new();
            for term in a.terms() {
                if self.system_terms.contains(&term.0) {
                    continue;
                }
                let Some(p) = self.terms.get(&term.0).filter(|p| !p.common) else {
                    continue;
                };
                for &c in &p.chunks {
                    if self.target(c, own, true).is_some() {
                        shared.entry(c).or_default().push(term.clone());
                    }
                }
            }
            let mut ranked: Vec<(usize, u32, ChunkId, Vec<Term>)> = shared
                .into_iter()
                .filter(|(_, terms)| terms.len() >= RARE_MIN_SHARED)
                .filter_map(|(c, terms)| {
                    self.target(c, own, true)
                        .map(|s| (terms.len(), s, c, terms))
                })
                .collect();
            ranked.sort_unstable_by_key(|x| std::cmp::Reverse((x.0, x.1, x.2)));
            ranked.truncate(MAX_REFERENCED);
            let mut by_terms: BTreeMap<Vec<Term>, Vec<ChunkId>> = BTreeMap::new();
            for (_, _, c, terms) in ranked {
                by_terms.entry(terms).or_default().push(c);
            }
            for (terms, chunks) in by_terms {
                let words: Vec<&str> = terms.iter().map(|t| t.1.as_str()).collect();
                found.push((
                    Evidence {
                        kind: EvidenceKind::RareTerm,
                        text: words.join(" "),
                    },
                    chunks,
                ));
            }
        }
        found
    }
}

// ---------------------------------------------------------------------------------------------
// Analysis of a chunk's content.

/// A distinctive token: its match key (lowercase, normalized), kind and spelling in the text.
#[derive(Debug, Clone, PartialEq)]
struct Token {
    key: String,
    kind: EvidenceKind,
    text: String,
}

/// A candidate rare term: its stem and the word as written (lowercase).
type Term = (String, String);

/// A run of prose (a whole plain-text chunk, or one JSON string value) with its words.
#[derive(Debug, Clone, Default)]
struct Fragment {
    text: String,
    /// Byte ranges of the words in `text`.
    words: Vec<(usize, usize)>,
    /// Hash of each word, lowercase.
    hashes: Vec<u64>,
    /// Whether each word is a content word (not a stop word, has a letter).
    content: Vec<bool>,
    /// Candidate rare terms: `(stem, word)` of alphabetic content words of 4+ characters.
    terms: Vec<Term>,
}

/// FNV-1a, then a splitmix64 finish: a fixed, fast hash (the same on every platform and run).
fn hash_str(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix(h)
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Fragment {
    fn new(text: String) -> Fragment {
        let mut words = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices() {
            let is_word = c.is_alphanumeric() || c == '_';
            match (is_word, start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    words.push((s, i));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            words.push((s, text.len()));
        }
        let mut hashes = Vec::with_capacity(words.len());
        let mut content = Vec::with_capacity(words.len());
        let mut terms = Vec::new();
        for &(s, e) in &words {
            let lower = text[s..e].to_lowercase();
            hashes.push(hash_str(&lower));
            let is_content = !is_stop_word(&lower) && lower.chars().any(char::is_alphabetic);
            content.push(is_content);
            if is_content && lower.chars().all(char::is_alphabetic) {
                let t = stem(&lower);
                if t.chars().count() >= RARE_MIN_LEN {
                    terms.push((t, lower));
                }
            }
        }
        Fragment {
            text,
            words,
            hashes,
            content,
            terms,
        }
    }

    /// `(position, hash)` of every qualifying 6-word shingle: 4+ distinct content words.
    fn shingles(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        (0..(self.words.len() + 1).saturating_sub(QUOTE_WORDS)).filter_map(move |i| {
            let window = i..i + QUOTE_WORDS;
            let mut distinct = [0u64; QUOTE_WORDS];
            let mut n = 0;
            for j in window.clone() {
                if self.content[j] && !distinct[..n].contains(&self.hashes[j]) {
                    distinct[n] = self.hashes[j];
                    n += 1;
                }
            }
            (n >= QUOTE_MIN_CONTENT).then(|| {
                let h = self.hashes[window]
                    .iter()
                    .fold(0x9e37_79b9_7f4a_7c15u64, |h, &w| mix(h ^ w));
                (i, h)
            })
        })
    }
}

/// Tokens, prose fragments and terms of one chunk.
#[derive(Debug, Default)]
struct Analysis {
    tokens: Vec<Token>,
    keys: HashSet<String>,
    fragments: Vec<Fragment>,
}

impl Analysis {
    fn of(content: &str) -> Analysis {
        let mut a = Analysis::default();
        let trimmed = content.trim_start();
        if trimmed.starts_with('{') || trimmed.starts_with('[') {
            if let Ok(v) = serde_json::from_str::<Value>(content) {
                a.json(&v);
                return a;
            }
        }
        a.prose(content.to_string());
        a
    }

    fn json(&mut self, v: &Value) {
        match v {
            Value::String(s) => self.prose(s.clone()),
            Value::Number(n) => {
                let text = n.to_string();
                number(&text, None, &mut |t| self.push(t));
            }
            Value::Array(items) => items.iter().for_each(|x| self.json(x)),
            Value::Object(map) => {
                for (k, x) in map {
                    if k.chars().any(|c| c.is_ascii_digit()) {
                        scan(k, &mut |t| self.push(t));
                    }
                    self.json(x);
                }
            }
            Value::Bool(_) | Value::Null => {}
        }
    }

    fn prose(&mut self, text: String) {
        scan(&text, &mut |t| self.push(t));
        self.fragments.push(Fragment::new(text));
    }

    fn push(&mut self, t: Token) {
        if self.keys.insert(t.key.clone()) {
            self.tokens.push(t);
        }
    }

    /// Distinct candidate rare terms `(stem, word)`, sorted by stem (the first spelling kept).
    fn terms(&self) -> Vec<Term> {
        let mut out: Vec<Term> = self
            .fragments
            .iter()
            .flat_map(|f| f.terms.iter().cloned())
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }
}

fn is_span_char(c: char) -> bool {
    c.is_alphanumeric()
        || matches!(
            c,
            '_' | '-' | '.' | ',' | '@' | '/' | ':' | '+' | '~' | '%' | '?' | '=' | '&' | '#'
        )
}

/// The distinctive tokens of a chunk's content as the detector reads it (JSON by its values):
/// identifiers (codes, emails, URLs, paths, code names) and numbers, each once, in order, as
/// `(kind, key, text)`; `key` is the normalized form two texts are compared by.
pub fn distinctive_tokens(content: &str) -> Vec<(EvidenceKind, String, String)> {
    Analysis::of(content)
        .tokens
        .into_iter()
        .map(|t| (t.kind, t.key, t.text))
        .collect()
}

/// Whether a token (as [`distinctive_tokens`] returns it) is a file path.
pub fn is_path_token(text: &str) -> bool {
    !text.contains("://") && is_path(text)
}

/// Finds the identifiers and numbers of a text.
fn scan(text: &str, emit: &mut dyn FnMut(Token)) {
    let spans: Vec<&str> = text
        .split(|c| !is_span_char(c))
        .filter(|s| !s.is_empty())
        .collect();
    for (i, span) in spans.iter().enumerate() {
        let next = spans.get(i + 1).copied();
        let lower = span.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            let url = span.trim_end_matches(['.', ',', ':', ';', '?', '!', '/', '#', '&', '=']);
            if url.len() > "https://".len() + 3 && url.len() <= MAX_TOKEN_LEN {
                emit(ident(url));
            }
            continue;
        }
        for part in span.split(['?', '=', '&', '#', '%']) {
            word(part, next, emit);
        }
    }
}

fn ident(text: &str) -> Token {
    Token {
        key: text.to_lowercase(),
        kind: EvidenceKind::Identifier,
        text: text.to_string(),
    }
}

/// Strips punctuation that ends a sentence or starts a list item, keeping `./`, `../`, `~/`, `/`.
fn trim_word(w: &str) -> &str {
    let w = w.trim_end_matches(['.', ',', ':', ';', '-', '+', '/', '~']);
    let w = w.trim_start_matches([':', ',', ';', '-', '+']);
    if w.starts_with('.') && !w.starts_with("./") && !w.starts_with("../") {
        w.trim_start_matches('.')
    } else {
        w
    }
}

/// `"am"` / `"pm"` when the word is one.
fn meridiem(w: Option<&str>) -> Option<bool> {
    match w?.to_ascii_lowercase().trim_end_matches('.') {
        "am" | "a.m" => Some(false),
        "pm" | "p.m" => Some(true),
        _ => None,
    }
}

fn is_quantity(w: &str) -> bool {
    // 20th, 3rd, 5pm, 10am, 128gb, 1990s: digits then at most 3 letters.
    let letters = w.trim_start_matches(|c: char| c.is_ascii_digit());
    letters.len() < w.len()
        && (1..=3).contains(&letters.len())
        && letters.chars().all(|c| c.is_ascii_alphabetic())
}

fn is_snake(w: &str) -> bool {
    let inner = w.trim_matches('_');
    w.chars().any(char::is_alphabetic)
        && (inner.contains('_') || (w.starts_with("__") && w.ends_with("__") && !inner.is_empty()))
}

fn is_camel(w: &str) -> bool {
    let chars: Vec<char> = w.chars().collect();
    chars
        .windows(2)
        .any(|p| p[0].is_lowercase() && p[1].is_uppercase())
}

fn is_email(w: &str) -> bool {
    let Some((local, domain)) = w.split_once('@') else {
        return false;
    };
    let labels: Vec<&str> = domain.split('.').collect();
    !local.is_empty()
        && local
            .chars()
            .all(|c| c.is_alphanumeric() || "._%+-".contains(c))
        && labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '-'))
        && labels
            .last()
            .is_some_and(|t| t.len() >= 2 && t.chars().all(char::is_alphabetic))
}

/// `a.b` names: 2+ non-empty word parts, a letter, 2+ parts of 2+ characters (not `e.g`, `U.S.A`).
fn is_dotted(w: &str) -> bool {
    let parts: Vec<&str> = w.split('.').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'))
        && w.chars().any(char::is_alphabetic)
        && parts.iter().filter(|p| p.chars().count() >= 2).count() >= 2
}

fn is_path(w: &str) -> bool {
    let segments: Vec<&str> = w.split('/').filter(|s| !s.is_empty()).collect();
    let rooted =
        w.starts_with('/') || w.starts_with("./") || w.starts_with("../") || w.starts_with("~/");
    let last_has_ext = segments.last().is_some_and(|s| is_dotted(s));
    w.chars().any(char::is_alphabetic)
        && (segments.len() >= 3
            || (segments.len() >= 2 && (rooted || last_has_ext))
            || (rooted && last_has_ext))
}

/// Classifies one span (no whitespace) and emits its tokens.
fn word(raw: &str, next: Option<&str>, emit: &mut dyn FnMut(Token)) {
    let w = trim_word(raw);
    if w.is_empty() || w.len() > MAX_TOKEN_LEN {
        return;
    }
    let has_alpha = w.chars().any(char::is_alphabetic);
    let has_digit = w.chars().any(|c| c.is_ascii_digit());
    if has_alpha && w.contains(',') {
        // Commas only belong inside numbers (1,234.50).
        for p in w.split(',') {
            word(p, next, emit);
        }
        return;
    }
    if w.contains('@') {
        if is_email(w) {
            emit(ident(w));
            // The local part may be an id of its own (`sophia_silva_7557@example.com`).
            if let Some((local, _)) = w.split_once('@') {
                word(local, None, emit);
            }
        } else {
            for p in w.split('@') {
                word(p, None, emit);
            }
        }
        return;
    }
    if !has_alpha {
        let is_year = w.len() == 4 && w.parse::<u32>().is_ok_and(|y| (1900..=2100).contains(&y));
        if is_year {
            // A bare year in prose ("May 24, 2024") is context, not a copied value.
            return;
        }
        if has_digit
            && w.chars()
                .all(|c| c.is_ascii_digit() || "-.:,/+".contains(c))
        {
            number(w, next, emit);
        } else {
            for p in w.split(|c: char| !c.is_alphanumeric() && c != '_') {
                // A span of non-ASCII digits ("²", "٣") splits into itself: nothing to emit,
                // and recursing on it would never end.
                if p.len() < w.len() {
                    word(p, None, emit);
                }
            }
        }
        return;
    }
    // 6pm, 10:30am.
    let lower = w.to_ascii_lowercase();
    if let Some(prefix) = lower
        .strip_suffix("am")
        .or_else(|| lower.strip_suffix("pm"))
    {
        if !prefix.is_empty() && prefix.chars().all(|c| c.is_ascii_digit() || c == ':') {
            let pm = lower.ends_with("pm");
            if let Some(t) = clock(prefix, Some(pm)) {
                emit(Token {
                    key: t,
                    kind: EvidenceKind::Number,
                    text: w.to_string(),
                });
            }
            return;
        }
    }
    // 2024-05-20T10:00:00Z: a date and a time.
    if let Some((date, time)) = w.split_once(['T', 't']) {
        let is_date = date.len() == 10
            && date.chars().enumerate().all(|(i, c)| {
                if i == 4 || i == 7 {
                    c == '-'
                } else {
                    c.is_ascii_digit()
                }
            });
        if is_date {
            number(date, None, emit);
            let clock_part: &str = time
                .split(|c: char| !(c.is_ascii_digit() || c == ':'))
                .next()
                .unwrap_or("");
            number(clock_part, None, emit);
            return;
        }
    }
    if w.contains('/') {
        if is_path(w) {
            emit(ident(w));
        } else {
            for p in w.split('/') {
                word(p, None, emit);
            }
        }
        return;
    }
    if w.contains(['.', ':', '-', '+', '~']) {
        if (has_digit && w.chars().count() >= MIN_IDENT_LEN) || is_dotted(w) {
            emit(ident(w));
        } else {
            for p in w.split(['.', ':', '-', '+', '~']) {
                word(p, None, emit);
            }
        }
        return;
    }
    if w.chars().count() < MIN_IDENT_LEN {
        return;
    }
    if (has_digit && !is_quantity(w)) || is_snake(w) || is_camel(w) {
        emit(ident(w));
    }
}

/// A clock time `H:MM` (or `H:MM:SS` when the seconds are not zero), 24-hour.
fn clock(w: &str, pm: Option<bool>) -> Option<String> {
    let parts: Vec<&str> = w.split(':').collect();
    let all_digits = parts
        .iter()
        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    if !all_digits || parts.len() > 3 || parts[0].len() > 2 {
        return None;
    }
    if parts.len() == 1 && pm.is_none() {
        return None;
    }
    if parts[1..].iter().any(|p| p.len() != 2) {
        return None;
    }
    let mut h: u32 = parts[0].parse().ok()?;
    let m: u32 = parts.get(1).map_or(Some(0), |p| p.parse().ok())?;
    let s: u32 = parts.get(2).map_or(Some(0), |p| p.parse().ok())?;
    if m > 59 || s > 59 {
        return None;
    }
    match pm {
        Some(pm) => {
            if !(1..=12).contains(&h) {
                return None;
            }
            if pm && h < 12 {
                h += 12;
            } else if !pm && h == 12 {
                h = 0;
            }
        }
        None if h > 24 => return None,
        None => {}
    }
    Some(if s == 0 {
        format!("{h}:{m:02}")
    } else {
        format!("{h}:{m:02}:{s:02}")
    })
}

/// Emits a numeric token: clock times and decimals normalized, other forms (dates, phone numbers)
/// as written; 3+ significant digits only.
fn number(w: &str, next: Option<&str>, emit: &mut dyn FnMut(Token)) {
    let w = trim_word(w);
    if w.is_empty() {
        return;
    }
    if w.contains(',') && decimal(w).is_none() {
        for p in w.split(',') {
            number(p, next, emit);
        }
        return;
    }
    let digits = w.chars().filter(char::is_ascii_digit).count();
    let (key, text) = if w.contains(':') {
        match (clock(w, meridiem(next)), next) {
            // "10:00 PM": the evidence keeps the meridiem that gives the key its meaning.
            (Some(t), Some(n)) if meridiem(next).is_some() => (t, format!("{w} {n}")),
            (Some(t), _) => (t, w.to_string()),
            (None, _) if digits >= MIN_NUMBER_DIGITS => (w.to_string(), w.to_string()),
            (None, _) => return,
        }
    } else if let Some(n) = decimal(w) {
        let significant = n
            .chars()
            .filter(char::is_ascii_digit)
            .skip_while(|&c| c == '0')
            .count();
        if significant < MIN_NUMBER_DIGITS {
            return;
        }
        (n, w.to_string())
    } else if digits >= MIN_NUMBER_DIGITS {
        (w.to_string(), w.to_string())
    } else {
        return;
    };
    emit(Token {
        key,
        kind: EvidenceKind::Number,
        text,
    });
}

/// `1234`, `1,234.50`, `250.0`: the normalized decimal (`1234`, `1234.5`, `250`); else `None`.
fn decimal(w: &str) -> Option<String> {
    let (int, frac) = match w.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (w, None),
    };
    if int.is_empty()
        || frac.is_some_and(|f| f.is_empty() || !f.chars().all(|c| c.is_ascii_digit()))
    {
        return None;
    }
    let int = if int.contains(',') {
        let groups: Vec<&str> = int.split(',').collect();
        let ok = (1..=3).contains(&groups[0].len())
            && groups[1..].iter().all(|g| g.len() == 3)
            && groups.iter().all(|g| g.chars().all(|c| c.is_ascii_digit()));
        if !ok {
            return None;
        }
        groups.concat()
    } else if int.chars().all(|c| c.is_ascii_digit()) {
        int.to_string()
    } else {
        return None;
    };
    Some(match frac.map(|f| f.trim_end_matches('0')) {
        Some(f) if !f.is_empty() => format!("{int}.{f}"),
        _ => int,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{Message, Part, TraceBuilder};

    fn keys(text: &str) -> Vec<(EvidenceKind, String)> {
        Analysis::of(text)
            .tokens
            .into_iter()
            .map(|t| (t.kind, t.key))
            .collect()
    }

    fn id(s: &str) -> (EvidenceKind, String) {
        (EvidenceKind::Identifier, s.to_string())
    }

    fn num(s: &str) -> (EvidenceKind, String) {
        (EvidenceKind::Number, s.to_string())
    }

    #[test]
    fn non_ascii_digit_spans_end_without_tokens() {
        // Found by the pool's random-message property test: these recursed until the stack
        // overflowed (a trap in wasm).
        for w in ["²", "٣٤", "²-³", "x²", "½"] {
            let mut n = 0;
            word(w, None, &mut |_| n += 1);
            assert!(n <= 1, "{w}: {n} tokens");
        }
    }

    #[test]
    fn tokens_are_distinctive_codes_and_numbers() {
        assert_eq!(
            keys("Book HAT136 for mia_li_3668 on 2024-05-20, pay $1,234.50 with certificate_7504069."),
            vec![
                id("hat136"),
                id("mia_li_3668"),
                num("2024-05-20"),
                num("1234.5"),
                id("certificate_7504069"),
            ]
        );
        // Small numbers, ordinals, plain words, abbreviations: nothing.
        assert!(keys("On the 20th at 5pm, 2 bags, 99 dollars, e.g. one-way, U.S.A.").len() == 1);
        assert_eq!(keys("at 5pm"), vec![num("17:00")]);
        assert_eq!(keys("06:00:00 and 6:00 AM and 6am"), vec![num("6:00")]);
        assert_eq!(keys("12:30 PM"), vec![num("12:30")]);
        assert_eq!(
            keys("mail mia.li3818@example.com, see https://x.org/a?b=1. or src/lib.rs"),
            vec![
                id("mia.li3818@example.com"),
                id("mia.li3818"),
                id("https://x.org/a?b=1"),
                id("src/lib.rs"),
            ]
        );
        assert_eq!(
            keys("call parseJson then os.path.join in __init__"),
            vec![id("parsejson"), id("os.path.join"), id("__init__")]
        );
        assert_eq!(
            keys("2024-05-20T10:30:00Z"),
            vec![num("2024-05-20"), num("10:30")]
        );
        assert_eq!(keys("250.0 and 250 and 0.5 and 007"), vec![num("250")]);
    }

    #[test]
    fn contains_evidence_matches_like_the_detector() {
        let e = |kind, text: &str| Evidence {
            kind,
            text: text.into(),
        };
        let result = r#"{"price": 1234.5, "departs": "22:00:00", "id": "hat136"}"#;
        assert!(contains_evidence(
            result,
            &e(EvidenceKind::Number, "1,234.50")
        ));
        assert!(contains_evidence(
            result,
            &e(EvidenceKind::Number, "10:00 PM")
        ));
        assert!(!contains_evidence(
            result,
            &e(EvidenceKind::Number, "10:00")
        ));
        assert!(contains_evidence(
            result,
            &e(EvidenceKind::Identifier, "HAT136")
        ));
        assert!(!contains_evidence(
            result,
            &e(EvidenceKind::Identifier, "HAT137")
        ));
        let prose = "Note: the quarterly marketing budget review meeting moved to Thursday.";
        let quote = "The quarterly marketing budget review meeting moved";
        assert!(contains_evidence(prose, &e(EvidenceKind::Quote, quote)));
        assert!(!contains_evidence(
            "budget review",
            &e(EvidenceKind::Quote, quote)
        ));
        assert!(contains_evidence(
            "I bought kilns and glazes for pottery",
            &e(EvidenceKind::RareTerm, "glazes kiln pottery")
        ));
        assert!(!contains_evidence("", &e(EvidenceKind::Quote, "")));
    }

    #[test]
    fn json_keys_are_schema_unless_they_hold_data() {
        let a = Analysis::of(
            r#"{"user_id": "mia_li_3668", "payment_methods": {"credit_card_4421486": {"amount": 250}}}"#,
        );
        let k: Vec<String> = a.tokens.into_iter().map(|t| t.key).collect();
        assert_eq!(k, vec!["mia_li_3668", "credit_card_4421486", "250"]);
    }

    fn tool_call(id: &str, name: &str, args: &str) -> Message {
        let mut m = Message::text("assistant", "");
        m.parts = vec![Part::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        }];
        m
    }

    fn tool_result(id: &str, content: &str) -> Message {
        let mut m = Message::text("tool", "");
        m.parts = vec![Part::ToolResult {
            id: id.into(),
            name: None,
            content: content.into(),
        }];
        m
    }

    fn build(messages: Vec<Message>) -> Trace {
        let mut b = TraceBuilder::new("t", "test");
        for m in messages {
            b.push_message(m, None);
        }
        b.reconstruct_calls();
        b.finish().0
    }

    fn incremental(trace: &Trace) -> AccessGraph {
        let mut d = Detector::new();
        let mut all = Vec::new();
        for call in &trace.calls {
            for &i in &call.input {
                d.observe(trace.chunk(i));
            }
            let outs: Vec<&Chunk> = call.output.iter().map(|&i| trace.chunk(i)).collect();
            all.extend(d.outputs(call.index, &outs));
        }
        assert_eq!(all, d.graph().references());
        d.into_graph()
    }

    #[test]
    fn an_identifier_from_a_tool_result_used_in_a_later_tool_call() {
        let t = build(vec![
            Message::text(
                "system",
                "You are an airline agent. Your code is AGENT007X.",
            ),
            Message::text("user", "Hi, I am mia_li_3668. Find me a flight to Seattle."),
            tool_call("c1", "search", r#"{"origin": "JFK", "destination": "SEA"}"#),
            tool_result(
                "c1",
                r#"[{"flight_number": "HAT136", "price": 121}, {"flight_number": "HAT039", "price": 90}]"#,
            ),
            Message::text("assistant", "I found two flights. Shall I book one?"),
            Message::text("user", "Yes, the first one."),
            tool_call(
                "c2",
                "book",
                r#"{"user_id": "mia_li_3668", "flight_number": "HAT136", "agent": "AGENT007X"}"#,
            ),
        ]);
        let g = detect(&t);
        let refs = g.references();
        // Call 0 (search) uses nothing distinctive; call 1 (text) neither; call 2 (book) uses the
        // user turn (mia_li_3668) and the tool result (HAT136); the system prompt's code is ignored.
        let user = t.chunks[1].id;
        let result = t.chunks[3].id;
        let book = t.chunks[6].id;
        assert_eq!(refs.len(), 2, "{refs:#?}");
        assert_eq!((refs[0].call, refs[0].by, refs[0].used), (2, book, user));
        assert_eq!(
            refs[0].evidence,
            vec![Evidence {
                kind: EvidenceKind::Identifier,
                text: "mia_li_3668".into()
            }]
        );
        assert_eq!((refs[1].call, refs[1].by, refs[1].used), (2, book, result));
        assert_eq!(refs[1].evidence[0].text, "HAT136");
        assert_eq!(g.used_at(2), &[user, result]);
        assert!(g.used_at(0).is_empty() && g.used_at(99).is_empty());
        assert_eq!(g.uses_of(result), &[2]);
        assert_eq!(g.use_count(result), 1);
        assert_eq!(g.next_use_after(result, 0), Some(2));
        assert_eq!(g.next_use_after(result, 2), None);
        // Missing the result misses HAT136 only.
        let missed = g.missed(2, |c| c != result);
        assert_eq!(missed.len(), 1);
        assert_eq!(missed[0].evidence.text, "HAT136");
        assert_eq!(missed[0].chunks, vec![result]);
        assert_eq!(g, incremental(&t));
    }

    #[test]
    fn a_greeting_echoed_is_not_a_use() {
        let t = build(vec![
            Message::text("user", "Hello there! How are you doing today?"),
            Message::text("assistant", "Hello there! I am doing well today, thanks."),
            Message::text(
                "user",
                "Thanks! Your support really means a lot to me, friend.",
            ),
            Message::text("assistant", "Your support really means a lot to me too."),
        ]);
        assert!(detect(&t).references().is_empty());
    }

    #[test]
    fn system_prompt_identifiers_and_numbers_are_not_evidence() {
        let t = build(vec![
            Message::text(
                "system",
                "Policy POL_2024_A: refunds above 500 need approval.",
            ),
            Message::text(
                "user",
                "Does POL_2024_A let me get 500 back? My order is 48213.",
            ),
            Message::text(
                "assistant",
                "Under POL_2024_A, 500 needs approval for order 48213.",
            ),
        ]);
        let g = detect(&t);
        assert_eq!(g.references().len(), 1);
        assert_eq!(
            g.references()[0].evidence,
            vec![Evidence {
                kind: EvidenceKind::Number,
                text: "48213".into()
            }]
        );
    }

    #[test]
    fn policy_vocabulary_and_tool_definitions_are_not_evidence() {
        let mut tools = Message::text("tools", "");
        tools.parts = vec![Part::Other {
            kind: "tool_definitions".into(),
            text: r#"[{"name": "book", "parameters": {"cabin": {"enum": ["economy_plus_x"]}}}]"#
                .into(),
        }];
        tools.unframed = true;
        let t = build(vec![
            Message::text("system", "Trip type is one way or round trip."),
            tools,
            Message::text("user", "Book it."),
            tool_call("c1", "get", r#"{"id": "x"}"#),
            tool_result(
                "c1",
                r#"{"flight_type": "round_trip", "cabin": "economy_plus_x", "code": "QQ12345"}"#,
            ),
            tool_call(
                "c2",
                "book",
                r#"{"flight_type": "round_trip", "cabin": "economy_plus_x", "code": "QQ12345"}"#,
            ),
        ]);
        assert_eq!(t.chunks[1].category, Category::Other);
        let g = detect(&t);
        let evidence: Vec<&str> = g
            .references()
            .iter()
            .flat_map(|r| r.evidence.iter().map(|e| e.text.as_str()))
            .collect();
        assert_eq!(evidence, vec!["QQ12345"]);
        assert!(g.uses_of(t.chunks[1].id).is_empty());
    }

    #[test]
    fn every_copy_is_an_alternative_and_the_recent_ones_are_credited() {
        let mut msgs = vec![Message::text("user", "My booking is ABC123.")];
        for i in 0..4 {
            msgs.push(tool_call(&format!("c{i}"), "get", r#"{"id": "ABC123"}"#));
            msgs.push(tool_result(
                &format!("c{i}"),
                r#"{"id": "ABC123", "ok": true}"#,
            ));
        }
        msgs.push(Message::text("assistant", "Booking ABC123 is confirmed."));
        let t = build(msgs);
        let g = detect(&t);
        let last = t.calls.len() as u32 - 1;
        let groups = g.groups_at(last);
        assert_eq!(groups.len(), 1);
        // The user turn, the 4 tool calls and the 4 results all contain it.
        assert_eq!(groups[0].chunks.len(), 9);
        let credited: Vec<ChunkId> = g
            .references()
            .iter()
            .filter(|r| r.call == last)
            .map(|r| r.used)
            .collect();
        assert_eq!(credited.len(), MAX_REFERENCED);
        // The three most recent chunks.
        let n = t.chunks.len() as u32;
        assert_eq!(
            credited,
            vec![ChunkId(n - 4), ChunkId(n - 3), ChunkId(n - 2)]
        );
        // Keeping only the oldest copy is not a miss.
        assert!(g.missed(last, |c| c == ChunkId(0)).is_empty());
        assert_eq!(g, incremental(&t));
    }

    #[test]
    fn tool_call_ids_and_quotes() {
        let t = build(vec![
            Message::text(
                "user",
                "Please note: the quarterly marketing budget review meeting moved to Thursday afternoon.",
            ),
            tool_call("call_abc123", "lookup", r#"{"q": "x"}"#),
            tool_result("call_abc123", "nothing"),
            Message::text(
                "assistant",
                "Noted: the quarterly marketing budget review meeting moved to Thursday. Result of call_abc123 was empty.",
            ),
        ]);
        let g = detect(&t);
        let kinds: Vec<(u32, EvidenceKind, &str)> = g
            .references()
            .iter()
            .flat_map(|r| {
                r.evidence
                    .iter()
                    .map(move |e| (r.used.0, e.kind, e.text.as_str()))
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                (
                    0,
                    EvidenceKind::Quote,
                    "the quarterly marketing budget review meeting moved to Thursday"
                ),
                (1, EvidenceKind::ToolCallId, "call_abc123"),
                (2, EvidenceKind::ToolCallId, "call_abc123"),
            ]
        );
        assert_eq!(g, incremental(&t));
    }

    #[test]
    fn outputs_never_link_to_their_own_call() {
        let mut m = Message::text("assistant", "Booking XYZ789 now.");
        m.parts.push(Part::ToolCall {
            id: "c9".into(),
            name: "book".into(),
            arguments: r#"{"id": "XYZ789"}"#.into(),
        });
        let t = build(vec![Message::text("user", "hi"), m]);
        assert!(detect(&t).references().is_empty());
    }

    #[test]
    fn rare_terms_need_three_and_a_history() {
        let with = |reply: &str, history: usize| {
            let mut msgs = Vec::new();
            for i in 0..history {
                msgs.push(Message::text("user", format!("filler message number {i}")));
            }
            msgs.push(Message::text(
                "user",
                "I started a pottery class and bought a kiln and some glazes.",
            ));
            msgs.push(Message::text("assistant", reply));
            detect(&build(msgs))
        };
        let g = with("A kiln and glazes for your pottery? Nice!", 22);
        assert_eq!(g.references().len(), 1);
        assert_eq!(
            g.references()[0].evidence,
            vec![Evidence {
                kind: EvidenceKind::RareTerm,
                text: "glazes kiln pottery".into()
            }]
        );
        // Two shared terms, or too short a history: nothing.
        assert!(with("A kiln for your pottery? Nice!", 22)
            .references()
            .is_empty());
        assert!(with("A kiln and glazes for your pottery? Nice!", 12)
            .references()
            .is_empty());
    }

    #[test]
    fn out_of_order_calls_keep_the_graph_sorted() {
        let t = build(vec![
            Message::text("user", "Order 55512 and order 66613."),
            Message::text("assistant", "Order 55512 noted."),
        ]);
        let user = t.chunk(ChunkId(0));
        let out = t.chunk(ChunkId(1));
        let mut d = Detector::new();
        d.observe(user);
        d.outputs(5, &[out]);
        let mut later = out.clone();
        later.id = ChunkId(7);
        later.content = "And 66613.".into();
        d.outputs(2, &[&later]);
        let calls: Vec<u32> = d.graph().references().iter().map(|r| r.call).collect();
        assert_eq!(calls, vec![2, 5]);
        assert_eq!(d.graph().uses_of(ChunkId(0)), &[2, 5]);
    }
}
