//! Scoring: the scored questions of the conversations, each builder's contexts for them at a
//! budget, and the all-evidence rate and turn recall that make a [`Row`].

use crate::{ContextBuilder, Conversation, SCORED_CATEGORIES};
use memlens_core::Trace;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
