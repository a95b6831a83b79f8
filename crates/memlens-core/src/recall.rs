//! Lexical memory recall: which past turns to bring back into a context of `budget` tokens for a
//! query, with no neural model (see `docs/recall.md`).
//!
//! [`RecallIndex`] is an incremental index over turns (add a turn at any time, no rebuild). A
//! query is answered in five steps, each an ingredient that [`RecallParams`] can switch off:
//!
//! 1. **BM25** over MemLens' terms ([`crate::text::terms`]: stop words out, light stemming) of
//!    the rendered turn (`speaker: content`).
//! 2. **Pseudo-relevance feedback** (RM3-style): the best turns of the first pass vote for their
//!    own terms (weighted by the turn's normalized score, the term's share of the turn and its
//!    idf); the best new terms join the query with a total weight that is a fixed share of the
//!    original query's, and BM25 runs again.
//! 3. **Speaker cue**: when a question names some but not all of the conversation's speakers,
//!    the named speakers' turns get a boost.
//! 4. **Passage smoothing**: a turn also gains the lexical score of each neighbour turn of the
//!    same session (it is scored as the three-turn passage centred on it), since a fact is often
//!    split between a question and its reply.
//! 5. **Session prior** (off by default: neutral once passages are scored): a turn also scores
//!    by how relevant its session is (the session's summed turn scores, normalized).
//!
//! The budget is then filled greedily by final score; every hit brings its neighbour turns of the
//! same session (the turn before, then the turn after, each if it fits), since a turn's evidence
//! is often its question or its reply. When the scored turns run out, the rest of the budget is
//! filled by the same score (newest first among turns sharing no term, unless the session prior
//! ranks them).
//!
//! Pure and deterministic: no I/O, no clock, no hashing order in results.

use crate::evidence::{render_turn, ContextBuilder, Conversation, Fill};
use crate::text::terms;
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
}

const NONE: u32 = u32::MAX;

impl RecallIndex {
    /// An empty index.
    pub fn new() -> RecallIndex {
        RecallIndex::default()
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
        for t in terms(text) {
            let next = self.vocab.len() as u32;
            let tid = *self.vocab.entry(t).or_insert(next);
            if tid as usize == self.postings.len() {
                self.postings.push(Vec::new());
            }
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
        let sp = match speaker {
            Some(name) if !name.trim().is_empty() => {
                let key = name.trim().to_lowercase();
                let next = self.speaker_ids.len() as u32;
                let sid = *self.speaker_ids.entry(key).or_insert(next);
                if sid as usize == self.speakers.len() {
                    self.speakers.push(terms(name));
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
        let qwords = terms(query);
        let mut q: Vec<(u32, f32)> = qwords
            .iter()
            .filter_map(|t| self.vocab.get(t).map(|&id| (id, 1.0)))
            .collect();
        q.sort_by_key(|&(t, _)| t);
        q.dedup_by_key(|&mut (t, _)| t);
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
                    let scale = p.prf_weight * q.len() as f32 / total;
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

        if p.window > 0.0 {
            let base = s.clone();
            for i in 0..n {
                let mut extra = 0.0;
                if i > 0 && self.session[i - 1] == self.session[i] {
                    extra += base[i - 1];
                }
                if i + 1 < n && self.session[i + 1] == self.session[i] {
                    extra += base[i + 1];
                }
                s[i] += p.window * extra;
            }
        }
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
        s
    }

    /// Turns to put in a context of at most `budget` tokens for `query` (ids, in the order they
    /// were chosen).
    pub fn query(&self, query: &str, budget: u32, p: &RecallParams) -> Vec<usize> {
        let mut s = self.scores(query, p);
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

/// Builds the [`RecallIndex`] of a benchmark conversation: each turn rendered as in context
/// ([`render_turn`]), its speaker, its session (the session date, else the `D<n>` prefix of its
/// dialogue id) and its token cost.
pub fn index_conversation(conv: &Conversation<'_>) -> RecallIndex {
    let mut ix = RecallIndex::new();
    for i in 0..conv.len() {
        let chunk = conv.turn(i);
        let session = chunk.meta.session_date.as_deref().or_else(|| {
            chunk
                .meta
                .dia_id
                .as_deref()
                .and_then(|d| d.split(':').next())
        });
        ix.add(
            &render_turn(chunk),
            chunk.meta.speaker.as_deref(),
            session,
            conv.tokens[i],
        );
    }
    ix
}

/// MemLens recall as a benchmark [`ContextBuilder`]: one [`RecallIndex`] per conversation (cached
/// by trace id), queried with the question.
#[derive(Debug, Clone, Default)]
pub struct MemLensRecall {
    name: String,
    params: RecallParams,
    cache: HashMap<String, RecallIndex>,
}

impl MemLensRecall {
    /// The MemLens recall policy ([`RecallParams::default`]), named `memlens-recall`.
    pub fn new() -> MemLensRecall {
        MemLensRecall::with_params("memlens-recall", RecallParams::default())
    }

    /// A variant with its own name and parameters (ablations).
    pub fn with_params(name: &str, params: RecallParams) -> MemLensRecall {
        MemLensRecall {
            name: name.to_string(),
            params,
            cache: HashMap::new(),
        }
    }

    /// The ablations: the policy without each ingredient, with the speaker cue, and with
    /// nothing but BM25-terms plus same-session neighbours (`memlens-recall bare`).
    pub fn ablations() -> Vec<MemLensRecall> {
        let d = RecallParams::default();
        let bare = RecallParams {
            prf_docs: 0,
            session_weight: 0.0,
            window: 0.0,
            backfill: false,
            ..d
        };
        vec![
            MemLensRecall::with_params("memlens-recall bare", bare),
            MemLensRecall::with_params("memlens-recall -prf", RecallParams { prf_docs: 0, ..d }),
            MemLensRecall::with_params(
                "memlens-recall +session",
                RecallParams {
                    session_weight: 0.3,
                    ..d
                },
            ),
            MemLensRecall::with_params("memlens-recall -window", RecallParams { window: 0.0, ..d }),
            MemLensRecall::with_params(
                "memlens-recall -neighbours",
                RecallParams {
                    neighbours: false,
                    ..d
                },
            ),
            MemLensRecall::with_params(
                "memlens-recall +speaker",
                RecallParams {
                    speaker_boost: 1.5,
                    ..d
                },
            ),
        ]
    }

    /// The policy or one of its [`MemLensRecall::ablations`], by name.
    pub fn variant(name: &str) -> Option<MemLensRecall> {
        std::iter::once(MemLensRecall::new())
            .chain(MemLensRecall::ablations())
            .find(|b| b.name == name)
    }

    /// The parameters.
    pub fn params(&self) -> RecallParams {
        self.params
    }
}

impl ContextBuilder for MemLensRecall {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn build(&mut self, conv: &Conversation<'_>, question: &str, budget: u32) -> Vec<usize> {
        let ix = self
            .cache
            .entry(conv.trace.id.clone())
            .or_insert_with(|| index_conversation(conv));
        if ix.len() != conv.len() {
            *ix = index_conversation(conv);
        }
        ix.query(question, budget, &self.params)
    }
}
