//! Matching one output against the observed chunks, one signal at a time: distinctive tokens
//! (identifiers, numbers, tool call ids), quotes, rare terms (see the module doc of
//! [`crate::references`]).

use super::analysis::{Analysis, Fragment, Term};
use super::detector::Detector;
use super::graph::{Evidence, EvidenceKind};
use super::{
    MAX_DF, MAX_REFERENCED, QUOTE_MIN_RUN, QUOTE_TEXT_MAX, QUOTE_WORDS, RARE_MIN_DOCS,
    RARE_MIN_SHARED,
};
use crate::model::ChunkId;
use foldhash::{HashMap, HashMapExt, HashSet};
use std::collections::BTreeMap;

/// One evidence item with its candidate chunks, ranked best first.
type Found = (Evidence, Vec<ChunkId>);

/// A run of overlapping quote shingles: first and last shingle position, and per candidate chunk
/// the number of the run's shingles it contains.
type Run = (usize, usize, HashMap<ChunkId, u32>);

impl Detector {
    /// The evidence items of one analyzed output, each with its candidate chunks ranked best
    /// first: tokens, then the quotes of each fragment, then rare terms (the order the graph
    /// stores them in).
    pub(super) fn link(&self, a: &Analysis, own: &HashSet<ChunkId>) -> Vec<Found> {
        let mut found = self.link_tokens(a, own);
        for f in &a.fragments {
            found.extend(self.link_quotes(f, own));
        }
        found.extend(self.link_rare_terms(a, own));
        found
    }

    /// Identifiers, numbers, tool call ids: every chunk that contains the token, most recent
    /// first. The strongest signal and the cheapest: one postings lookup per token.
    fn link_tokens(&self, a: &Analysis, own: &HashSet<ChunkId>) -> Vec<Found> {
        let mut found = Vec::new();
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
        found
    }

    /// The runs of overlapping 6-word shingles of `f` found in received chunks (not in policy
    /// text, not stock phrases). Separate from [`Detector::link_quotes`]: finding runs is the
    /// walk over shingles, judging them is per run.
    fn quote_runs(&self, f: &Fragment, own: &HashSet<ChunkId>) -> Vec<Run> {
        let mut run: Option<Run> = None;
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
        runs
    }

    /// Quotes: the runs of [`Detector::quote_runs`] long enough to be copies, each with its
    /// text (cut to a readable length) and its chunks ranked by shared shingles, then recency.
    fn link_quotes(&self, f: &Fragment, own: &HashSet<ChunkId>) -> Vec<Found> {
        let mut found = Vec::new();
        let runs = self.quote_runs(f, own);
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
        found
    }

    /// Rare terms: a received chunk sharing 3+ terms that few observed chunks contain (only once
    /// enough chunks are observed for "few" to mean something).
    fn link_rare_terms(&self, a: &Analysis, own: &HashSet<ChunkId>) -> Vec<Found> {
        let mut found = Vec::new();
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
