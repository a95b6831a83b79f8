//! One trace, analyzed for a viewer: what the web app shows and the npm package's `analyzeTrace`
//! returns. Everything here is read off the core's own results — [`report::summarize`] for the
//! numbers `memlens inspect` prints, [`cost::trace_cost`] for attributed cost, [`value::score_trace`]
//! and [`ValueEngine`] for values, [`references::detect`] for the access graph and
//! [`simulate::simulate_trace`] for replays — so a viewer never recomputes a figure by hand.
//!
//! Every type here is `Serialize` *and* `Deserialize` (the core's own report types are only
//! `Serialize`), so a host can compute an [`Analysis`] in a worker and read it back elsewhere.
//!
//! ```
//! use memlens_core::analysis::{analyze, AnalysisOptions};
//! use memlens_core::builder::{Message, TraceBuilder};
//! use memlens_core::{cost::PriceTable, tokens, Category};
//!
//! let mut b = TraceBuilder::new("demo", "example");
//! b.set_model(Some("gpt-4o".into()));
//! b.push_message(Message::text("system", "You book flights."), None);
//! b.push_message(Message::text("user", "Rebook reservation ZFA04Y to Friday."), None);
//! b.push_message(Message::text("assistant", "Looking up ZFA04Y."), None);
//! b.push_message(Message::text("user", "Thanks."), None);
//! b.push_message(Message::text("assistant", "Done: ZFA04Y is on Friday."), None);
//! b.reconstruct_calls();
//! let (mut trace, _) = b.finish();
//! tokens::count_trace(&mut trace, &tokens::TokenCounter::for_model(Some("gpt-4o")));
//!
//! let a = analyze(&trace, &PriceTable::builtin(), &AnalysisOptions::default());
//! assert_eq!(a.summary.calls, 2);
//! assert_eq!(a.chunks.len(), trace.chunks.len());
//! // The stacked chart: per call, tokens by category plus framing add up to the counted input.
//! let call = &a.calls[1];
//! assert_eq!(call.by_category.iter().sum::<u64>() + call.framing, call.input_tokens);
//! // The user's first message was used by a later output (the reservation code).
//! let user = a.chunks.iter().find(|c| c.category == Category::User).unwrap();
//! assert!(user.references >= 1);
//! assert!(a.edges.iter().any(|e| e.used == user.id));
//! ```

use crate::compaction::CompactionReport;
use crate::cost::{trace_cost, PriceTable};
use crate::model::{Category, ChunkId, Trace, TraceLink};
use crate::policy::compress::CompressKind;
use crate::policy::{Decision, EntryForm, PolicyConfig, PolicyError};
use crate::references::{detect, AccessGraph, EvidenceKind};
use crate::report::{preview, summarize, summarize_with_graph};
use crate::simulate::{simulate_trace, TraceSim};
use crate::value::{score_trace, Factors, ValueConfig, ValueEngine, Weights};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;

/// What the caller may set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AnalysisOptions {
    /// Value engine settings (weights, category weights, half-lives).
    pub value: ValueConfig,
    /// Characters of each chunk's one-line preview.
    pub preview_chars: usize,
    /// At most this many heatmap rows (the first chunks in order): a long run with many chunks
    /// would otherwise make the heatmap the bulk of the analysis.
    pub max_heatmap_rows: usize,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            value: ValueConfig::default(),
            preview_chars: 100,
            max_heatmap_rows: 5000,
        }
    }
}

/// The key numbers of a trace (those of `memlens inspect`, plus the mean value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Trace id.
    pub id: String,
    /// Importer.
    pub format: String,
    /// Main model.
    pub model: Option<String>,
    /// Encoding used for counts.
    pub encoding: String,
    /// True when counts are estimates (the model's tokenizer is unknown).
    pub tokens_estimated: bool,
    /// LLM calls.
    pub calls: usize,
    /// Distinct chunks.
    pub chunks: usize,
    /// Sum of every distinct chunk's tokens.
    pub total_tokens: u64,
    /// The largest counted input of any call.
    pub peak_input_tokens: u64,
    /// The model's context window, when known.
    pub context_window: Option<u64>,
    /// Counted input tokens over all calls.
    pub counted_input_tokens: u64,
    /// Reported input tokens over the calls that report usage.
    pub reported_input_tokens: Option<u64>,
    /// Counted input over the calls that report usage.
    pub counted_input_tokens_where_reported: Option<u64>,
    /// Counted output tokens.
    pub counted_output_tokens: u64,
    /// Tool results whose call is missing.
    pub orphan_tool_results: usize,
    /// Tool calls with no result.
    pub unanswered_tool_calls: usize,
    /// The price entry used (`None`: unpriced).
    pub priced_as: Option<String>,
    /// Total cost, `None` when unpriced.
    pub cost_usd: Option<f64>,
    /// Mean value over chunks (as of the end of the run).
    pub mean_value: f32,
    /// Links in the access graph (later outputs that used earlier chunks).
    pub references: usize,
    /// Why counted and reported figures may differ for this trace (as `memlens inspect` says).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The session that started this trace (a subagent's parent and its call), when known.
    #[serde(default)]
    pub parent: Option<TraceLink>,
}

/// One call of the stacked "who is growing" chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRow {
    /// Call index.
    pub index: u32,
    /// Input tokens by category, aligned with [`Analysis::categories`].
    pub by_category: Vec<u64>,
    /// The reply priming (the rest of the counted input).
    pub framing: u64,
    /// Counted input tokens.
    pub input_tokens: u64,
    /// Reported input tokens, when the trace has usage.
    pub reported_input: Option<u64>,
    /// Input tokens served from cache (reported or modeled).
    pub cached_input: u64,
    /// Counted output tokens.
    pub output_tokens: u64,
    /// Cost of the call, `None` when unpriced.
    pub cost_usd: Option<f64>,
}

/// Totals of a group of chunks (a category or a tool).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Category name or tool name.
    pub name: String,
    /// Chunks in the group.
    pub chunks: usize,
    /// Their tokens, each chunk once.
    pub tokens: u64,
    /// Share of the trace's distinct tokens, in `[0, 1]`.
    pub share: f64,
    /// Tokens times calls carried.
    pub token_calls: u64,
    /// Attributed input cost, `None` when unpriced.
    pub cost_usd: Option<f64>,
}

/// One chunk of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkRow {
    /// Index in the trace's chunks.
    pub id: u32,
    /// Stable key.
    pub key: String,
    /// Category.
    pub category: Category,
    /// Tool name, for tool calls and results.
    pub tool_name: Option<String>,
    /// Tokens it adds to a call's input (framing included).
    pub tokens: u32,
    /// Tokens of its content alone.
    pub content_tokens: u32,
    /// Value in `[0, 1]` as of the end of the run.
    pub value: f32,
    /// Value per 1,000 tokens.
    pub value_per_1k_tokens: f32,
    /// The value's factors.
    pub factors: Factors,
    /// One short sentence per factor.
    pub explanation: Vec<String>,
    /// Calls whose input carried it.
    pub calls_carried: u32,
    /// Tokens times calls carried.
    pub token_calls: u64,
    /// Attributed input cost (cache-aware), `None` when unpriced.
    pub cost_usd: Option<f64>,
    /// First call that carried it.
    pub first_call: Option<u32>,
    /// Last call that carried it.
    pub last_call: Option<u32>,
    /// How many later outputs used it (the popularity evidence).
    pub references: u32,
    /// The calls whose outputs used it.
    pub used_at: Vec<u32>,
    /// First characters of its content, on one line.
    pub preview: String,
}

/// One row of the value heatmap: the chunk's value at each call that carried it.
///
/// `cells[k]` is the call `first_call + k`: 0 when the chunk was not in that call's input, else
/// `1 + round(value * 254)` (so 1..=255 for values 0..=1). The row ends at the last call that
/// carried the chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeatRow {
    /// The chunk.
    pub chunk: u32,
    /// The call of `cells[0]`.
    pub first_call: u32,
    /// Quantized values, see the type's docs.
    pub cells: Vec<u8>,
}

/// An edge of the access graph: an output of `call` (chunk `by`) used chunk `used`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    /// The call whose output used it.
    pub call: u32,
    /// The output chunk.
    pub by: u32,
    /// The chunk used.
    pub used: u32,
    /// The strongest kind of evidence.
    pub kind: EvidenceKind,
    /// That evidence, as the output spells it.
    pub evidence: String,
}

/// Everything a viewer shows about one trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Key numbers.
    pub summary: Summary,
    /// The categories present, in display order: the columns of [`CallRow::by_category`].
    pub categories: Vec<Category>,
    /// Per call.
    pub calls: Vec<CallRow>,
    /// By category (the share ring and the cost attribution).
    pub by_category: Vec<Group>,
    /// By tool name (tool calls and results), costliest first.
    pub by_tool: Vec<Group>,
    /// Per chunk, in trace order.
    pub chunks: Vec<ChunkRow>,
    /// Value heatmap rows, in trace order (chunks no call carried are left out), at most
    /// [`AnalysisOptions::max_heatmap_rows`].
    pub heatmap: Vec<HeatRow>,
    /// Heatmap rows there would be without the limit.
    pub heatmap_total_rows: usize,
    /// Access graph edges, by call.
    pub edges: Vec<Edge>,
    /// The weights the values were computed with.
    pub weights: Weights,
    /// The trace's compactions, with what each summary kept and lost and the later calls that
    /// needed lost content (the figures of `memlens inspect`).
    #[serde(default)]
    pub compactions: Vec<CompactionReport>,
}

/// Analyzes a counted trace (see the module docs).
pub fn analyze(trace: &Trace, prices: &PriceTable, options: &AnalysisOptions) -> Analysis {
    let graph = detect(trace);
    let mut summary = summarize_with_graph(trace, prices, 0, Some(&graph));
    let summary_compactions = std::mem::take(&mut summary.compactions);
    let cost = trace_cost(trace, prices);
    let n_calls = trace.calls.len() as u32;
    let n = trace.chunks.len();

    let categories: Vec<Category> = Category::ALL
        .into_iter()
        .filter(|c| trace.chunks.iter().any(|x| x.category == *c))
        .collect();
    let column: HashMap<Category, usize> = categories
        .iter()
        .enumerate()
        .map(|(i, &c)| (c, i))
        .collect();

    // Per call: tokens by category; first and last call carrying each chunk.
    let mut first = vec![None::<u32>; n];
    let mut last = vec![None::<u32>; n];
    let mut calls = Vec::with_capacity(trace.calls.len());
    for (i, call) in trace.calls.iter().enumerate() {
        let mut by_category = vec![0u64; categories.len()];
        for &id in &call.input {
            let Some(chunk) = trace.chunks.get(id.index()) else {
                continue;
            };
            if let Some(&col) = column.get(&chunk.category) {
                by_category[col] += u64::from(chunk.tokens);
            }
            first[id.index()].get_or_insert(i as u32);
            last[id.index()] = Some(i as u32);
        }
        let cc = cost.calls.get(i);
        let input_tokens = cc.map_or(0, |c| c.counted.input);
        calls.push(CallRow {
            index: call.index,
            framing: input_tokens.saturating_sub(by_category.iter().sum()),
            by_category,
            input_tokens,
            reported_input: cc.and_then(|c| c.reported_input),
            cached_input: cc.map_or(0, |c| c.cached_input),
            output_tokens: cc.map_or(0, |c| c.counted.output),
            cost_usd: cc.and_then(|c| c.cost_usd),
        });
    }

    // Values as of the end of the run, with every use the detector found.
    let uses: Vec<u32> = trace.chunks.iter().map(|c| graph.use_count(c.id)).collect();
    let values = score_trace(trace, &options.value, &uses, n_calls, None);

    let mut chunks = Vec::with_capacity(n);
    for (i, chunk) in trace.chunks.iter().enumerate() {
        let v = values.get(i);
        let cc = cost.chunks.get(i);
        chunks.push(ChunkRow {
            id: i as u32,
            key: chunk.key.clone(),
            category: chunk.category,
            tool_name: chunk.meta.tool_name.clone(),
            tokens: chunk.tokens,
            content_tokens: chunk.content_tokens,
            value: v.map_or(0.0, |v| v.value),
            value_per_1k_tokens: v.map_or(0.0, |v| v.value_per_1k_tokens),
            factors: v.map(|v| v.factors).unwrap_or_default(),
            explanation: v.map(|v| v.explanation.clone()).unwrap_or_default(),
            calls_carried: cc.map_or(0, |c| c.calls_carried),
            token_calls: cc.map_or(0, |c| c.token_calls),
            cost_usd: cc.and_then(|c| c.cost_usd),
            first_call: first[i],
            last_call: last[i],
            references: uses[i],
            used_at: graph.uses_of(chunk.id).to_vec(),
            preview: preview(&chunk.content, options.preview_chars),
        });
    }

    let priced = cost.priced_as.is_some();
    let total_tokens = summary.tokens.total;
    let group = |name: String, rows: &[&ChunkRow]| Group {
        name,
        chunks: rows.len(),
        tokens: rows.iter().map(|r| u64::from(r.tokens)).sum(),
        share: rows.iter().map(|r| r.tokens as f64).sum::<f64>() / (total_tokens.max(1) as f64),
        token_calls: rows.iter().map(|r| r.token_calls).sum(),
        cost_usd: priced.then(|| rows.iter().filter_map(|r| r.cost_usd).sum()),
    };
    let by_category = categories
        .iter()
        .map(|&c| {
            let rows: Vec<&ChunkRow> = chunks.iter().filter(|r| r.category == c).collect();
            group(c.as_str().to_string(), &rows)
        })
        .collect();
    let mut tools: BTreeMap<&str, Vec<&ChunkRow>> = BTreeMap::new();
    for r in &chunks {
        if let Some(t) = r.tool_name.as_deref() {
            tools.entry(t).or_default().push(r);
        }
    }
    let mut by_tool: Vec<Group> = tools
        .into_iter()
        .map(|(name, rows)| group(name.to_string(), &rows))
        .collect();
    by_tool.sort_by(|a, b| {
        b.cost_usd
            .unwrap_or(0.0)
            .total_cmp(&a.cost_usd.unwrap_or(0.0))
            .then(b.token_calls.cmp(&a.token_calls))
    });

    let mut heatmap = heatmap(trace, &graph, &options.value, &first, &last);
    let heatmap_total_rows = heatmap.len();
    heatmap.truncate(options.max_heatmap_rows);
    let edges = graph
        .references()
        .iter()
        .filter_map(|r| {
            let best = r.evidence.iter().min_by_key(|e| e.kind)?;
            Some(Edge {
                call: r.call,
                by: r.by.0,
                used: r.used.0,
                kind: best.kind,
                evidence: best.text.clone(),
            })
        })
        .collect::<Vec<_>>();

    let mean_value = if chunks.is_empty() {
        0.0
    } else {
        chunks.iter().map(|c| c.value).sum::<f32>() / chunks.len() as f32
    };
    Analysis {
        summary: Summary {
            id: summary.id,
            format: summary.format,
            model: summary.model,
            encoding: summary.encoding.to_string(),
            tokens_estimated: summary.tokens_estimated,
            calls: summary.calls,
            chunks: summary.chunks,
            total_tokens,
            peak_input_tokens: summary.peak_input_tokens,
            context_window: summary.context_window,
            counted_input_tokens: summary.counted_input_tokens,
            reported_input_tokens: summary.reported_input_tokens,
            counted_input_tokens_where_reported: summary.counted_input_tokens_where_reported,
            counted_output_tokens: summary.counted_output_tokens,
            orphan_tool_results: summary.orphan_tool_results,
            unanswered_tool_calls: summary.unanswered_tool_calls,
            priced_as: summary.priced_as,
            cost_usd: summary.cost_usd,
            mean_value,
            references: edges.len(),
            notes: summary.notes,
            parent: trace.parent.clone(),
        },
        categories,
        calls,
        by_category,
        by_tool,
        chunks,
        heatmap,
        heatmap_total_rows,
        edges,
        weights: options.value.weights.clone(),
        compactions: summary_compactions,
    }
}

/// The value of each chunk at each call that carried it, as a live engine would have seen it then:
/// chunks are added at the first call that carries them, and uses count only the outputs of
/// earlier calls. The task is the first user message, as in [`score_trace`].
fn heatmap(
    trace: &Trace,
    graph: &AccessGraph,
    config: &ValueConfig,
    first: &[Option<u32>],
    last: &[Option<u32>],
) -> Vec<HeatRow> {
    let mut rows: Vec<Option<HeatRow>> = first
        .iter()
        .zip(last)
        .enumerate()
        .map(|(i, (f, l))| {
            let (f, l) = ((*f)?, (*l)?);
            Some(HeatRow {
                chunk: i as u32,
                first_call: f,
                cells: vec![0; (l - f + 1) as usize],
            })
        })
        .collect();
    let task = trace
        .chunks
        .iter()
        .find(|c| c.category == Category::User)
        .map(|c| c.content.as_str());
    let mut engine = ValueEngine::new(config.clone());
    let mut uses = vec![0u32; trace.chunks.len()];
    for (i, call) in trace.calls.iter().enumerate() {
        let i = i as u32;
        if i > 0 {
            for &used in graph.used_at(i - 1) {
                if let Some(u) = uses.get_mut(used.index()) {
                    *u += 1;
                    engine.set_uses(used, *u);
                }
            }
        }
        let ids: Vec<ChunkId> = call
            .input
            .iter()
            .copied()
            .filter(|id| id.index() < trace.chunks.len())
            .collect();
        for &id in &ids {
            if !engine.contains(id) {
                engine.add(trace.chunk(id), i, None);
                engine.set_uses(id, uses[id.index()]);
            }
        }
        let values = engine.values(&ids, i, None, task);
        for (id, v) in ids.iter().zip(values) {
            if let Some(Some(row)) = rows.get_mut(id.index()) {
                if let Some(cell) = row.cells.get_mut((i - row.first_call) as usize) {
                    *cell = 1 + (v.clamp(0.0, 1.0) * 254.0).round() as u8;
                }
            }
        }
    }
    rows.into_iter().flatten().collect()
}

/// One trace in a picker: id and the numbers to choose by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEntry {
    /// Position in the file.
    pub index: usize,
    /// Trace id.
    pub id: String,
    /// Main model.
    pub model: Option<String>,
    /// LLM calls.
    pub calls: usize,
    /// Distinct chunks.
    pub chunks: usize,
    /// Sum of distinct chunks' tokens.
    pub total_tokens: u64,
    /// Counted input tokens over all calls.
    pub counted_input_tokens: u64,
    /// Cost, `None` when unpriced.
    pub cost_usd: Option<f64>,
}

/// The picker's line for each trace of a file (from [`summarize`]).
pub fn trace_entries(traces: &[Trace], prices: &PriceTable) -> Vec<TraceEntry> {
    traces
        .iter()
        .enumerate()
        .map(|(index, t)| {
            let s = summarize(t, prices, 0);
            TraceEntry {
                index,
                id: s.id,
                model: s.model,
                calls: s.calls,
                chunks: s.chunks,
                total_tokens: s.tokens.total,
                counted_input_tokens: s.counted_input_tokens,
                cost_usd: s.cost_usd,
            }
        })
        .collect()
}

/// Totals of a replay ([`crate::simulate::Totals`], readable back).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SimTotals {
    /// Calls replayed.
    pub calls: u64,
    /// Input tokens the policy sent.
    pub input_tokens: u64,
    /// Input tokens keeping everything.
    pub full_input_tokens: u64,
    /// Difference.
    pub saved_tokens: i64,
    /// Cost under the policy.
    pub cost_usd: Option<f64>,
    /// Cost keeping everything.
    pub full_cost_usd: Option<f64>,
    /// Difference.
    pub saved_usd: Option<f64>,
    /// Later steps that used dropped content.
    pub misses: u64,
    /// Calls with at least one miss.
    pub calls_with_misses: u64,
    /// Invariant violations.
    pub violations: u64,
    /// Calls over budget.
    pub over_budget_calls: u64,
    /// Compressions.
    pub compressions: u64,
    /// Retrievals from the archive.
    pub retrievals: u64,
}

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
    /// Totals.
    pub totals: SimTotals,
    /// Per call.
    pub calls: Vec<SimCall>,
}

impl SimView {
    /// Copies a replay's figures.
    pub fn from_sim(policy: &str, budget: u32, sim: &TraceSim) -> SimView {
        let t = &sim.totals;
        SimView {
            policy: policy.to_string(),
            budget,
            totals: SimTotals {
                calls: t.calls,
                input_tokens: t.input_tokens,
                full_input_tokens: t.full_input_tokens,
                saved_tokens: t.saved_tokens,
                cost_usd: t.cost_usd,
                full_cost_usd: t.full_cost_usd,
                saved_usd: t.saved_usd,
                misses: t.misses,
                calls_with_misses: t.calls_with_misses,
                violations: t.violations,
                over_budget_calls: t.over_budget_calls,
                compressions: t.compressions,
                retrievals: t.retrievals,
            },
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
                    text: e.text.clone(),
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
                text: e.text.clone(),
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{Message, Part, TraceBuilder};
    use crate::simulate::simulate;
    use crate::tokens::{count_trace, TokenCounter};

    fn tool_trace() -> Trace {
        let mut b = TraceBuilder::new("t", "example");
        b.set_model(Some("gpt-4o".into()));
        b.push_message(Message::text("system", "You are an airline agent."), None);
        b.push_message(
            Message::text("user", "Please cancel my reservation ZFA04Y today."),
            None,
        );
        for turn in 0..6 {
            let mut call = Message::text("assistant", "");
            call.parts = vec![Part::ToolCall {
                id: format!("call_{turn}"),
                name: "get_reservation_details".into(),
                arguments: format!("{{\"reservation_id\": \"ZFA04Y\", \"turn\": {turn}}}"),
            }];
            b.push_message(call, None);
            let mut result = Message::text("tool", "");
            result.parts = vec![Part::ToolResult {
                id: format!("call_{turn}"),
                name: Some("get_reservation_details".into()),
                content: format!(
                    "{{\"reservation_id\": \"ZFA04Y\", \"flight\": \"HAT{}36\", \"price\": {}, \"notes\": \"{}\"}}",
                    turn,
                    400 + turn * 111,
                    "lorem ipsum dolor sit amet ".repeat(20)
                ),
            }];
            b.push_message(result, None);
            b.push_message(
                Message::text(
                    "assistant",
                    format!("Flight HAT{turn}36 costs {}.", 400 + turn * 111),
                ),
                None,
            );
            b.push_message(Message::text("user", format!("ok, next {turn}")), None);
        }
        b.push_message(Message::text("assistant", "Cancelled ZFA04Y."), None);
        b.reconstruct_calls();
        let (mut trace, warnings) = b.finish();
        assert!(warnings.is_empty(), "{warnings:?}");
        count_trace(&mut trace, &TokenCounter::for_model(Some("gpt-4o")));
        trace
    }

    #[test]
    fn numbers_come_from_the_summary_and_add_up() {
        let trace = tool_trace();
        let prices = PriceTable::builtin();
        let a = analyze(&trace, &prices, &AnalysisOptions::default());
        let s = summarize(&trace, &prices, 0);
        assert_eq!(a.summary.counted_input_tokens, s.counted_input_tokens);
        assert_eq!(a.summary.cost_usd, s.cost_usd);
        assert_eq!(a.calls.len(), trace.calls.len());
        for c in &a.calls {
            assert_eq!(
                c.by_category.iter().sum::<u64>() + c.framing,
                c.input_tokens
            );
        }
        let sum_in: u64 = a.calls.iter().map(|c| c.input_tokens).sum();
        assert_eq!(sum_in, s.counted_input_tokens);
        let share: f64 = a.by_category.iter().map(|g| g.share).sum();
        assert!((share - 1.0).abs() < 1e-9, "{share}");
        let tokens: u64 = a.by_category.iter().map(|g| g.tokens).sum();
        assert_eq!(tokens, a.summary.total_tokens);
        assert_eq!(a.by_tool.len(), 1);
        assert_eq!(a.by_tool[0].name, "get_reservation_details");
        // Attributed cost of the chunks adds up to the categories'.
        let chunk_cost: f64 = a.chunks.iter().filter_map(|c| c.cost_usd).sum();
        let cat_cost: f64 = a.by_category.iter().filter_map(|g| g.cost_usd).sum();
        assert!((chunk_cost - cat_cost).abs() < 1e-12);
    }

    #[test]
    fn rows_carry_calls_references_and_values() {
        let trace = tool_trace();
        let a = analyze(&trace, &PriceTable::builtin(), &AnalysisOptions::default());
        let system = &a.chunks[0];
        assert_eq!(system.category, Category::System);
        assert_eq!(system.first_call, Some(0));
        assert_eq!(system.last_call, Some(trace.calls.len() as u32 - 1));
        assert_eq!(system.calls_carried, trace.calls.len() as u32);
        // The user message with the reservation code is used by later tool calls.
        let user = &a.chunks[1];
        assert!(user.references > 0);
        assert_eq!(user.references as usize, user.used_at.len());
        assert!(a.edges.iter().any(|e| e.used == user.id));
        for c in &a.chunks {
            assert!((0.0..=1.0).contains(&c.value), "{c:?}");
            assert!(!c.explanation.is_empty());
        }
        // Every chunk the calls carry has a heatmap row covering its span; cells in range.
        for row in &a.heatmap {
            let c = &a.chunks[row.chunk as usize];
            assert_eq!(Some(row.first_call), c.first_call);
            let span = c.last_call.unwrap_or(0) - row.first_call + 1;
            assert_eq!(row.cells.len() as u32, span);
            // The chunk is in context at its first and last call.
            assert!(row.cells[0] > 0 && row.cells[row.cells.len() - 1] > 0);
        }
        // A tool result's value at its first call has no uses yet, later it does: the user's
        // message popularity grows over the run.
        let urow = a.heatmap.iter().find(|r| r.chunk == 1).expect("a row");
        assert_eq!(urow.cells.len(), trace.calls.len());
        assert_eq!(a.heatmap_total_rows, a.heatmap.len());
        // The row limit keeps the first rows and says how many there were.
        let limited = analyze(
            &trace,
            &PriceTable::builtin(),
            &AnalysisOptions {
                max_heatmap_rows: 3,
                ..AnalysisOptions::default()
            },
        );
        assert_eq!(limited.heatmap, a.heatmap[..3].to_vec());
        assert_eq!(limited.heatmap_total_rows, a.heatmap.len());
    }

    #[test]
    fn simulation_matches_the_simulator_and_the_diff_adds_up() {
        let trace = tool_trace();
        let prices = PriceTable::builtin();
        let graph = detect(&trace);
        let policy = PolicyConfig::builtin("window").expect("builtin");
        let view = simulate_view(&trace, &graph, &policy, 300, &prices).expect("runs");
        let report = simulate(std::slice::from_ref(&trace), &policy, 300, &prices).expect("runs");
        assert_eq!(view.totals.input_tokens, report.totals.input_tokens);
        assert_eq!(view.totals.misses, report.totals.misses);
        assert_eq!(view.totals.cost_usd, report.traces[0].totals.cost_usd);
        assert!(view.totals.saved_tokens > 0);
        let last = trace.calls.len() as u32 - 1;
        let diff = context_at(&trace, &graph, &policy, 300, &prices, last)
            .expect("runs")
            .expect("a call");
        assert_eq!(diff.tokens, view.calls[last as usize].input_tokens);
        assert!(diff.lines.iter().any(|l| l.fate == Fate::Dropped));
        assert!(diff.lines.iter().any(|l| l.fate == Fate::Kept));
        let sent: u64 = diff.lines.iter().map(|l| u64::from(l.sent_tokens)).sum();
        // The context's tokens are its entries plus the reply priming.
        assert_eq!(sent + 3, diff.tokens);
        assert!(context_at(&trace, &graph, &policy, 300, &prices, last + 1)
            .expect("runs")
            .is_none());
    }

    #[test]
    fn empty_trace_is_fine() {
        let b = TraceBuilder::new("empty", "example");
        let (trace, _) = b.finish();
        let a = analyze(&trace, &PriceTable::builtin(), &AnalysisOptions::default());
        assert_eq!(a.summary.calls, 0);
        assert!(a.chunks.is_empty() && a.heatmap.is_empty() && a.edges.is_empty());
        assert_eq!(a.summary.mean_value, 0.0);
        let round: Analysis =
            serde_json::from_str(&serde_json::to_string(&a).expect("json")).expect("back");
        assert_eq!(round, a);
        assert!(trace_entries(&[trace], &PriceTable::builtin())[0].calls == 0);
    }
}
