//! The reference strategies: the newest turns (recency), BM25 with the question as the query
//! (with or without the neighbour turns), and the oracle that reads the evidence.

use crate::conversation::empty_context;
use crate::{Analyzer, ContextBuilder, Conversation};

/// Keeps the newest turns: walks back from the last turn and stops at the first that does not
/// fit (the context is a contiguous window ending at the question).
#[derive(Debug, Clone, Copy, Default)]
pub struct Recency;

impl ContextBuilder for Recency {
    fn name(&self) -> String {
        "recency".into()
    }

    fn build(&mut self, conv: &Conversation<'_>, _question: &str, budget: u32) -> Vec<usize> {
        let mut fill = empty_context(conv, budget);
        for i in (0..conv.len()).rev() {
            if !fill.add(i) {
                break;
            }
        }
        fill.out
    }
}

/// BM25 over turns with the question as the query. Fills the budget greedily by score, skipping
/// turns that do not fit and going on with the next; turns sharing no word with the question are
/// never added. With `adjacent`, each hit that fits brings the turn before it and then the turn
/// after it, each if it fits.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bm25 {
    adjacent: bool,
    analyzer: Analyzer,
}

impl Bm25 {
    /// BM25 over lowercase words ([`Analyzer::Words`]).
    pub fn new() -> Bm25 {
        Bm25::default()
    }

    /// BM25 whose hits bring their neighbour turns.
    pub fn adjacent() -> Bm25 {
        Bm25 {
            adjacent: true,
            ..Bm25::default()
        }
    }

    /// The same strategy with another analyzer.
    pub fn with_analyzer(self, analyzer: Analyzer) -> Bm25 {
        Bm25 { analyzer, ..self }
    }
}

impl ContextBuilder for Bm25 {
    fn name(&self) -> String {
        let mut name = String::from("bm25");
        if self.analyzer == Analyzer::Terms {
            name.push_str("-terms");
        }
        if self.adjacent {
            name.push_str("-adjacent");
        }
        name
    }

    fn build(&mut self, conv: &Conversation<'_>, question: &str, budget: u32) -> Vec<usize> {
        let mut fill = empty_context(conv, budget);
        for hit in conv.ranking(question, self.analyzer) {
            if fill.add(hit) && self.adjacent {
                if hit > 0 {
                    fill.add(hit - 1);
                }
                if hit + 1 < conv.len() {
                    fill.add(hit + 1);
                }
            }
        }
        fill.out
    }
}

/// The upper bound, **cheating by design**: it reads the evidence of the probes whose question is
/// `question` and keeps as many evidence turns as fit, smallest first (all of them when they fit
/// together). No honest strategy can beat it on either score.
#[derive(Debug, Clone, Copy, Default)]
pub struct Oracle;

impl ContextBuilder for Oracle {
    fn name(&self) -> String {
        "oracle".into()
    }

    fn build(&mut self, conv: &Conversation<'_>, question: &str, budget: u32) -> Vec<usize> {
        let mut evidence: Vec<usize> = conv
            .trace
            .probes
            .iter()
            .filter(|p| p.question == question)
            .flat_map(|p| conv.evidence(p))
            .collect();
        evidence.sort_by_key(|&i| (conv.tokens[i], i));
        evidence.dedup();
        let mut fill = empty_context(conv, budget);
        for i in evidence {
            fill.add(i);
        }
        fill.out
    }
}
