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
//! - [`EvidenceKind::RareTerm`]: at least 3 content terms (stemmed, 4+ letters, or CJK
//!   character bigrams) that each occur in at most 2 of the (at least 20) chunks observed so far,
//!   shared with one received chunk.
//!
//! Words are read by [`crate::text::word_spans`]: a run of Chinese, Japanese or Korean letters
//! is its overlapping character bigrams, so quotes and rare terms work on CJK text (8 "words" of
//! a quote are 8 bigrams, 9 characters copied). Identifiers and numbers end at a CJK letter
//! (`预算5000元` holds the number `5000`).
//!
//! Tokens, quotes and terms that occur in a system prompt or in tool definitions are ignored (they
//! are policy text; a phrase of the prompt written as an identifier counts too: "round trip" there
//! makes `round_trip` an enum value), and so are tokens that occur in more than 32 observed chunks
//! (not distinctive).
//!
//! # Targets, alternatives and misses
//! Targets are the earlier chunks other than system prompts and tool definitions (a
//! [`Category::Other`](crate::model::Category::Other) chunk of kind `tool_definitions`): every policy keeps those, so they are left
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
//!
//! The module's files, by job: `graph` (the access graph and its evidence types), `detector`
//! (the incremental [`Detector`]: what it remembers of observed chunks), `link` (matching one
//! output against them, one signal at a time), `analysis` (a chunk's tokens, prose fragments and
//! terms), `scan` (the identifier and number scanner).

mod analysis;
mod detector;
mod graph;
mod link;
mod scan;
#[cfg(test)]
mod tests;

pub use analysis::{distinctive_tokens, is_path_token};
pub use detector::Detector;
pub use graph::{AccessGraph, Evidence, EvidenceGroup, EvidenceKind, Reference};

use crate::model::{Chunk, Trace};
use crate::text::stem;
use analysis::{Analysis, Fragment};

/// What the detector reads of a chunk's text, kept across replays by a memo
/// ([`crate::simulate::TraceMemo`]).
pub(crate) type ChunkReading = Analysis;
use foldhash::HashSet;

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
    EvidenceText::new(text).contains(evidence)
}

/// A text read once for many [`contains_evidence`] checks: a simulator asks of one compressed
/// chunk at every call that still carries it, and reading the text is the check's whole cost.
pub struct EvidenceText {
    text: String,
    analysis: Analysis,
    /// The text with `, ` for `,`, read on first need (numbers in comma-separated lists).
    comma_spaced: std::cell::OnceCell<Analysis>,
}

impl EvidenceText {
    /// Reads `text`.
    pub fn new(text: &str) -> Self {
        EvidenceText {
            text: text.to_string(),
            analysis: Analysis::of(text),
            comma_spaced: std::cell::OnceCell::new(),
        }
    }

    /// The text read.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// [`contains_evidence`] on the text read.
    pub fn contains(&self, evidence: &Evidence) -> bool {
        match evidence.kind {
            EvidenceKind::ToolCallId | EvidenceKind::Identifier | EvidenceKind::Number => {
                let Some(key) = Analysis::of(&evidence.text).tokens.into_iter().next() else {
                    return false;
                };
                // `121,239` is a thousands-grouped number in prose and two values in a TOON row
                // or any comma-separated list: the evidence survived if either reading holds it.
                self.analysis.keys.contains(&key.key)
                    || (evidence.kind == EvidenceKind::Number
                        && self.text.contains(',')
                        && self
                            .comma_spaced
                            .get_or_init(|| Analysis::of(&self.text.replace(',', ", ")))
                            .keys
                            .contains(&key.key))
            }
            EvidenceKind::Quote => {
                // A quote spans at least one shingle, so its words are hashed (fragments shorter
                // than a shingle keep no hashes, and cannot hold it anyway).
                let want = Fragment::new(evidence.text.clone()).hashes;
                !want.is_empty()
                    && self
                        .analysis
                        .fragments
                        .iter()
                        .any(|f| f.hashes.windows(want.len()).any(|w| w == want.as_slice()))
            }
            EvidenceKind::RareTerm => {
                let have: HashSet<String> =
                    self.analysis.terms().into_iter().map(|t| t.0).collect();
                evidence
                    .text
                    .split(' ')
                    .all(|w| have.contains(&stem(&w.to_lowercase())))
            }
        }
    }
}
