//! A conversation prepared once for every question and builder: its turns as rendered, their
//! token costs, BM25 indexes over them and its questions' evidence turns.

use memlens_core::recall::Fill;
use memlens_core::retrieval::Bm25Index;
use memlens_core::text::{is_cjk_word, words};
use memlens_core::tokens::TokenCounter;
use memlens_core::{Chunk, ChunkId, Probe, Trace};
use std::collections::HashMap;

/// How BM25 analyzes text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Analyzer {
    /// Lowercase words, nothing removed (every word counts, stop words too). Reproduces the
    /// reference BM25 numbers of the benchmark.
    #[default]
    Words,
    /// MemLens' analyzer ([`memlens_core::text::terms`]): stop words removed, light stemming.
    Terms,
}

/// One conversation prepared for the benchmark: its turns, their token costs and BM25 indexes
/// over them, built once so builders do not rebuild per question.
#[derive(Debug, Clone)]
pub struct Conversation<'a> {
    /// The trace.
    pub trace: &'a Trace,
    /// The turns, in order (every chunk of the trace: LoCoMo has one chunk per turn).
    pub turns: Vec<ChunkId>,
    /// Tokens of each turn's rendered text ([`render_turn`]), same order as `turns`.
    pub tokens: Vec<u32>,
    words_index: Bm25Index,
    terms_index: Bm25Index,
    by_dia: HashMap<&'a str, usize>,
}

/// The text a turn puts in context: `"{speaker}: {content}"`, or the content when there is no
/// speaker.
pub fn render_turn(chunk: &Chunk) -> String {
    match chunk.meta.speaker.as_deref() {
        Some(speaker) => format!("{speaker}: {}", chunk.content),
        None => chunk.content.clone(),
    }
}

/// Text whose [`memlens_core::text::terms`] are exactly its lowercase words: each word gets a `_`
/// suffix, which no stop word has and which keeps the stemmer (alphabetic words only) off. This
/// lets the shared [`Bm25Index`] run with the [`Analyzer::Words`] analysis. CJK words (character
/// bigrams) get no suffix: the analysis keeps them as they are, and a `_` would split off them.
pub(crate) fn verbatim(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    for w in words(text) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&w);
        if !is_cjk_word(&w) {
            out.push('_');
        }
    }
    out
}

impl<'a> Conversation<'a> {
    /// Prepares a trace, counting with the trace's model encoding (o200k when it names none).
    pub fn new(trace: &'a Trace) -> Conversation<'a> {
        Conversation::with_counter(trace, &TokenCounter::for_model(trace.main_model()))
    }

    /// Prepares a trace, counting with `counter`.
    pub fn with_counter(trace: &'a Trace, counter: &TokenCounter) -> Conversation<'a> {
        let mut words_index = Bm25Index::new();
        let mut terms_index = Bm25Index::new();
        let mut turns = Vec::with_capacity(trace.chunks.len());
        let mut tokens = Vec::with_capacity(trace.chunks.len());
        let mut by_dia = HashMap::new();
        for (i, chunk) in trace.chunks.iter().enumerate() {
            let text = render_turn(chunk);
            tokens.push(counter.count(&text));
            words_index.add(&verbatim(&text));
            terms_index.add(&text);
            turns.push(chunk.id);
            if let Some(dia) = chunk.meta.dia_id.as_deref() {
                by_dia.entry(dia).or_insert(i);
            }
        }
        Conversation {
            trace,
            turns,
            tokens,
            words_index,
            terms_index,
            by_dia,
        }
    }

    /// Number of turns.
    pub fn len(&self) -> usize {
        self.turns.len()
    }

    /// True when the conversation has no turns.
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// The chunk of turn `i`.
    pub fn turn(&self, i: usize) -> &'a Chunk {
        self.trace.chunk(self.turns[i])
    }

    /// Turns with a positive BM25 score for `query`, best first, ties by the earlier turn.
    pub fn ranking(&self, query: &str, analyzer: Analyzer) -> Vec<usize> {
        let scores = match analyzer {
            Analyzer::Words => self.words_index.scores(&verbatim(query)),
            Analyzer::Terms => self.terms_index.scores(query),
        };
        let mut ranked: Vec<(usize, f32)> = scores
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.into_iter().map(|(i, _)| i).collect()
    }

    /// The evidence turns of a probe (indices into `turns`, ascending, no duplicates): its
    /// evidence ids split on `;`, `,` and whitespace and matched against turn dialogue ids, plus
    /// the chunks the importer resolved. Empty when nothing resolves.
    pub fn evidence(&self, probe: &Probe) -> Vec<usize> {
        let mut out: Vec<usize> = probe
            .evidence
            .iter()
            .flat_map(|s| s.split(|c: char| c == ';' || c == ',' || c.is_whitespace()))
            .filter_map(|id| self.by_dia.get(id).copied())
            .collect();
        out.extend(
            probe
                .evidence_chunks
                .iter()
                .filter_map(|id| self.turns.iter().position(|t| t == id)),
        );
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Total tokens of a context (duplicates and out-of-range indices ignored).
    pub fn context_tokens(&self, context: &[usize]) -> u64 {
        let mut seen = vec![false; self.turns.len()];
        let mut total = 0u64;
        for &i in context {
            if i < seen.len() && !seen[i] {
                seen[i] = true;
                total += u64::from(self.tokens[i]);
            }
        }
        total
    }
}

/// An empty context of at most `budget` tokens over the turns of `conv`.
pub(crate) fn empty_context<'c>(conv: &'c Conversation<'_>, budget: u32) -> Fill<'c> {
    Fill::with_tokens(&conv.tokens, budget)
}
