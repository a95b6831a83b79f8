//! Replays for a viewer: a trace's simulation figures per call ([`SimView`]) and the context a
//! policy would send at one call against the recorded input ([`ContextDiff`]), both from the
//! simulator's own replay loop.

use crate::compaction::{simulated_report, CompactionReport, SimulatedSummary};
use crate::cost::PriceTable;
use crate::model::{ChunkId, Trace};
use crate::policy::compress::CompressKind;
use crate::policy::{Decision, EntryForm, PolicyConfig, PolicyError};
use crate::references::AccessGraph;
use crate::simulate::{simulate_trace, Totals, TraceSim};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

/// One call of a replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimCall {
    /// Call index.
    pub index: u32,
    /// Input tokens sent.
    pub input_tokens: u64,
    /// Input tokens keeping everything.
    pub full_input_tokens: u64,
    /// Cost, `None` when unpriced.
    pub cost_usd: Option<f64>,
    /// Cost keeping everything.
    pub full_cost_usd: Option<f64>,
    /// Chunks compressed this call.
    pub compressions: u32,
    /// Chunks evicted this call.
    pub evictions: u32,
    /// Chunks retrieved this call.
    pub retrievals: u32,
    /// Misses this call, as "evidence (from chunk keys)".
    pub misses: Vec<String>,
    /// Invariant violations this call.
    pub violations: u32,
    /// Over budget.
    pub over_budget: bool,
}

/// A replay of one trace under one policy and budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimView {
    /// Policy name.
    pub policy: String,
    /// Budget.
    pub budget: u32,
    /// Totals (the simulator's own).
    pub totals: Totals,
    /// Per call.
    pub calls: Vec<SimCall>,
    /// The summaries the policy made, as compactions: what each kept of the chunks it stands
    /// for, and the replay's later calls that needed something it lost
    /// ([`simulated_compactions`]; left empty by [`simulate_view`], which sweeps call often).
    #[serde(default)]
    pub summaries: Vec<CompactionReport>,
}

impl SimView {
    /// Copies a replay's figures.
    pub fn from_sim(policy: &str, budget: u32, sim: &TraceSim) -> SimView {
        SimView {
            policy: policy.to_string(),
            budget,
            totals: sim.totals.clone(),
            calls: sim
                .calls
                .iter()
                .map(|c| SimCall {
                    index: c.index,
                    input_tokens: c.input_tokens,
                    full_input_tokens: c.full_input_tokens,
                    cost_usd: c.cost_usd,
                    full_cost_usd: c.full_cost_usd,
                    compressions: c.compressions,
                    evictions: c.evictions,
                    retrievals: c.retrievals,
                    misses: c
                        .misses
                        .iter()
                        .map(|m| format!("{} (from {})", m.evidence, m.chunks.join(", ")))
                        .collect(),
                    violations: c.violations.len() as u32,
                    over_budget: c.over_budget,
                })
                .collect(),
            summaries: Vec::new(),
        }
    }
}

/// Replays one trace ([`simulate_trace`], as `memlens simulate` does) and returns its figures.
pub fn simulate_view(
    trace: &Trace,
    graph: &AccessGraph,
    policy: &PolicyConfig,
    budget: u32,
    prices: &PriceTable,
) -> Result<SimView, PolicyError> {
    let sim = simulate_trace(trace, graph, policy, budget, prices)?;
    Ok(SimView::from_sim(&policy.name, budget, &sim))
}

/// The summaries a policy makes when replayed on `trace` (its `compress.summary`, Letta's
/// recursive summary), each as a [`CompactionReport`] the way a recorded compaction is reported:
/// what the summary's text kept of the chunks it stands for, and which later calls of the replay
/// used something only those chunks held and the policy did not send. A summary is reported at
/// the first call that sends it.
pub fn simulated_compactions(
    trace: &Trace,
    graph: &AccessGraph,
    policy: &PolicyConfig,
    budget: u32,
    prices: &PriceTable,
) -> Result<Vec<CompactionReport>, PolicyError> {
    // Per call: what was sent; and each new summary: (call, covers, text, tokens).
    let mut sent: Vec<(u32, HashSet<ChunkId>)> = Vec::new();
    let mut made: Vec<(u32, Vec<ChunkId>, String, u32)> = Vec::new();
    let mut seen: HashSet<Vec<ChunkId>> = HashSet::new();
    crate::simulate::replay(
        trace,
        graph,
        policy,
        budget,
        prices,
        |recorded, decision| {
            for e in &decision.entries {
                if let EntryForm::Summary { covers } = &e.form {
                    if seen.insert(covers.clone()) {
                        let text = e.text.as_deref().unwrap_or_default().to_string();
                        made.push((recorded.index, covers.clone(), text, e.tokens));
                    }
                }
            }
            sent.push((recorded.index, decision.chunk_ids().collect()));
            ControlFlow::Continue(())
        },
    )?;
    Ok(made
        .iter()
        .enumerate()
        .map(|(index, (call, covers, text, tokens))| {
            let summary = SimulatedSummary {
                index,
                call: *call,
                covers,
                text,
                tokens: *tokens,
            };
            let later = sent
                .iter()
                .filter(|(c, _)| c >= call)
                .map(|(c, ids)| (*c, ids));
            simulated_report(trace, graph, summary, later)
        })
        .collect())
}

/// What a policy did to one chunk of a call's recorded input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// Sent as it was.
    Kept,
    /// Sent compressed.
    Compressed,
    /// Brought back from the archive.
    Retrieved,
    /// Not sent (dropped, archived or summarized).
    Dropped,
}

/// One line of the context diff at a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffLine {
    /// The chunk (`None` for a summary entry the policy added).
    pub chunk: Option<u32>,
    /// What happened to it.
    pub fate: Fate,
    /// Tokens in the recorded input (0 for a summary).
    pub tokens: u32,
    /// Tokens sent (0 when dropped).
    pub sent_tokens: u32,
    /// The compression, when compressed (`json`, `strip`, `dedupe`, `clear`).
    pub compression: Option<String>,
    /// The text sent when it differs from the chunk's content (compressed, summary).
    pub text: Option<String>,
}

/// The context a policy would send at one call, against the recorded input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextDiff {
    /// The call.
    pub call: u32,
    /// Tokens the policy sends.
    pub tokens: u64,
    /// Tokens keeping everything.
    pub full_tokens: u64,
    /// Over budget.
    pub over_budget: bool,
    /// Every chunk of the recorded input in order, then the entries the policy added
    /// (summaries, retrieved chunks that were not in the recorded input).
    pub lines: Vec<DiffLine>,
}

/// Replays the engine as [`simulate_trace`] does up to `call` and returns what it would send there.
/// `None` when the call does not exist.
pub fn context_at(
    trace: &Trace,
    graph: &AccessGraph,
    policy: &PolicyConfig,
    budget: u32,
    prices: &PriceTable,
    call: u32,
) -> Result<Option<ContextDiff>, PolicyError> {
    if call as usize >= trace.calls.len() {
        return Ok(None);
    }
    let mut diff = None;
    let mut position = 0u32;
    crate::simulate::replay(
        trace,
        graph,
        policy,
        budget,
        prices,
        |recorded, decision| {
            position += 1;
            if position - 1 != call {
                return ControlFlow::Continue(());
            }
            let input = crate::simulate::valid_ids(trace, &recorded.input);
            diff = Some(context_diff(trace, &input, call, decision));
            ControlFlow::Break(())
        },
    )?;
    Ok(diff)
}

/// Every chunk of the recorded input with its fate in `decision`, then the entries the policy
/// added.
fn context_diff(trace: &Trace, input: &[ChunkId], call: u32, decision: &Decision) -> ContextDiff {
    let mut sent: HashMap<ChunkId, usize> = HashMap::new();
    for (k, e) in decision.entries.iter().enumerate() {
        if let Some(id) = e.chunk {
            sent.entry(id).or_insert(k);
        }
    }
    let mut lines = Vec::new();
    for &id in input {
        let tokens = trace.chunk(id).tokens;
        let line = match sent.remove(&id).and_then(|k| decision.entries.get(k)) {
            None => DiffLine {
                chunk: Some(id.0),
                fate: Fate::Dropped,
                tokens,
                sent_tokens: 0,
                compression: None,
                text: None,
            },
            Some(e) => {
                let (fate, compression) = match &e.form {
                    EntryForm::Compressed { kind } => {
                        (Fate::Compressed, Some(compress_name(*kind).to_string()))
                    }
                    EntryForm::Retrieved => (Fate::Retrieved, None),
                    _ => (Fate::Kept, None),
                };
                DiffLine {
                    chunk: Some(id.0),
                    fate,
                    tokens,
                    sent_tokens: e.tokens,
                    compression,
                    text: e.text.as_deref().map(str::to_string),
                }
            }
        };
        lines.push(line);
    }
    for e in &decision.entries {
        let extra = match e.chunk {
            None => true,
            Some(id) => sent.contains_key(&id),
        };
        if extra {
            lines.push(DiffLine {
                chunk: e.chunk.map(|c| c.0),
                fate: if e.chunk.is_some() {
                    Fate::Retrieved
                } else {
                    Fate::Compressed
                },
                tokens: 0,
                sent_tokens: e.tokens,
                compression: e.chunk.is_none().then(|| "summary".to_string()),
                text: e.text.as_deref().map(str::to_string),
            });
        }
    }
    ContextDiff {
        call,
        tokens: decision.tokens,
        full_tokens: decision.full_tokens,
        over_budget: decision.over_budget,
        lines,
    }
}

fn compress_name(kind: CompressKind) -> &'static str {
    match kind {
        CompressKind::Json => "json",
        CompressKind::Strip => "strip",
        CompressKind::Dedupe => "dedupe",
        CompressKind::Clear => "clear",
        CompressKind::Minify => "minify",
        CompressKind::Toon => "toon",
    }
}
