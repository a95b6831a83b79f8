//! The evidence benchmark: does a context strategy keep the turns a question needs?
//!
//! A crate of its own, outside `memlens-core`: the benchmark drives the policy engine
//! ([`PolicyBuilder`]) and MemLens recall ([`recall::MemLensRecall`]), while the engine itself
//! only needs the core's [`memlens_core::recall::RecallIndex`]; keeping the benchmark here keeps
//! the core free of a `policy -> recall -> benchmark -> policy` cycle. Pure like the core: no I/O
//! and no clock; hosts (`memlens bench-evidence`) read the files and time the runs.
//!
//! Each question of a conversation (a [`Probe`], e.g. LoCoMo QA) arrives after the last turn. A
//! [`ContextBuilder`] picks turns for a context of at most `budget` tokens, seeing only the
//! conversation and the question text. A question is answered when **every** evidence turn is in
//! the context (`all_evidence`); `turn_recall` is the share of its evidence turns in the context.
//! Both are averaged over questions (macro), overall and per question category.
//!
//! Scored questions are those in categories 1-4 (LoCoMo's 5 is adversarial) with at least one
//! evidence id that resolves to a turn. Evidence strings are split on `;`, `,` and whitespace
//! (LoCoMo writes a few as `"D9:1 D4:4 D4:6"`); ids matching no turn are ignored. On LoCoMo
//! that scores 1,535 of the 1,540 category 1-4 questions (4 have no evidence, 1 only `D30:05`).
//!
//! A turn is rendered as `"{speaker}: {content}"` (the content keeps the importer's
//! `[shares a photo: ...]` caption) and costs the tokens of that text in the trace's encoding
//! (o200k when the trace names no model), with no chat framing. BM25 indexes the same text.
//!
//! ```
//! use memlens_core::builder::{Message, TraceBuilder};
//! use memlens_core::{ChunkMeta, Probe};
//! use memlens_evidence::{self as evidence, Bm25, ContextBuilder, Oracle, Recency};
//!
//! let mut b = TraceBuilder::new("conv", "locomo");
//! let turns = [
//!     ("Ann", "I adopted a cat named Pixel last week."),
//!     ("Bo", "Lovely. The weather in Lisbon is sunny and warm today."),
//!     ("Ann", "I am going hiking in the mountains with my sister tomorrow."),
//! ];
//! for (i, (who, text)) in turns.iter().enumerate() {
//!     let mut m = Message::text("user", *text);
//!     m.name = Some(who.to_string());
//!     m.meta = ChunkMeta { dia_id: Some(format!("D1:{}", i + 1)), ..ChunkMeta::default() };
//!     b.push_message(m, None);
//! }
//! b.push_probe(Probe {
//!     question: "What is the name of Ann's cat?".into(),
//!     answer: Some("Pixel".into()),
//!     evidence: vec!["D1:1".into()],
//!     evidence_chunks: vec![],
//!     category: Some(4),
//! });
//! let (trace, _) = b.finish();
//!
//! let mut builders: Vec<Box<dyn ContextBuilder>> =
//!     vec![Box::new(Recency), Box::new(Bm25::new()), Box::new(Oracle)];
//! let rows = evidence::run(&[trace], &mut builders, &[16]);
//! let rate = |name: &str| rows.iter().find(|r| r.policy == name).map(|r| r.all_evidence);
//! assert_eq!(rows[0].questions, 1);
//! assert_eq!(rate("recency"), Some(0.0)); // 16 tokens hold only the newest turn
//! assert_eq!(rate("bm25"), Some(1.0)); // "cat" finds the first turn
//! assert_eq!(rate("oracle"), Some(1.0));
//! ```

pub mod recall;

use memlens_core::recall::Fill;
use memlens_core::retrieval::Bm25Index;
use memlens_core::text::{is_cjk_word, words};
use memlens_core::tokens::TokenCounter;
use memlens_core::{Chunk, ChunkId, Probe, Trace};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// The question categories scored (LoCoMo, as commonly read: 1 multi-hop, 2 temporal,
/// 3 open-domain, 4 single-hop; 5, adversarial, is left out).
pub const SCORED_CATEGORIES: [u32; 4] = [1, 2, 3, 4];

/// A reference result measured independently on LoCoMo (`locomo10.json`, o200k tokens): the
/// all-evidence rate at each of [`ANCHOR_BUDGETS`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Anchor {
    /// The strategy, as the reference names it.
    pub strategy: &'static str,
    /// The builder here that reproduces it ([`ContextBuilder::name`]); `None` when it cannot run
    /// here.
    pub reproduced_by: Option<&'static str>,
    /// All-evidence rates at 1000, 2000, 4000 and 8000 tokens.
    pub all_evidence: [f64; 4],
}

/// The budgets of [`ANCHORS`].
pub const ANCHOR_BUDGETS: [u32; 4] = [1000, 2000, 4000, 8000];

/// Reference all-evidence rates on LoCoMo. The dense row (MiniLM embeddings) needs a neural
/// model and is quoted only, never run.
pub const ANCHORS: [Anchor; 4] = [
    Anchor {
        strategy: "recency (keep the newest turns)",
        reproduced_by: Some("recency"),
        all_evidence: [0.041, 0.085, 0.173, 0.339],
    },
    Anchor {
        strategy: "BM25 over turns, question as query",
        reproduced_by: Some("bm25"),
        all_evidence: [0.560, 0.631, 0.679, 0.768],
    },
    Anchor {
        strategy: "BM25 + adjacent turns",
        reproduced_by: Some("bm25-adjacent"),
        all_evidence: [0.623, 0.683, 0.752, 0.819],
    },
    Anchor {
        strategy: "dense retrieval (MiniLM)",
        reproduced_by: None,
        all_evidence: [0.556, 0.651, 0.775, 0.907],
    },
];

/// A strategy that builds a context for one question.
pub trait ContextBuilder {
    /// The name shown in results (`recency`, `bm25`, ...).
    fn name(&self) -> String;
    /// Indices into `conv.turns` (the conversation's turns, in order) to put in context; their
    /// total [`Conversation::tokens`] must be at most `budget`. Order does not matter; duplicates
    /// and out-of-range indices are ignored when scoring.
    fn build(&mut self, conv: &Conversation<'_>, question: &str, budget: u32) -> Vec<usize>;
}

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
fn verbatim(text: &str) -> String {
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
fn empty_context<'c>(conv: &'c Conversation<'_>, budget: u32) -> Fill<'c> {
    Fill::with_tokens(&conv.tokens, budget)
}

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

/// Scores of one category (or of all questions).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CategoryScore {
    /// Questions scored.
    pub questions: usize,
    /// Share of questions whose every evidence turn is in the context.
    pub all_evidence: f64,
    /// Evidence-turn recall, macro-averaged: the mean over questions of the share of their
    /// evidence turns in the context.
    pub turn_recall: f64,
}

/// The result of one strategy at one budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The strategy's name.
    pub policy: String,
    /// The token budget.
    pub budget: u32,
    /// Questions scored.
    pub questions: usize,
    /// Share of questions whose every evidence turn is in the context.
    pub all_evidence: f64,
    /// Evidence-turn recall, macro-averaged over questions.
    pub turn_recall: f64,
    /// Mean tokens of the contexts built.
    pub mean_context_tokens: f64,
    /// Contexts over the budget (a builder bug; 0 for the built-in strategies).
    pub over_budget: usize,
    /// Scores per question category (`"1"` to `"4"`).
    pub by_category: BTreeMap<String, CategoryScore>,
    /// All-evidence rate per conversation, in [`Benchmark::conversations`] order: whether a
    /// strategy's gain holds in every conversation, not only on average.
    pub by_conversation: Vec<f64>,
}

/// A scored question.
#[derive(Debug, Clone, PartialEq)]
pub struct Question<'a> {
    /// Index of its conversation in [`Benchmark::conversations`].
    pub conversation: usize,
    /// The question text (all a builder sees).
    pub text: &'a str,
    /// Its category.
    pub category: u32,
    /// Its evidence turns: indices into the conversation's turns, ascending.
    pub evidence: Vec<usize>,
}

/// Conversations and scored questions, prepared once and run for any builder and budget.
#[derive(Debug, Clone)]
pub struct Benchmark<'a> {
    conversations: Vec<Conversation<'a>>,
    questions: Vec<Question<'a>>,
}

#[derive(Default, Clone)]
struct Tally {
    questions: usize,
    all: usize,
    recall: f64,
}

impl Tally {
    fn add(&mut self, all: bool, recall: f64) {
        self.questions += 1;
        self.all += usize::from(all);
        self.recall += recall;
    }

    fn score(&self) -> CategoryScore {
        let n = self.questions.max(1) as f64;
        CategoryScore {
            questions: self.questions,
            all_evidence: self.all as f64 / n,
            turn_recall: self.recall / n,
        }
    }
}

impl<'a> Benchmark<'a> {
    /// Prepares every trace (see [`Conversation::new`]) and selects the scored questions: category
    /// 1-4 with at least one evidence turn.
    pub fn new(traces: &'a [Trace]) -> Benchmark<'a> {
        let mut conversations = Vec::with_capacity(traces.len());
        let mut questions = Vec::new();
        for (c, trace) in traces.iter().enumerate() {
            let conv = Conversation::new(trace);
            for probe in &trace.probes {
                let Some(category) = probe.category.filter(|c| SCORED_CATEGORIES.contains(c))
                else {
                    continue;
                };
                let evidence = conv.evidence(probe);
                if evidence.is_empty() {
                    continue;
                }
                questions.push(Question {
                    conversation: c,
                    text: &probe.question,
                    category,
                    evidence,
                });
            }
            conversations.push(conv);
        }
        Benchmark {
            conversations,
            questions,
        }
    }

    /// The prepared conversations, in trace order.
    pub fn conversations(&self) -> &[Conversation<'a>] {
        &self.conversations
    }

    /// The scored questions, in trace then probe order.
    pub fn questions(&self) -> &[Question<'a>] {
        &self.questions
    }

    /// The context `builder` builds for question `q` at `budget`.
    pub fn context(
        &self,
        builder: &mut dyn ContextBuilder,
        q: &Question<'_>,
        budget: u32,
    ) -> Vec<usize> {
        builder.build(&self.conversations[q.conversation], q.text, budget)
    }

    /// Runs one builder at one budget over every scored question.
    pub fn row(&self, builder: &mut dyn ContextBuilder, budget: u32) -> Row {
        let mut total = Tally::default();
        let mut by_category: BTreeMap<u32, Tally> = SCORED_CATEGORIES
            .iter()
            .map(|&c| (c, Tally::default()))
            .collect();
        let mut context_tokens = 0u64;
        let mut over_budget = 0;
        let mut by_conversation = vec![Tally::default(); self.conversations.len()];
        for q in &self.questions {
            let conv = &self.conversations[q.conversation];
            let context = builder.build(conv, q.text, budget);
            let tokens = conv.context_tokens(&context);
            context_tokens += tokens;
            over_budget += usize::from(tokens > u64::from(budget));
            let mut inside = vec![false; conv.len()];
            for &i in &context {
                if let Some(slot) = inside.get_mut(i) {
                    *slot = true;
                }
            }
            let hits = q.evidence.iter().filter(|&&i| inside[i]).count();
            let all = hits == q.evidence.len();
            let recall = hits as f64 / q.evidence.len() as f64;
            total.add(all, recall);
            by_category.entry(q.category).or_default().add(all, recall);
            by_conversation[q.conversation].add(all, recall);
        }
        let overall = total.score();
        Row {
            policy: builder.name(),
            budget,
            questions: overall.questions,
            all_evidence: overall.all_evidence,
            turn_recall: overall.turn_recall,
            mean_context_tokens: context_tokens as f64 / self.questions.len().max(1) as f64,
            over_budget,
            by_category: by_category
                .into_iter()
                .map(|(c, t)| (c.to_string(), t.score()))
                .collect(),
            by_conversation: by_conversation
                .iter()
                .map(|t| t.score().all_evidence)
                .collect(),
        }
    }
}

/// A MemLens policy as a context builder. The conversation is replayed through the policy
/// engine the way a live agent would run it (every agent turn is a call, and the engine decides
/// the context each time, so what it evicted along the way stays evicted unless its archive brings
/// it back); then the question is asked as the current query. Turns cost what
/// [`Conversation::tokens`] says, like every other row. The replay is done once per conversation
/// and budget and cloned for each question.
pub struct PolicyBuilder {
    config: memlens_core::policy::PolicyConfig,
    replayed: HashMap<(String, u32), (memlens_core::policy::Engine, HashMap<ChunkId, usize>)>,
}

impl PolicyBuilder {
    /// A builder for a policy.
    pub fn new(config: memlens_core::policy::PolicyConfig) -> PolicyBuilder {
        PolicyBuilder {
            config,
            replayed: HashMap::new(),
        }
    }

    fn replay(
        &self,
        conv: &Conversation<'_>,
        budget: u32,
    ) -> Result<memlens_core::policy::Engine, memlens_core::policy::PolicyError> {
        use memlens_core::policy::{Engine, EngineOptions};
        let mut engine = Engine::new(
            self.config.clone(),
            EngineOptions {
                // The engine counts the reply priming; the benchmark counts turns only.
                budget: budget + memlens_core::tokens::REPLY_PRIMING_TOKENS,
                input_usd_per_mtok: None,
            },
            TokenCounter::for_model(conv.trace.main_model()),
        )?;
        let turn: HashMap<ChunkId, usize> = conv
            .turns
            .iter()
            .enumerate()
            .map(|(i, &c)| (c, i))
            .collect();
        let as_turn = |id: ChunkId| -> Option<Chunk> {
            let i = *turn.get(&id)?;
            let mut c = conv.trace.chunk(id).clone();
            c.content = render_turn(&c);
            c.tokens = conv.tokens[i];
            c.content_tokens = conv.tokens[i];
            Some(c)
        };
        for call in &conv.trace.calls {
            for &id in &call.input {
                if let Some(c) = as_turn(id) {
                    engine.add(&c);
                }
            }
            let _ = engine.context(None);
        }
        // The turns after the last call (the conversation's last words) are in memory too.
        for &id in &conv.turns {
            if let Some(c) = as_turn(id) {
                engine.add(&c);
            }
        }
        Ok(engine)
    }
}

impl ContextBuilder for PolicyBuilder {
    fn name(&self) -> String {
        self.config.name.clone()
    }

    fn build(&mut self, conv: &Conversation<'_>, question: &str, budget: u32) -> Vec<usize> {
        let key = (conv.trace.id.clone(), budget);
        if !self.replayed.contains_key(&key) {
            let Ok(engine) = self.replay(conv, budget) else {
                return Vec::new();
            };
            let turn = conv
                .turns
                .iter()
                .enumerate()
                .map(|(i, &c)| (c, i))
                .collect();
            self.replayed.insert(key.clone(), (engine, turn));
        }
        let Some((engine, turn)) = self.replayed.get(&key) else {
            return Vec::new();
        };
        let mut engine = engine.clone();
        let decision = engine.context(Some(question));
        let mut context: Vec<usize> = decision
            .chunk_ids()
            .filter_map(|id| turn.get(&id).copied())
            .collect();
        // Protected turns (the newest messages) can exceed a tiny budget: drop the oldest.
        while conv.context_tokens(&context) > u64::from(budget) && !context.is_empty() {
            context.remove(0);
        }
        context
    }
}

/// Runs every builder at every budget over the traces' scored questions; rows in builder order,
/// then budget order. Deterministic for deterministic builders.
pub fn run(
    traces: &[Trace],
    builders: &mut [Box<dyn ContextBuilder>],
    budgets: &[u32],
) -> Vec<Row> {
    let bench = Benchmark::new(traces);
    let mut rows = Vec::with_capacity(builders.len() * budgets.len());
    for builder in builders.iter_mut() {
        for &budget in budgets {
            rows.push(bench.row(builder.as_mut(), budget));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlens_core::builder::{Message, TraceBuilder};
    use memlens_core::ChunkMeta;

    fn conversation(turns: &[(&str, &str)], probes: Vec<Probe>) -> Trace {
        let mut b = TraceBuilder::new("t", "locomo");
        for (i, (who, text)) in turns.iter().enumerate() {
            let mut m = Message::text("user", *text);
            m.name = Some(who.to_string());
            m.meta = ChunkMeta {
                dia_id: Some(format!("D1:{}", i + 1)),
                ..ChunkMeta::default()
            };
            b.push_message(m, None);
        }
        for p in probes {
            b.push_probe(p);
        }
        b.finish().0
    }

    fn probe(q: &str, evidence: &[&str], category: u32) -> Probe {
        Probe {
            question: q.into(),
            answer: None,
            evidence: evidence.iter().map(|s| s.to_string()).collect(),
            evidence_chunks: Vec::new(),
            category: Some(category),
        }
    }

    const TURNS: [(&str, &str); 5] = [
        ("Ann", "I adopted a cat named Pixel."),
        ("Bo", "Wonderful news about the kitten!"),
        ("Ann", "We went to Lisbon in May."),
        ("Bo", "Lisbon is lovely in spring."),
        ("Ann", "Work has been busy lately."),
    ];

    #[test]
    fn evidence_splits_on_whitespace_and_skips_unknown_ids() {
        let t = conversation(&TURNS, vec![probe("q", &["D1:1 D1:3", "D1:9;D1:4"], 1)]);
        let conv = Conversation::new(&t);
        assert_eq!(conv.evidence(&t.probes[0]), vec![0, 2, 3]);
    }

    #[test]
    fn only_resolvable_category_1_to_4_questions_are_scored() {
        let t = conversation(
            &TURNS,
            vec![
                probe("a", &["D1:1"], 1),
                probe("b", &["D1:1"], 5),
                probe("c", &[], 2),
                probe("d", &["D30:05"], 3),
            ],
        );
        let traces = [t];
        let bench = Benchmark::new(&traces);
        assert_eq!(bench.questions().len(), 1);
        assert_eq!(bench.questions()[0].text, "a");
    }

    #[test]
    fn builders_respect_the_budget_and_the_oracle_finds_everything_that_fits() {
        let t = conversation(
            &TURNS,
            vec![
                probe("What is the name of Ann's cat?", &["D1:1"], 4),
                probe("When did they go to Lisbon?", &["D1:3", "D1:4"], 2),
            ],
        );
        let traces = [t];
        let bench = Benchmark::new(&traces);
        let conv = &bench.conversations()[0];
        let all: u32 = conv.tokens.iter().sum();
        let mut builders: Vec<Box<dyn ContextBuilder>> = vec![
            Box::new(Recency),
            Box::new(Bm25::new()),
            Box::new(Bm25::adjacent()),
            Box::new(Bm25::new().with_analyzer(Analyzer::Terms)),
            Box::new(Oracle),
        ];
        for budget in 0..=all + 1 {
            for b in builders.iter_mut() {
                for q in bench.questions() {
                    let ctx = bench.context(b.as_mut(), q, budget);
                    assert!(
                        conv.context_tokens(&ctx) <= u64::from(budget),
                        "{}",
                        b.name()
                    );
                }
            }
        }
        let rows = run(&traces, &mut builders, &[all]);
        assert!(rows
            .iter()
            .all(|r| r.all_evidence == 1.0 || r.policy.starts_with("bm25")));
        let oracle = rows
            .iter()
            .find(|r| r.policy == "oracle")
            .expect("oracle row");
        assert_eq!(oracle.by_category["2"].questions, 1);
        assert_eq!(oracle.by_category["1"].questions, 0);
    }

    #[test]
    fn bm25_adjacent_brings_the_neighbours() {
        let t = conversation(&TURNS, vec![]);
        let conv = Conversation::new(&t);
        let mut ctx = Bm25::adjacent().build(&conv, "Pixel", 1000);
        ctx.sort_unstable();
        assert_eq!(ctx, vec![0, 1]);
        assert_eq!(Bm25::new().build(&conv, "Pixel", 1000), vec![0]);
        // Stop words count with the word analyzer, not with MemLens' terms.
        assert!(!Bm25::new().build(&conv, "the", 1000).is_empty());
        let mut terms = Bm25::new().with_analyzer(Analyzer::Terms);
        assert!(terms.build(&conv, "the", 1000).is_empty());
        assert_eq!(terms.name(), "bm25-terms");
    }

    #[test]
    fn verbatim_words_survive_the_analyzer() {
        let v = verbatim("The Flights were booked!");
        assert_eq!(
            memlens_core::text::terms(&v),
            vec!["the_", "flights_", "were_", "booked_"]
        );
        let v = verbatim("The 航班已预订");
        assert_eq!(
            memlens_core::text::terms(&v),
            vec!["the_", "航班", "班已", "已预", "预订"]
        );
    }
}
