//! Replays recorded traces under a policy and a budget: at each call, the context the policy
//! would have sent, what it would have cost (prompt-cache aware), what it saved against keeping
//! everything, and which later steps would have missed content it had dropped.
//!
//! The replay drives the same [`Engine`] the live package uses: chunks are added as they first
//! appear in a call's input, chunks the recorded agent itself stopped sending are retired, and the
//! engine is asked for the context of each call. Misses come from the reference detector: at call
//! `i`, a piece of evidence the call's output used is missed when none of the chunks holding it is
//! in the context the policy sent (a compressed chunk counts only if the evidence survived the
//! compression). Deterministic: the same input gives the same output, byte for byte.
//!
//! ```
//! use memlens_core::builder::{Message, TraceBuilder};
//! use memlens_core::{cost::PriceTable, policy::PolicyConfig, simulate, tokens};
//!
//! let mut b = TraceBuilder::new("demo", "example");
//! b.set_model(Some("gpt-4o".into()));
//! b.push_message(Message::text("system", "You are terse."), None);
//! for turn in 0..6 {
//!     b.push_message(Message::text("user", format!("Question {turn} about order ZX{turn}1")), None);
//!     b.push_message(Message::text("assistant", format!("Answer {turn}: ZX{turn}1 shipped.")), None);
//! }
//! b.reconstruct_calls();
//! let (mut trace, _) = b.finish();
//! tokens::count_trace(&mut trace, &tokens::TokenCounter::for_model(Some("gpt-4o")));
//!
//! let policy = PolicyConfig::builtin("window").unwrap();
//! let report = simulate::simulate(&[trace], &policy, 60, &PriceTable::builtin()).unwrap();
//! assert!(report.totals.saved_tokens > 0);
//! assert_eq!(report.totals.violations, 0);
//! ```

use crate::cost::{shared_prefix_len, BilledTokens, CacheModel, PriceTable};
use crate::model::Call;
use crate::model::{ChunkId, Trace};
use crate::policy::validate::{check, Violation};
use crate::policy::{
    Decision, Engine, EngineOptions, EntryForm, Hindsight, PolicyConfig, PolicyError, TraceMemo,
};
use crate::references::{detect, AccessGraph, EvidenceText};
use crate::tokens::{TokenCounter, REPLY_PRIMING_TOKENS};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashMap;

/// A later step that used content the policy had left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Miss {
    /// The call whose output used it.
    pub call: u32,
    /// The output chunk that used it.
    pub by: String,
    /// What was used (an identifier, a number, a quoted span).
    pub evidence: String,
    /// The chunks that held it, none of which was sent.
    pub chunks: Vec<String>,
}

/// One call of the replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallSim {
    /// Call index.
    pub index: u32,
    /// Input tokens the policy sent.
    pub input_tokens: u64,
    /// Input tokens keeping everything would send.
    pub full_input_tokens: u64,
    /// Of `input_tokens`, served from the prompt cache (modeled).
    pub cached_tokens: u64,
    /// Of `full_input_tokens`, served from the prompt cache (modeled).
    pub full_cached_tokens: u64,
    /// Cost of the call under the policy (input, output, summaries), USD; `None` when unpriced.
    pub cost_usd: Option<f64>,
    /// Cost keeping everything, USD.
    pub full_cost_usd: Option<f64>,
    /// Chunks compressed or cleared at this call.
    pub compressions: u32,
    /// Chunks evicted at this call.
    pub evictions: u32,
    /// Chunks retrieved from the archive for this call.
    pub retrievals: u32,
    /// Evidence this call's output used that was not sent.
    pub misses: Vec<Miss>,
    /// Invariants the context broke.
    pub violations: Vec<Violation>,
    /// The context exceeded the budget.
    pub over_budget: bool,
}

/// Totals over calls (and traces).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Calls replayed.
    pub calls: u64,
    /// Input tokens the policy sent.
    pub input_tokens: u64,
    /// Input tokens keeping everything would send.
    pub full_input_tokens: u64,
    /// `full_input_tokens - input_tokens`.
    pub saved_tokens: i64,
    /// Cost under the policy, USD (`None` when any trace is unpriced).
    pub cost_usd: Option<f64>,
    /// Cost keeping everything, USD.
    pub full_cost_usd: Option<f64>,
    /// `full_cost_usd - cost_usd`.
    pub saved_usd: Option<f64>,
    /// Evidence items later steps used that were not sent.
    pub misses: u64,
    /// Calls with at least one miss.
    pub calls_with_misses: u64,
    /// Broken invariants (0 for every MemLens policy).
    pub violations: u64,
    /// Calls whose context exceeded the budget.
    pub over_budget_calls: u64,
    /// Compressions.
    pub compressions: u64,
    /// Retrievals from the archive.
    pub retrievals: u64,
    /// Modeled summary cost, USD (included in `cost_usd`).
    pub summary_cost_usd: f64,
}

impl Totals {
    /// Share of the input tokens saved (`saved / full`, 0 with nothing sent).
    pub fn saved_share(&self) -> f64 {
        self.saved_tokens as f64 / self.full_input_tokens.max(1) as f64
    }

    /// Share of the calls with at least one miss (0 with no calls).
    pub fn miss_share(&self) -> f64 {
        self.calls_with_misses as f64 / self.calls.max(1) as f64
    }

    fn add(&mut self, other: &Totals) {
        self.calls += other.calls;
        self.input_tokens += other.input_tokens;
        self.full_input_tokens += other.full_input_tokens;
        self.saved_tokens += other.saved_tokens;
        self.cost_usd = sum_opt(self.cost_usd, other.cost_usd);
        self.full_cost_usd = sum_opt(self.full_cost_usd, other.full_cost_usd);
        self.saved_usd = sum_opt(self.saved_usd, other.saved_usd);
        self.misses += other.misses;
        self.calls_with_misses += other.calls_with_misses;
        self.violations += other.violations;
        self.over_budget_calls += other.over_budget_calls;
        self.compressions += other.compressions;
        self.retrievals += other.retrievals;
        self.summary_cost_usd += other.summary_cost_usd;
    }
}

/// Which replays are on the frontier of tokens saved against calls with a miss: no other saves
/// at least as much ([`Totals::saved_share`]) with at most as many calls with a miss
/// ([`Totals::miss_share`]), and strictly more or fewer on one of the two. What `memlens compare
/// --frontier` and the web simulator's frontier mark.
///
/// ```
/// use memlens_core::simulate::{on_frontier, Totals};
/// let row = |saved, missed| Totals { calls: 10, full_input_tokens: 100, saved_tokens: saved,
///     calls_with_misses: missed, ..Totals::default() };
/// // Saving 40 with 2 misses beats saving 30 with 3; saving 10 with none is a different trade.
/// let rows = [row(40, 2), row(30, 3), row(10, 0)];
/// assert_eq!(on_frontier(rows.iter()), [true, false, true]);
/// ```
pub fn on_frontier<'a>(rows: impl Iterator<Item = &'a Totals> + Clone) -> Vec<bool> {
    let points: Vec<(f64, f64)> = rows.map(|t| (t.saved_share(), t.miss_share())).collect();
    points
        .iter()
        .map(|&(s, m)| {
            !points
                .iter()
                .any(|&(os, om)| os >= s && om <= m && (os > s || om < m))
        })
        .collect()
}

fn sum_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

/// The replay of one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceSim {
    /// Trace id.
    pub id: String,
    /// Per call.
    pub calls: Vec<CallSim>,
    /// Totals.
    pub totals: Totals,
}

/// The replay of several traces under one policy and budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimReport {
    /// Policy name.
    pub policy: String,
    /// Budget.
    pub budget: u32,
    /// Per trace.
    pub traces: Vec<TraceSim>,
    /// Totals over traces.
    pub totals: Totals,
}

/// Replays every trace; see the module docs.
pub fn simulate(
    traces: &[Trace],
    policy: &PolicyConfig,
    budget: u32,
    prices: &PriceTable,
) -> Result<SimReport, PolicyError> {
    let mut report = SimReport {
        policy: policy.name.clone(),
        budget,
        traces: Vec::with_capacity(traces.len()),
        totals: Totals {
            cost_usd: Some(0.0),
            full_cost_usd: Some(0.0),
            saved_usd: Some(0.0),
            ..Totals::default()
        },
    };
    for trace in traces {
        let graph = detect(trace);
        let sim = simulate_trace(trace, &graph, policy, budget, prices)?;
        report.totals.add(&sim.totals);
        report.traces.push(sim);
    }
    Ok(report)
}

/// Replays one trace, with its access graph (from [`detect`]).
pub fn simulate_trace(
    trace: &Trace,
    graph: &AccessGraph,
    policy: &PolicyConfig,
    budget: u32,
    prices: &PriceTable,
) -> Result<TraceSim, PolicyError> {
    simulate_trace_with_memo(trace, graph, policy, budget, prices, None)
}

/// [`simulate_trace`] reading chunk texts through `memo`, shared with the trace's other replays
/// (the fit's candidates): the same result, the texts read once.
pub fn simulate_trace_with_memo(
    trace: &Trace,
    graph: &AccessGraph,
    policy: &PolicyConfig,
    budget: u32,
    prices: &PriceTable,
    memo: Option<&TraceMemo>,
) -> Result<TraceSim, PolicyError> {
    let price = trace
        .main_model()
        .and_then(|m| prices.lookup(m))
        .map(|(_, p)| p.clone());
    let cache = price
        .as_ref()
        .and_then(|p| CacheModel::for_provider(p.provider.as_deref()));
    let mut calls = Vec::with_capacity(trace.calls.len());
    let mut totals = Totals {
        cost_usd: price.as_ref().map(|_| 0.0),
        full_cost_usd: price.as_ref().map(|_| 0.0),
        saved_usd: price.as_ref().map(|_| 0.0),
        ..Totals::default()
    };
    let mut previous_sent: Vec<(Option<ChunkId>, u32)> = Vec::new();
    let mut previous_full: &[ChunkId] = &[];
    let mut read = HashMap::new();
    replay_with_memo(
        trace,
        graph,
        policy,
        budget,
        prices,
        memo,
        |call, decision| {
            let sent: Vec<(Option<ChunkId>, u32)> = decision
                .entries
                .iter()
                .map(|e| (e.chunk, e.tokens))
                .collect();
            let prefix = sent
                .iter()
                .zip(&previous_sent)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| u64::from(a.1))
                .sum::<u64>();
            let full_prefix: u64 = call.input[..shared_prefix_len(previous_full, &call.input)]
                .iter()
                .map(|&id| u64::from(trace.chunk(id).tokens))
                .sum();
            let cached = cache.map_or(0, |m| m.cached_tokens(prefix));
            let full_cached = cache.map_or(0, |m| m.cached_tokens(full_prefix));
            let full_input = call
                .input
                .iter()
                .map(|&id| u64::from(trace.chunk(id).tokens))
                .sum::<u64>()
                + u64::from(REPLY_PRIMING_TOKENS);
            let output: u64 = call
                .output
                .iter()
                .map(|&id| u64::from(trace.chunk(id).tokens))
                .sum();
            let cost = |input: u64, cached: u64| -> Option<f64> {
                price.as_ref()?.call_usd(BilledTokens {
                    uncached_input: input.saturating_sub(cached),
                    cache_read: cached,
                    cache_write: 0,
                    output,
                })
            };
            let cost_usd = cost(decision.tokens, cached).map(|c| c + decision.summary_cost_usd);
            let full_cost_usd = cost(full_input, full_cached);
            let misses = misses(trace, graph, call.index, &call.input, decision, &mut read);
            // Checked for every policy: MemLens' own are held to zero, the incumbents' violations
            // are what they do.
            let violations = check(|id| trace.chunk(id), &call.input, decision);
            let sim = CallSim {
                index: call.index,
                input_tokens: decision.tokens,
                full_input_tokens: full_input,
                cached_tokens: cached,
                full_cached_tokens: full_cached,
                cost_usd,
                full_cost_usd,
                compressions: decision.compressed.len() as u32,
                evictions: decision.evicted.len() as u32,
                retrievals: decision.retrieved.len() as u32,
                misses,
                violations,
                over_budget: decision.over_budget,
            };
            totals.calls += 1;
            totals.input_tokens += sim.input_tokens;
            totals.full_input_tokens += sim.full_input_tokens;
            totals.cost_usd = sum_opt(totals.cost_usd, sim.cost_usd);
            totals.full_cost_usd = sum_opt(totals.full_cost_usd, sim.full_cost_usd);
            totals.misses += sim.misses.len() as u64;
            totals.calls_with_misses += u64::from(!sim.misses.is_empty());
            totals.violations += sim.violations.len() as u64;
            totals.over_budget_calls += u64::from(sim.over_budget);
            totals.compressions += u64::from(sim.compressions);
            totals.retrievals += u64::from(sim.retrievals);
            totals.summary_cost_usd += decision.summary_cost_usd;
            calls.push(sim);
            previous_sent = sent;
            previous_full = &call.input;
            std::ops::ControlFlow::Continue(())
        },
    )?;
    totals.saved_tokens = totals.full_input_tokens as i64 - totals.input_tokens as i64;
    totals.saved_usd = match (totals.full_cost_usd, totals.cost_usd) {
        (Some(f), Some(c)) => Some(f - c),
        _ => None,
    };
    Ok(TraceSim {
        id: trace.id.clone(),
        calls,
        totals,
    })
}

/// Which later calls use each chunk, from the trace's access graph: the oracle's hindsight.
pub fn hindsight(trace: &Trace, graph: &AccessGraph) -> Hindsight {
    let mut future: HashMap<ChunkId, Vec<u32>> = HashMap::new();
    for chunk in &trace.chunks {
        let uses = graph.uses_of(chunk.id);
        if !uses.is_empty() {
            future.insert(chunk.id, uses.to_vec());
        }
    }
    Hindsight::new(future)
}

/// The one replay loop (the simulator's, `analysis::context_at`'s and the tests'): drives an
/// engine for `policy` over the recorded calls as the agent made them. Chunks are added as they
/// first appear in a call's input, chunks the recorded agent itself stopped sending are retired,
/// and the engine decides each call's context. `each` gets the recorded call and the decision;
/// it may stop the replay early. Ids outside the trace (importers never make one; a trace
/// deserialized from elsewhere might) are skipped.
pub fn replay<'t>(
    trace: &'t Trace,
    graph: &AccessGraph,
    policy: &PolicyConfig,
    budget: u32,
    prices: &PriceTable,
    each: impl FnMut(&'t Call, &Decision) -> std::ops::ControlFlow<()>,
) -> Result<(), PolicyError> {
    replay_with_memo(trace, graph, policy, budget, prices, None, each)
}

/// [`replay`] reading chunk texts through `memo` ([`TraceMemo`]).
pub fn replay_with_memo<'t>(
    trace: &'t Trace,
    graph: &AccessGraph,
    policy: &PolicyConfig,
    budget: u32,
    prices: &PriceTable,
    memo: Option<&TraceMemo>,
    mut each: impl FnMut(&'t Call, &Decision) -> std::ops::ControlFlow<()>,
) -> Result<(), PolicyError> {
    let model = trace.main_model();
    let price = model.and_then(|m| prices.lookup(m)).map(|(_, p)| p);
    let options = EngineOptions {
        budget,
        input_usd_per_mtok: price.and_then(|p| p.input),
    };
    // Only the oracle reads hindsight: the others are spared building it on every replay.
    let future = policy
        .strategy
        .needs_hindsight()
        .then(|| hindsight(trace, graph));
    let new_engine = || {
        let mut engine = match &future {
            Some(future) => Engine::with_hindsight(
                policy.clone(),
                options,
                TokenCounter::for_model(model),
                future,
            ),
            None => Engine::new(policy.clone(), options, TokenCounter::for_model(model)),
        }?;
        if let Some(memo) = memo {
            engine.set_memo(memo);
        }
        Ok::<Engine, PolicyError>(engine)
    };
    let mut engine = new_engine()?;
    for call in &trace.calls {
        let input = valid_ids(trace, &call.input);
        if rewrites(&engine, &input) {
            // The agent edited or reordered what it had sent, not only appended to it or left
            // some out: from here its context is replayed as sent, by an engine started anew.
            engine = new_engine()?;
            engine.resume_at(call.index);
        }
        for &id in input.iter() {
            if !engine.contains(id) {
                engine.add(trace.chunk(id));
            }
        }
        // The recorded agent may itself have stopped sending some chunks.
        engine.retain(&input);
        let decision = engine.context(None);
        if each(call, &decision).is_break() {
            break;
        }
    }
    Ok(())
}

/// Whether a call's input puts a chunk before one the engine already holds that came earlier
/// (an edit in place, an insertion, a reorder): the engine keeps arrival order, so only a
/// context that appends, or leaves chunks out, continues it.
fn rewrites(engine: &Engine, input: &[ChunkId]) -> bool {
    let mut last = None;
    let mut new = false;
    for &id in input {
        match engine.arrival(id) {
            Some(rank) if new || Some(rank) < last => return true,
            Some(rank) => last = Some(rank),
            None => new = true,
        }
    }
    false
}

/// A call's input without ids outside the trace (borrowed unless there are some).
pub(crate) fn valid_ids<'t>(trace: &Trace, input: &'t [ChunkId]) -> Cow<'t, [ChunkId]> {
    if input.iter().all(|id| id.index() < trace.chunks.len()) {
        Cow::Borrowed(input)
    } else {
        Cow::Owned(
            input
                .iter()
                .copied()
                .filter(|id| id.index() < trace.chunks.len())
                .collect(),
        )
    }
}

/// Evidence used by the call's output that no sent chunk carried.
/// `read` keeps each compressed chunk's text as read at an earlier call: a chunk stays compressed
/// the same way over many calls, and reading its text is the check's whole cost.
fn misses(
    trace: &Trace,
    graph: &AccessGraph,
    call: u32,
    full: &[ChunkId],
    d: &Decision,
    read: &mut HashMap<ChunkId, EvidenceText>,
) -> Vec<Miss> {
    // What each sent chunk carries: its own text (None), or the text it was compressed to.
    let mut sent: HashMap<ChunkId, Option<&str>> = HashMap::new();
    for e in &d.entries {
        if let Some(id) = e.chunk {
            let text = match e.form {
                EntryForm::Compressed { .. } => Some(e.text.as_deref().unwrap_or("")),
                _ => None,
            };
            sent.insert(id, text);
        }
    }
    for c in graph.groups_at(call).iter().flat_map(|g| &g.chunks) {
        if let Some(Some(text)) = sent.get(c) {
            if read.get(c).is_none_or(|r| r.text() != *text) {
                read.insert(*c, EvidenceText::new(text));
            }
        }
    }
    let live: std::collections::HashSet<ChunkId> = full.iter().copied().collect();
    graph
        .groups_at(call)
        .iter()
        .filter(|g| {
            !g.chunks.iter().any(|c| {
                // Not sent by the recorded agent either: not the policy's doing.
                !live.contains(c)
                    || match sent.get(c) {
                        None => false,
                        Some(None) => true,
                        // A compressed chunk counts only when the evidence survived.
                        Some(Some(_)) => read.get(c).is_some_and(|r| r.contains(&g.evidence)),
                    }
            })
        })
        .map(|g| Miss {
            call,
            by: trace.chunk(g.by).key.clone(),
            evidence: g.evidence.text.clone(),
            chunks: g
                .chunks
                .iter()
                .map(|&id| trace.chunk(id).key.clone())
                .collect(),
        })
        .collect()
}
