//! Memory recall without a neural model: which past turns to bring back into a context of
//! `budget` tokens for a query (see `docs/recall.md`).
//!
//! [`RecallIndex`] is an incremental index over turns (add a turn at any time, no rebuild). A
//! query is answered in seven steps, each an ingredient that [`RecallParams`] can switch off:
//!
//! 1. **Vector expansion**: each question word that is not a name brings the conversation's
//!    words nearest to it in static GloVe space ([`vectors`]) into the query, at a fraction of
//!    a question word's weight.
//! 2. **BM25** over recall's [`terms`] (stop words out, Snowball English stems) of the rendered
//!    turn (`speaker: content`).
//! 3. **Pseudo-relevance feedback** (RM3-style): the best turns of the first pass vote for their
//!    own terms (weighted by the turn's normalized score, the term's share of the turn and its
//!    idf); the best new terms join the query with a total weight that is a fixed share of the
//!    original query's, and BM25 runs again.
//! 4. **Speaker cue** (off by default): when a question names some but not all of the
//!    conversation's speakers, the named speakers' turns get a boost.
//! 5. **Passage smoothing**: a turn also gains the lexical score of each neighbour turn of the
//!    same session (it is scored as the three-turn passage centred on it), since a fact is often
//!    split between a question and its reply.
//! 6. **Session prior** (off by default: neutral once passages are scored): a turn also scores
//!    by how relevant its session is (the session's summed turn scores, normalized).
//! 7. **Vector similarity**: each turn has the idf-weighted average of its words' static GloVe
//!    vectors ([`vectors`], fixed when the turn is added); the query's average is compared with
//!    every turn's after both are centred on the conversation's mean turn vector. This cosine,
//!    passage-smoothed like the lexical score, is added to the lexical score normalized by the
//!    best one: paraphrases ("kids" for "children") and hyponyms ("taekwondo" for "martial arts")
//!    that share no term still meet.
//!
//! [`RecallIndex::light`] is the analysis without vectors and with MemLens' light stemmer, which
//! the engine's archive uses once a trace has tool calls.
//!
//! The budget is then filled greedily by final score; every hit brings its neighbour turns of the
//! same session (the turn before, then the turn after, each if it fits), since a turn's evidence
//! is often its question or its reply. When the scored turns run out, the rest of the budget is
//! filled by the same score (newest first among turns with none).
//!
//! ```
//! use memlens_core::recall::{RecallIndex, RecallParams};
//!
//! let mut ix = RecallIndex::new();
//! ix.add("Ann: I signed up for a pottery class yesterday.", Some("Ann"), Some("day 1"), 12);
//! ix.add("Bo: The weather in Lisbon is sunny and warm.", Some("Bo"), Some("day 2"), 11);
//! ix.add("Ann: My kids love the museum downtown.", Some("Ann"), Some("day 3"), 9);
//! // No turn shares a term with the question; the word vectors find the one about kids.
//! let scores = ix.scores("What do the children enjoy?", &RecallParams::default());
//! assert!(scores[2] > scores[1]);
//! // Twelve tokens hold one turn.
//! assert_eq!(ix.query("pottery", 12, &RecallParams::default()), vec![0]);
//! ```
//!
//! Pure and deterministic: no I/O, no clock, no hashing order in results.

pub mod vectors;

use crate::text::{is_cjk_word, is_stop_word, words};
use std::collections::HashMap;

/// The switches and parameters of a recall query. [`RecallParams::default`] is the MemLens
/// policy; the `without_*` helpers give the ablations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecallParams {
    /// BM25 term-frequency saturation.
    pub k1: f32,
    /// BM25 length normalization.
    pub b: f32,
    /// Pseudo-relevance feedback: number of first-pass turns that vote (0 turns it off).
    pub prf_docs: usize,
    /// Pseudo-relevance feedback: number of expansion terms added.
    pub prf_terms: usize,
    /// Pseudo-relevance feedback: total weight of the expansion terms, as a share of the
    /// original query's total weight.
    pub prf_weight: f32,
    /// Speaker cue: multiplier on the scores of turns by a speaker the question names (1 is off).
    pub speaker_boost: f32,
    /// Session prior: weight of the session's normalized relevance in a turn's score (0 is off).
    pub session_weight: f32,
    /// Hits bring their neighbour turns of the same session.
    pub neighbours: bool,
    /// When the scored turns are exhausted, fill the rest of the budget (session prior, then
    /// newest first).
    pub backfill: bool,
    /// Value per token: turns are taken in order of `score / tokens^token_exponent` (0 is
    /// score order).
    pub token_exponent: f32,
    /// Passage smoothing: a turn's lexical score gains this share of its same-session
    /// neighbours' lexical scores (0 is off).
    pub window: f32,
    /// Semantic similarity from static word vectors ([`vectors::WordVectors::builtin`]): the
    /// weight of a turn's centred cosine with the query (passage-smoothed like the lexical
    /// score) added to its lexical score normalized by the best one (0 is off).
    pub semantic_weight: f32,
    /// Vector expansion: each query word (not a name) brings its `expansion_k` nearest words of
    /// the conversation by word-vector cosine, at least `expansion_min`, into the BM25 query with
    /// weight `expansion_weight x cosine` (0 is off).
    pub expansion_weight: f32,
    /// Vector expansion: nearest conversation words per query word.
    pub expansion_k: usize,
    /// Vector expansion: the least cosine of an expansion word.
    pub expansion_min: f32,
}

impl Default for RecallParams {
    fn default() -> Self {
        RecallParams {
            k1: 1.2,
            b: 0.75,
            prf_docs: 5,
            prf_terms: 10,
            prf_weight: 0.5,
            speaker_boost: 1.0,
            session_weight: 0.0,
            neighbours: true,
            backfill: true,
            token_exponent: 0.0,
            window: 1.0,
            semantic_weight: 0.5,
            expansion_weight: 0.3,
            expansion_k: 5,
            expansion_min: 0.5,
        }
    }
}

/// An incremental index over turns. Turn ids are the order of [`RecallIndex::add`] calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecallIndex {
    vocab: HashMap<String, u32>,
    /// term id -> postings (turn, tf), turns ascending.
    postings: Vec<Vec<(u32, u32)>>,
    /// turn -> (term id, tf), term ids ascending.
    doc_terms: Vec<Vec<(u32, u32)>>,
    doc_len: Vec<u32>,
    total_len: u64,
    tokens: Vec<u32>,
    /// turn -> speaker id (`u32::MAX` for none).
    speaker: Vec<u32>,
    /// speaker id -> analyzed name terms.
    speakers: Vec<Vec<String>>,
    speaker_ids: HashMap<String, u32>,
    /// turn -> session id.
    session: Vec<u32>,
    session_ids: HashMap<String, u32>,
    /// turn -> its unit-length word-vector average, 8-bit (x 127), `dims` per turn; all zero
    /// for a turn with no word in the table.
    emb: Vec<i8>,
    /// turn -> squared length of its stored (8-bit) vector, 0 for none.
    emb_norm2: Vec<f32>,
    /// Sum of the stored turn vectors (for their mean) and how many turns have one.
    emb_sum: Vec<f32>,
    emb_count: u32,
    /// term id -> its row in the word-vector table (`NONE` for none, and always with `light`).
    term_row: Vec<u32>,
    /// term id -> its word vector's 8-bit components, contiguous (zeros for none; empty with
    /// `light`): expansion scans them all per query word.
    term_emb: Vec<i8>,
    /// MemLens' light stemmer ([`crate::text::terms`]) and no word vectors ([`RecallIndex::light`]).
    light: bool,
}

const NONE: u32 = u32::MAX;

/// Recall's index terms: lowercase words, stop words out, Snowball (Porter2) English stems; CJK
/// text as character bigrams ([`crate::text::word_spans`]), not stemmed.
pub fn terms(text: &str) -> Vec<String> {
    thread_local! {
        static STEMMER: rust_stemmers::Stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    }
    STEMMER.with(|st| {
        words(text)
            .filter(|w| !is_stop_word(w))
            .map(|w| match is_cjk_word(&w) {
                true => w,
                false => st.stem(&w).into_owned(),
            })
            .collect()
    })
}

impl RecallIndex {
    /// An empty index.
    pub fn new() -> RecallIndex {
        RecallIndex::default()
    }

    /// An empty index with the analysis the engine's archive uses on agent traces: MemLens'
    /// light stemmer and no word vectors. On tau-bench tool traces both newer ingredients
    /// measured worse there (see `docs/recall.md`); conversations use [`RecallIndex::new`].
    pub fn light() -> RecallIndex {
        RecallIndex {
            light: true,
            ..RecallIndex::default()
        }
    }

    /// True for an index made by [`RecallIndex::light`].
    pub fn is_light(&self) -> bool {
        self.light
    }

    /// The index terms of `text` under this index's analysis.
    fn analyze(&self, text: &str) -> Vec<String> {
        if self.light {
            crate::text::terms(text)
        } else {
            terms(text)
        }
    }

    /// Number of turns.
    pub fn len(&self) -> usize {
        self.doc_len.len()
    }

    /// True when no turn was added.
    pub fn is_empty(&self) -> bool {
        self.doc_len.is_empty()
    }

    /// Heap memory the index holds, in bytes (allocated capacity of its vectors and strings, plus
    /// the hash maps' tables estimated at their capacity; allocator overhead not included).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let map = |cap: usize, entry: usize| cap * (entry + 1);
        let strings: usize = self.vocab.keys().map(String::capacity).sum::<usize>()
            + self.speaker_ids.keys().map(String::capacity).sum::<usize>()
            + self.session_ids.keys().map(String::capacity).sum::<usize>();
        let pairs = |v: &Vec<Vec<(u32, u32)>>| {
            v.capacity() * size_of::<Vec<(u32, u32)>>()
                + v.iter()
                    .map(|p| p.capacity() * size_of::<(u32, u32)>())
                    .sum::<usize>()
        };
        strings
            + map(self.vocab.capacity(), size_of::<(String, u32)>())
            + map(self.speaker_ids.capacity(), size_of::<(String, u32)>())
            + map(self.session_ids.capacity(), size_of::<(String, u32)>())
            + pairs(&self.postings)
            + pairs(&self.doc_terms)
            + (self.doc_len.capacity()
                + self.tokens.capacity()
                + self.speaker.capacity()
                + self.session.capacity())
                * size_of::<u32>()
            + self.emb.capacity()
            + self.term_row.capacity() * size_of::<u32>()
            + self.term_emb.capacity()
            + (self.emb_norm2.capacity() + self.emb_sum.capacity()) * size_of::<f32>()
            + self.speakers.capacity() * size_of::<Vec<String>>()
            + self
                .speakers
                .iter()
                .flatten()
                .map(|t| t.capacity() + size_of::<String>())
                .sum::<usize>()
    }

    /// Adds a turn: the text indexed (as rendered in context), its speaker, its session (any key
    /// naming the session: a date, a session id) and its cost in tokens. Returns its id.
    pub fn add(
        &mut self,
        text: &str,
        speaker: Option<&str>,
        session: Option<&str>,
        tokens: u32,
    ) -> usize {
        let id = self.doc_len.len() as u32;
        let mut tf: HashMap<u32, u32> = HashMap::new();
        let mut len = 0u32;
        let analyzed = self.analyze(text);
        for t in &analyzed {
            let tid = match self.vocab.get(t) {
                Some(&tid) => tid,
                None => self.new_term(t),
            };
            *tf.entry(tid).or_insert(0) += 1;
            len += 1;
        }
        let mut dt: Vec<(u32, u32)> = tf.into_iter().collect();
        dt.sort_unstable();
        for &(t, n) in &dt {
            self.postings[t as usize].push((id, n));
        }
        self.doc_terms.push(dt);
        self.doc_len.push(len);
        self.total_len += u64::from(len);
        self.tokens.push(tokens);
        if !self.light {
            self.add_vector(&analyzed, id as usize + 1);
        }
        let sp = match speaker {
            Some(name) if !name.trim().is_empty() => {
                let key = name.trim().to_lowercase();
                let next = self.speaker_ids.len() as u32;
                let sid = *self.speaker_ids.entry(key).or_insert(next);
                if sid as usize == self.speakers.len() {
                    let name = self.analyze(name);
                    self.speakers.push(name);
                }
                sid
            }
            _ => NONE,
        };
        self.speaker.push(sp);
        let key = session.unwrap_or("").to_string();
        let next = self.session_ids.len() as u32;
        let sess = *self.session_ids.entry(key).or_insert(next);
        self.session.push(sess);
        id as usize
    }

    /// Registers a term first seen: its id, empty postings and (unless light) its word vector.
    fn new_term(&mut self, term: &str) -> u32 {
        let tid = self.vocab.len() as u32;
        self.vocab.insert(term.to_string(), tid);
        self.postings.push(Vec::new());
        let row = match self.light {
            true => None,
            false => vectors::WordVectors::builtin().row(term),
        };
        self.term_row.push(row.unwrap_or(NONE));
        if !self.light {
            let table = vectors::WordVectors::builtin();
            match row {
                Some(r) => self.term_emb.extend_from_slice(table.components(r)),
                None => self.term_emb.extend(std::iter::repeat_n(0, table.dims())),
            }
        }
        tid
    }

    /// Weight of a term in a vector average: its inverse document frequency among `n` turns.
    fn vector_weight(&self, term: &str, n: usize) -> f32 {
        let df = self
            .vocab
            .get(term)
            .map_or(0, |&t| self.postings[t as usize].len());
        ((n as f32 + 1.0) / (df as f32 + 1.0)).ln()
    }

    /// The idf-weighted average of the word vectors of `terms` (a text's analysis), unit length
    /// (None when no term has a vector), with idf over the first `n` turns.
    fn text_vector(&self, terms: &[String], n: usize) -> Option<Vec<f32>> {
        let table = vectors::WordVectors::builtin();
        let mut v = vec![0.0f32; table.dims()];
        let mut any = false;
        for t in terms {
            let w = self.vector_weight(t, n);
            any |= table.add_to(t, w, &mut v);
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if !any || norm == 0.0 {
            return None;
        }
        v.iter_mut().for_each(|x| *x /= norm);
        Some(v)
    }

    /// Stores turn `n - 1`'s vector, weighted by the idf of the first `n` turns (the weights a
    /// turn gets are fixed when it is added, so the index stays incremental).
    fn add_vector(&mut self, terms: &[String], n: usize) {
        let dims = vectors::WordVectors::builtin().dims();
        if dims == 0 {
            return; // an empty table: recall is lexical only
        }
        if self.emb_sum.len() != dims {
            self.emb_sum = vec![0.0; dims];
        }
        match self.text_vector(terms, n) {
            Some(v) => {
                let mut norm2 = 0.0;
                for (k, x) in v.iter().enumerate() {
                    let q = (x * 127.0).round().clamp(-127.0, 127.0);
                    self.emb.push(q as i8);
                    self.emb_sum[k] += q / 127.0;
                    norm2 += (q / 127.0) * (q / 127.0);
                }
                self.emb_norm2.push(norm2);
                self.emb_count += 1;
            }
            None => {
                self.emb.extend(std::iter::repeat_n(0, dims));
                self.emb_norm2.push(0.0);
            }
        }
    }

    /// Each turn's cosine with the query after both are centred on the mean turn vector (the
    /// mean is what every turn shares; without centring every cosine is high), clamped at 0.
    /// None when the query has no word with a vector.
    fn semantic(&self, query: &[String]) -> Option<Vec<f32>> {
        let n = self.len();
        if self.emb_count == 0 {
            return None;
        }
        let dims = self.emb_sum.len();
        let q = self.text_vector(query, n)?;
        let mean: Vec<f32> = self
            .emb_sum
            .iter()
            .map(|x| x / self.emb_count as f32)
            .collect();
        let mut qc: Vec<f32> = q.iter().zip(&mean).map(|(a, m)| a - m).collect();
        let qn = qc.iter().map(|x| x * x).sum::<f32>().sqrt();
        if qn == 0.0 {
            return None;
        }
        qc.iter_mut().for_each(|x| *x /= qn);
        let mean_qc: f32 = mean.iter().zip(&qc).map(|(a, b)| a * b).sum();
        let mean2: f32 = mean.iter().map(|x| x * x).sum();
        let mut out = vec![0.0f32; n];
        for (i, o) in out.iter_mut().enumerate() {
            let norm2 = self.emb_norm2[i];
            if norm2 == 0.0 {
                continue;
            }
            let e = &self.emb[i * dims..(i + 1) * dims];
            let eq = vectors::dot_i8(e, &qc) / 127.0;
            let em = vectors::dot_i8(e, &mean) / 127.0;
            let centred2 = norm2 - 2.0 * em + mean2;
            if centred2 > 1e-12 {
                *o = ((eq - mean_qc) / centred2.sqrt()).max(0.0);
            }
        }
        Some(out)
    }

    /// Passage smoothing: each turn gains `window` x the scores of its same-session neighbours.
    fn smooth(&self, s: &mut [f32], window: f32) {
        if window <= 0.0 {
            return;
        }
        let base = s.to_vec();
        let n = s.len();
        for i in 0..n {
            let mut extra = 0.0;
            if i > 0 && self.session[i - 1] == self.session[i] {
                extra += base[i - 1];
            }
            if i + 1 < n && self.session[i + 1] == self.session[i] {
                extra += base[i + 1];
            }
            s[i] += window * extra;
        }
    }

    /// Vector expansion (see [`RecallParams::expansion_weight`]): adds to the sorted query `q`
    /// the conversation words nearest to each query word that is not a name (capitalized after
    /// the first word, or a speaker's name), skipping names and words already in the query.
    fn expand(&self, query: &str, q: &mut Vec<(u32, f32)>, p: &RecallParams) {
        if p.expansion_weight <= 0.0 || p.expansion_k == 0 || self.light {
            return;
        }
        let table = vectors::WordVectors::builtin();
        let names: Vec<u32> = self
            .speakers
            .iter()
            .flatten()
            .filter_map(|t| self.vocab.get(t).copied())
            .collect();
        let mut extra: HashMap<u32, f32> = HashMap::new();
        let split = crate::text::word_spans(query).map(|(s, e)| &query[s..e]);
        for (n, word) in split.enumerate() {
            if n > 0 && word.chars().next().is_some_and(char::is_uppercase) {
                continue; // a name: matched exactly or not at all
            }
            for stem in self.analyze(word) {
                let Some(row) = table.row(&stem) else {
                    continue;
                };
                if self.vocab.get(&stem).is_some_and(|t| names.contains(t)) {
                    continue;
                }
                let v = table.row_vector(row);
                let mut best: Vec<(u32, f32)> = Vec::new();
                let dims = table.dims();
                for (term, &r) in self.term_row.iter().enumerate() {
                    if r == NONE || r == row {
                        continue;
                    }
                    let c = vectors::dot_i8(&self.term_emb[term * dims..(term + 1) * dims], &v)
                        * table.unit();
                    let term = term as u32;
                    if names.contains(&term) {
                        continue;
                    }
                    if c >= p.expansion_min && q.binary_search_by_key(&term, |&(t, _)| t).is_err() {
                        best.push((term, c));
                    }
                }
                best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                for &(term, c) in best.iter().take(p.expansion_k) {
                    let w = extra.entry(term).or_insert(0.0);
                    *w = w.max(p.expansion_weight * c);
                }
            }
        }
        q.extend(extra);
        q.sort_by_key(|&(t, _)| t);
    }

    fn idf(&self, term: u32) -> f32 {
        let n = self.doc_len.len() as f32;
        let df = self.postings[term as usize].len() as f32;
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }

    /// BM25 with weighted query terms, dense over turns.
    fn bm25(&self, query: &[(u32, f32)], p: &RecallParams) -> Vec<f32> {
        let mut out = vec![0.0f32; self.len()];
        let avg = (self.total_len as f32 / self.len().max(1) as f32).max(1e-6);
        for &(t, w) in query {
            let idf = self.idf(t);
            for &(doc, tf) in &self.postings[t as usize] {
                let len = self.doc_len[doc as usize] as f32;
                let tf = tf as f32;
                let norm = p.k1 * (1.0 - p.b + p.b * len / avg);
                out[doc as usize] += w * idf * tf * (p.k1 + 1.0) / (tf + norm);
            }
        }
        out
    }

    /// The final score of every turn for `query` (see the module doc); zero for turns with no
    /// evidence of relevance.
    pub fn scores(&self, query: &str, p: &RecallParams) -> Vec<f32> {
        let n = self.len();
        if n == 0 {
            return Vec::new();
        }
        let qwords = self.analyze(query);
        let mut q: Vec<(u32, f32)> = qwords
            .iter()
            .filter_map(|t| self.vocab.get(t).map(|&id| (id, 1.0)))
            .collect();
        q.sort_by_key(|&(t, _)| t);
        q.dedup_by_key(|&mut (t, _)| t);
        let original_terms = q.len();
        self.expand(query, &mut q, p);
        let mut s = self.bm25(&q, p);

        if p.prf_docs > 0 && p.prf_terms > 0 && p.prf_weight > 0.0 && !q.is_empty() {
            let top = top_k(&s, p.prf_docs);
            let max = top.first().map_or(0.0, |&(_, v)| v);
            if max > 0.0 {
                let mut votes: HashMap<u32, f32> = HashMap::new();
                for &(d, v) in &top {
                    let len = self.doc_len[d].max(1) as f32;
                    for &(t, tf) in &self.doc_terms[d] {
                        if q.binary_search_by_key(&t, |&(x, _)| x).is_ok() {
                            continue;
                        }
                        // Terms seen once in the whole conversation carry no co-occurrence signal.
                        if self.postings[t as usize].len() < 2 {
                            continue;
                        }
                        *votes.entry(t).or_insert(0.0) +=
                            (v / max) * (tf as f32 / len) * self.idf(t);
                    }
                }
                let mut exp: Vec<(u32, f32)> = votes.into_iter().collect();
                exp.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                exp.truncate(p.prf_terms);
                let total: f32 = exp.iter().map(|&(_, w)| w).sum();
                if total > 0.0 {
                    let scale = p.prf_weight * original_terms as f32 / total;
                    let expansion: Vec<(u32, f32)> =
                        exp.into_iter().map(|(t, w)| (t, w * scale)).collect();
                    let extra = self.bm25(&expansion, p);
                    for (a, b) in s.iter_mut().zip(extra) {
                        *a += b;
                    }
                }
            }
        }

        if p.speaker_boost != 1.0 && self.speakers.len() > 1 {
            let named: Vec<bool> = self
                .speakers
                .iter()
                .map(|name| !name.is_empty() && name.iter().any(|t| qwords.contains(t)))
                .collect();
            let count = named.iter().filter(|&&x| x).count();
            if count > 0 && count < named.len() {
                for (i, v) in s.iter_mut().enumerate() {
                    let sp = self.speaker[i];
                    if sp != NONE && named[sp as usize] {
                        *v *= p.speaker_boost;
                    }
                }
            }
        }

        self.smooth(&mut s, p.window);
        if p.session_weight > 0.0 {
            let max = s.iter().copied().fold(0.0f32, f32::max);
            if max > 0.0 {
                let mut sess = vec![0.0f32; self.session_ids.len()];
                for (i, &v) in s.iter().enumerate() {
                    sess[self.session[i] as usize] += v;
                }
                let smax = sess.iter().copied().fold(0.0f32, f32::max);
                if smax > 0.0 {
                    for (i, v) in s.iter_mut().enumerate() {
                        *v += p.session_weight * max * sess[self.session[i] as usize] / smax;
                    }
                }
            }
        }
        if p.semantic_weight > 0.0 {
            if let Some(mut sem) = self.semantic(&qwords) {
                self.smooth(&mut sem, p.window);
                let max = s.iter().copied().fold(0.0f32, f32::max);
                let scale = if max > 0.0 { 1.0 / max } else { 0.0 };
                for (v, m) in s.iter_mut().zip(sem) {
                    *v = *v * scale + p.semantic_weight * m;
                }
            }
        }
        s
    }

    /// Turns to put in a context of at most `budget` tokens for `query` (ids, in the order they
    /// were chosen).
    pub fn query(&self, query: &str, budget: u32, p: &RecallParams) -> Vec<usize> {
        self.fill(self.scores(query, p), budget, p)
    }

    /// Fills a context of at most `budget` tokens from per-turn scores (see [`RecallIndex::query`]).
    pub fn fill(&self, mut s: Vec<f32>, budget: u32, p: &RecallParams) -> Vec<usize> {
        if p.token_exponent != 0.0 {
            for (v, &t) in s.iter_mut().zip(&self.tokens) {
                *v /= (t.max(1) as f32).powf(p.token_exponent);
            }
        }
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by(|&a, &b| s[b].total_cmp(&s[a]).then(b.cmp(&a)));
        let mut fill = Fill::with_tokens(&self.tokens, budget);
        for &i in &order {
            if s[i] <= 0.0 && !p.backfill {
                break;
            }
            if fill.used >= fill.budget {
                break;
            }
            if fill.add(i) && p.neighbours && s[i] > 0.0 {
                if i > 0 && self.session[i - 1] == self.session[i] {
                    fill.add(i - 1);
                }
                if i + 1 < self.len() && self.session[i + 1] == self.session[i] {
                    fill.add(i + 1);
                }
            }
        }
        fill.out
    }
}

/// The `k` best (turn, score) pairs with a positive score, best first, ties by the lower turn.
fn top_k(s: &[f32], k: usize) -> Vec<(usize, f32)> {
    let mut v: Vec<(usize, f32)> = s
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, x)| x > 0.0)
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(k);
    v
}

/// A context being filled greedily under a token budget: the turns taken so far, in the order
/// they were taken, and their tokens. [`RecallIndex::fill`] fills with it; so do the strategies
/// of the evidence benchmark (crate `memlens-evidence`), which is why it is public.
#[derive(Debug, Clone)]
pub struct Fill<'c> {
    tokens: &'c [u32],
    /// The budget, in tokens.
    pub budget: u64,
    /// Tokens of the turns taken so far.
    pub used: u64,
    taken: Vec<bool>,
    /// The turns taken, in the order they were added.
    pub out: Vec<usize>,
}

impl<'c> Fill<'c> {
    /// An empty context of at most `budget` tokens over turns costing `tokens` (turn `i` costs
    /// `tokens[i]`).
    pub fn with_tokens(tokens: &'c [u32], budget: u32) -> Fill<'c> {
        Fill {
            tokens,
            budget: u64::from(budget),
            used: 0,
            taken: vec![false; tokens.len()],
            out: Vec::new(),
        }
    }

    /// Adds turn `i` if it is not in yet and fits; true when it is in the context afterwards.
    pub fn add(&mut self, i: usize) -> bool {
        if self.taken[i] {
            return true;
        }
        let cost = u64::from(self.tokens[i]);
        if self.used + cost > self.budget {
            return false;
        }
        self.used += cost;
        self.taken[i] = true;
        self.out.push(i);
        true
    }
}
