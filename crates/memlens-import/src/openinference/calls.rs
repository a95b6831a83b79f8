//! Which LLM spans are calls, and which conversation each belongs to.
//!
//! - One call recorded by two instrumentations (LangChain's span and, nested in it, the provider
//!   SDK's) is one call: an LLM span holding another LLM span is a wrapper, and the innermost span
//!   with messages is kept (the provider's request as sent, with its token counts); the wrapper's
//!   usage and model fill what it lacks. Copies that are siblings (no parent recorded) are found
//!   by their messages and overlapping times.
//! - One export may hold several conversations under one session or trace (two agents, or one
//!   agent run twice): calls are split by agent (`agent.name`, else the nearest `AGENT` span), then
//!   by continuity, as [`crate::logs::build_traces`] groups request logs: a call continues the
//!   conversation it resends messages of, else starts a new one.

use crate::logs::LoggedCall;
use crate::otel::Span;
use memlens_core::builder::Message;
use memlens_core::Usage;
use std::collections::{HashMap, HashSet};

/// The spans of an export, with their parent links.
pub(super) struct Tree<'a> {
    spans: &'a [Span],
    by_id: HashMap<(&'a str, &'a str), usize>,
}

impl<'a> Tree<'a> {
    pub(super) fn new(spans: &'a [Span]) -> Tree<'a> {
        let by_id = spans
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.span_id.is_empty())
            .map(|(i, s)| ((s.trace_id.as_str(), s.span_id.as_str()), i))
            .collect();
        Tree { spans, by_id }
    }

    pub(super) fn span(&self, i: usize) -> &Span {
        &self.spans[i]
    }

    /// The span's ancestors, nearest first (a cycle in bad input ends the walk).
    pub(super) fn ancestors(&self, i: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = i;
        while let Some(parent) = self.parent(at) {
            if parent == i || out.contains(&parent) || out.len() > self.spans.len() {
                break;
            }
            out.push(parent);
            at = parent;
        }
        out
    }

    fn parent(&self, i: usize) -> Option<usize> {
        let span = &self.spans[i];
        let parent = span.parent_span_id.as_deref()?;
        self.by_id.get(&(span.trace_id.as_str(), parent)).copied()
    }

    /// The first of the span and its ancestors that has `key`, as text.
    pub(super) fn inherited(&self, i: usize, key: &str) -> Option<String> {
        std::iter::once(i)
            .chain(self.ancestors(i))
            .find_map(|a| self.spans[a].attr_text(key))
    }

    /// The agent a span works for: its `agent.name`, else its nearest `AGENT` span's name.
    pub(super) fn agent(&self, i: usize) -> Option<String> {
        if let Some(name) = self.spans[i].attr_text("agent.name") {
            return Some(name);
        }
        self.ancestors(i).into_iter().find_map(|a| {
            let span = &self.spans[a];
            let kind = span.attr_str("openinference.span.kind")?;
            kind.trim().eq_ignore_ascii_case("AGENT").then(|| {
                span.attr_text("agent.name")
                    .or_else(|| span.attr_text("graph.node.id"))
                    .unwrap_or_else(|| span.name.clone())
            })
        })
    }
}

/// An LLM span: its call when it has messages, else only its usage and model.
pub(super) struct Candidate {
    pub(super) span: usize,
    pub(super) start: Option<u64>,
    pub(super) agent: Option<String>,
    pub(super) call: LoggedCall,
    pub(super) has_content: bool,
}

/// Folds LLM spans nested in one another into the innermost with messages. Returns the calls
/// kept, the number of spans folded (duplicates) and the contentless spans left on their own.
pub(super) fn fold_nested(
    candidates: Vec<Candidate>,
    tree: &Tree<'_>,
) -> (Vec<Candidate>, usize, usize) {
    let index: HashMap<usize, usize> = candidates
        .iter()
        .enumerate()
        .map(|(c, cand)| (cand.span, c))
        .collect();
    // For each candidate, the candidates nested in it that have content.
    let mut inner: Vec<Vec<usize>> = vec![Vec::new(); candidates.len()];
    let mut outer: Vec<Option<usize>> = vec![None; candidates.len()];
    for (c, cand) in candidates.iter().enumerate() {
        let ancestors: Vec<usize> = tree
            .ancestors(cand.span)
            .into_iter()
            .filter_map(|a| index.get(&a).copied())
            .collect();
        outer[c] = ancestors
            .iter()
            .copied()
            .find(|&a| candidates[a].has_content);
        if cand.has_content {
            for a in ancestors {
                inner[a].push(c);
            }
        }
    }
    let is_kept: Vec<bool> = candidates
        .iter()
        .zip(&inner)
        .map(|(cand, nested)| cand.has_content && nested.is_empty())
        .collect();
    let kept = |c: usize| is_kept[c];
    // Where each folded span goes: its one kept inner call, else the kept call it is nested in.
    let mut into: Vec<Option<(usize, bool)>> = vec![None; candidates.len()];
    let (mut folded, mut alone) = (0, 0);
    for c in (0..candidates.len()).filter(|&c| !kept(c)) {
        let kept_inner: Vec<usize> = inner[c].iter().copied().filter(|&i| kept(i)).collect();
        let target = match (kept_inner.as_slice(), outer[c]) {
            ([one], _) => Some((*one, false)),
            // A wrapper around several calls (retries): nothing of it to give to one of them.
            (_, _) if !kept_inner.is_empty() => None,
            (_, Some(o)) if kept(o) => Some((o, true)),
            _ => {
                if !candidates[c].has_content {
                    alone += 1;
                    continue;
                }
                None
            }
        };
        folded += 1;
        into[c] = target;
    }
    let mut slots: Vec<Option<Candidate>> = candidates.into_iter().map(Some).collect();
    for c in 0..slots.len() {
        let Some((target, is_inner)) = into[c] else {
            continue;
        };
        if let Some(from) = slots[c].take() {
            if let Some(to) = slots[target].as_mut() {
                merge(&mut to.call, from.call, is_inner);
            }
        }
    }
    let out = slots
        .into_iter()
        .enumerate()
        .filter_map(|(c, slot)| slot.filter(|_| kept(c)))
        .collect();
    (out, folded, alone)
}

/// Fills `kept` with what `other` (the same call, recorded by another span) knows better: the
/// provider's span (`other_is_inner`) has the usage and the model as answered.
fn merge(kept: &mut LoggedCall, other: LoggedCall, other_is_inner: bool) {
    let has_usage = |c: &LoggedCall| c.info.usage.as_ref().is_some_and(|u| !u.is_empty());
    if has_usage(&other) && (other_is_inner || !has_usage(kept)) {
        kept.info.usage = other.info.usage;
    }
    kept.info.model = match other_is_inner {
        true => other.info.model.or(kept.info.model.take()),
        false => kept.info.model.take().or(other.info.model),
    };
    if kept.group.is_none() {
        kept.group = other.group;
    }
}

/// Copies that are siblings: in one group, the same messages at overlapping times. The first is
/// kept, with the copy's usage and model when it has none; returns how many were dropped.
pub(super) fn drop_sibling_copies(calls: &mut Vec<Candidate>) -> usize {
    let mut out: Vec<Candidate> = Vec::with_capacity(calls.len());
    let mut last_in_group: HashMap<Option<String>, usize> = HashMap::new();
    let mut dropped = 0;
    for cand in calls.drain(..) {
        if let Some(&i) = last_in_group.get(&cand.call.group) {
            let kept = &mut out[i].call;
            if same_messages(kept, &cand.call) && overlaps(kept, &cand.call) {
                if kept.info.usage.as_ref().is_none_or(Usage::is_empty) {
                    kept.info.usage = cand.call.info.usage;
                }
                kept.info.model = kept.info.model.take().or(cand.call.info.model);
                if cand.call.input.len() > kept.input.len() {
                    kept.input = cand.call.input;
                }
                dropped += 1;
                continue;
            }
        }
        last_in_group.insert(cand.call.group.clone(), out.len());
        out.push(cand);
    }
    *calls = out;
    dropped
}

fn hashes(messages: &[Message]) -> Vec<u64> {
    messages
        .iter()
        .filter(|m| !m.unframed)
        .map(Message::identity_hash)
        .collect()
}

/// Same messages, tool definitions aside (one instrumentation may record them, the other not).
fn same_messages(a: &LoggedCall, b: &LoggedCall) -> bool {
    hashes(&a.input) == hashes(&b.input) && hashes(&a.output) == hashes(&b.output)
}

fn overlaps(a: &LoggedCall, b: &LoggedCall) -> bool {
    let nanos = |t: &Option<String>| t.as_deref().and_then(|t| t.parse::<u64>().ok());
    match (
        nanos(&a.info.started_at),
        nanos(&a.info.ended_at),
        nanos(&b.info.started_at),
    ) {
        (Some(start), Some(end), Some(other)) => other >= start && other <= end,
        _ => false,
    }
}

/// One conversation found in a group.
pub(super) struct Conversation {
    /// The trace id it becomes.
    pub(super) id: String,
    pub(super) group: String,
    pub(super) agent: Option<String>,
    /// Start times of its calls.
    pub(super) starts: Vec<u64>,
    /// Every message it has sent or received, and its last call's output.
    seen: HashSet<u64>,
    last_output: Vec<u64>,
}

/// Splits the calls of each group (in call order) into conversations, renaming their group to
/// the conversation's trace id: `{group}` for the first, `{group}/{agent}` when the group holds
/// several agents, `#2`, `#3`... for further conversations of one agent.
pub(super) fn split_conversations(calls: &mut [Candidate]) -> Vec<Conversation> {
    let mut agents: HashMap<&str, HashSet<&str>> = HashMap::new();
    for cand in calls.iter() {
        if let (Some(group), Some(agent)) = (cand.call.group.as_deref(), cand.agent.as_deref()) {
            agents.entry(group).or_default().insert(agent);
        }
    }
    let several: HashSet<String> = agents
        .into_iter()
        .filter(|(_, a)| a.len() > 1)
        .map(|(g, _)| g.to_string())
        .collect();
    let mut conversations: Vec<Conversation> = Vec::new();
    for cand in calls.iter_mut() {
        let Some(group) = cand.call.group.clone() else {
            continue;
        };
        let input = hashes(&cand.call.input);
        let best = conversations
            .iter()
            .enumerate()
            // A call whose agent is not known may continue any agent's conversation.
            .filter(|(_, c)| c.group == group && same_agent(&c.agent, &cand.agent))
            .filter_map(|(i, c)| continuity(c, &input).map(|score| (score, i)))
            .max();
        let at = match best {
            Some((_, i)) => i,
            None => {
                let base = match (&cand.agent, several.contains(&group)) {
                    (Some(agent), true) => format!("{group}/{agent}"),
                    _ => group.clone(),
                };
                let n = conversations
                    .iter()
                    .filter(|c| c.id.split('#').next() == Some(base.as_str()))
                    .count();
                let id = if n == 0 {
                    base
                } else {
                    format!("{base}#{}", n + 1)
                };
                conversations.push(Conversation {
                    id,
                    group: group.clone(),
                    agent: cand.agent.clone(),
                    starts: Vec::new(),
                    seen: HashSet::new(),
                    last_output: Vec::new(),
                });
                conversations.len() - 1
            }
        };
        let conversation = &mut conversations[at];
        if conversation.agent.is_none() {
            conversation.agent.clone_from(&cand.agent);
        }
        let output = hashes(&cand.call.output);
        conversation.seen.extend(input.iter().chain(&output));
        conversation.last_output = output;
        conversation.starts.extend(cand.start);
        cand.call.group = Some(conversation.id.clone());
    }
    conversations
}

fn same_agent(a: &Option<String>, b: &Option<String>) -> bool {
    a.is_none() || b.is_none() || a == b
}

/// How strongly a call with input `input` continues `c`: it resends `c`'s last response, or
/// sends nothing `c` has not (a retry) (2); it shares a message of `c` other than the one both
/// open with, typically the system prompt (1); `None` when it shares nothing of `c` but that (a
/// conversation of its own). Ties go to the conversation with more shared, then the newest.
fn continuity(c: &Conversation, input: &[u64]) -> Option<(u8, usize)> {
    let resends_last = !c.last_output.is_empty() && c.last_output.iter().all(|h| input.contains(h));
    let retry = !input.is_empty() && input.iter().all(|h| c.seen.contains(h));
    if resends_last || retry {
        return Some((2, c.seen.len()));
    }
    let shared = input.iter().skip(1).filter(|h| c.seen.contains(h)).count();
    (shared > 0).then_some((1, shared))
}
