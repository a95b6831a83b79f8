//! One trace, analyzed for a viewer: what the web app shows and the npm package's `analyzeTrace`
//! returns. Everything here is read off the core's own results — [`report::summarize`] for the
//! numbers `memlens inspect` prints, [`cost::trace_cost`] for attributed cost, [`value::score_trace`]
//! and [`ValueEngine`](crate::value::ValueEngine) for values, [`references::detect`] for the access graph and
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
//! assert_eq!(a.summary.figures.calls, 2);
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
use crate::cost::{trace_cost, PriceTable, TraceCost};
use crate::diff::{call_changes, PrefixCause};
use crate::model::{Category, Trace, TraceLink};
use crate::references::{detect, AccessGraph, EvidenceKind};
use crate::report::{preview, summarize, summarize_with, TraceFigures};
use crate::value::{replay_values, score_trace, ChunkValue, Factors, ValueConfig, Weights};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

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
    /// The figures `memlens inspect` reports too (flattened: the same top-level keys).
    #[serde(flatten)]
    pub figures: TraceFigures,
    /// Sum of every distinct chunk's tokens.
    pub total_tokens: u64,
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
    /// Of `input_tokens`, the unrecorded item's (context the log does not hold, estimated).
    #[serde(default)]
    pub unrecorded_tokens: u64,
    /// Input tokens served from cache (reported or modeled).
    pub cached_input: u64,
    /// Counted output tokens.
    pub output_tokens: u64,
    /// Cost of the call, `None` when unpriced.
    pub cost_usd: Option<f64>,
    /// Why the prefix shared with the previous call ended where it did ([`crate::diff`]).
    pub cause: PrefixCause,
    /// The chunk at the break (index), when something broke.
    pub break_at: Option<u32>,
    /// Tokens of the previous input re-sent after the break.
    pub resent_tokens: u64,
    /// The cache reads the break lost, in USD; `None` when unpriced.
    pub miss_usd: Option<f64>,
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
    let cost = trace_cost(trace, prices);
    let mut summary = summarize_with(trace, prices, &cost, 0, Some(&graph));
    let summary_compactions = std::mem::take(&mut summary.compactions);
    let n_calls = trace.calls.len() as u32;

    let categories: Vec<Category> = Category::ALL
        .into_iter()
        .filter(|c| trace.chunks.iter().any(|x| x.category == *c))
        .collect();

    let (calls, first, last) = call_rows(trace, prices, &cost, &categories);

    // Values as of the end of the run, with every use the detector found.
    let uses: Vec<u32> = trace.chunks.iter().map(|c| graph.use_count(c.id)).collect();
    let values = score_trace(trace, &options.value, &uses, n_calls, None);

    let chunks = chunk_rows(
        trace,
        &cost,
        &graph,
        &values,
        &uses,
        (&first, &last),
        options,
    );

    let total_tokens = summary.tokens.total;
    let (by_category, by_tool) =
        groups(&chunks, &categories, total_tokens, cost.priced_as.is_some());

    // The heatmap replays the value engine at every call: skipped when no row is wanted.
    let (heatmap, heatmap_total_rows) = if options.max_heatmap_rows == 0 {
        let rows = first
            .iter()
            .zip(&last)
            .filter(|(f, l)| f.is_some() && l.is_some());
        (Vec::new(), rows.count())
    } else {
        let mut rows = heatmap(trace, &graph, &options.value, &first, &last);
        let total = rows.len();
        rows.truncate(options.max_heatmap_rows);
        (rows, total)
    };
    let edges = edges(&graph);

    let mean_value = if chunks.is_empty() {
        0.0
    } else {
        chunks.iter().map(|c| c.value).sum::<f32>() / chunks.len() as f32
    };
    Analysis {
        summary: Summary {
            figures: summary.figures,
            total_tokens,
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

/// Per call: tokens by category (the stacked chart) and the cost figures; with, per chunk, the
/// first and last call carrying it.
fn call_rows(
    trace: &Trace,
    prices: &PriceTable,
    cost: &TraceCost,
    categories: &[Category],
) -> (Vec<CallRow>, Vec<Option<u32>>, Vec<Option<u32>>) {
    let n = trace.chunks.len();
    let column: HashMap<Category, usize> = categories
        .iter()
        .enumerate()
        .map(|(i, &c)| (c, i))
        .collect();
    let mut first = vec![None::<u32>; n];
    let mut last = vec![None::<u32>; n];
    let mut calls = Vec::with_capacity(trace.calls.len());
    let changes = call_changes(trace, prices);
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
            unrecorded_tokens: cc.map_or(0, |c| c.unrecorded),
            cached_input: cc.map_or(0, |c| c.cached_input),
            output_tokens: cc.map_or(0, |c| c.counted.output),
            cost_usd: cc.and_then(|c| c.cost_usd),
            cause: changes.get(i).map_or(PrefixCause::FirstCall, |c| c.cause),
            break_at: changes.get(i).and_then(|c| c.at).map(|id| id.0),
            resent_tokens: changes.get(i).map_or(0, |c| c.resent_tokens),
            miss_usd: changes.get(i).and_then(|c| c.miss_usd),
        });
    }

    (calls, first, last)
}

/// One row per chunk: tokens, value and factors, cost, calls carried, uses.
fn chunk_rows(
    trace: &Trace,
    cost: &TraceCost,
    graph: &AccessGraph,
    values: &[ChunkValue],
    uses: &[u32],
    (first, last): (&[Option<u32>], &[Option<u32>]),
    options: &AnalysisOptions,
) -> Vec<ChunkRow> {
    let n = trace.chunks.len();
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

    chunks
}

/// Tokens and cost by category and by tool (tools by cost, then token-calls).
fn groups(
    chunks: &[ChunkRow],
    categories: &[Category],
    total_tokens: u64,
    priced: bool,
) -> (Vec<Group>, Vec<Group>) {
    let group = |name: String, rows: &[&ChunkRow]| Group {
        name,
        chunks: rows.len(),
        tokens: rows.iter().map(|r| u64::from(r.tokens)).sum(),
        share: rows.iter().map(|r| r.tokens as f64).sum::<f64>() / (total_tokens.max(1) as f64),
        token_calls: rows.iter().map(|r| r.token_calls).sum(),
        cost_usd: priced.then(|| rows.iter().filter_map(|r| r.cost_usd).sum()),
    };
    let by_category: Vec<Group> = categories
        .iter()
        .map(|&c| {
            let rows: Vec<&ChunkRow> = chunks.iter().filter(|r| r.category == c).collect();
            group(c.as_str().to_string(), &rows)
        })
        .collect();
    let mut tools: BTreeMap<&str, Vec<&ChunkRow>> = BTreeMap::new();
    for r in chunks {
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

    (by_category, by_tool)
}

/// The access graph's references, each with its strongest evidence.
fn edges(graph: &AccessGraph) -> Vec<Edge> {
    graph
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
        .collect()
}

/// The value of each chunk at each call that carried it, as a live engine would have seen it then
/// ([`replay_values`]: the same replay the fit learns from).
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
    replay_values(trace, graph, config, |engine, step| {
        let i = step.call.index;
        let values = engine.values(&step.ids, i, step.now_secs, step.query);
        for (id, v) in step.ids.iter().zip(values) {
            if let Some(Some(row)) = rows.get_mut(id.index()) {
                if let Some(cell) = row.cells.get_mut((i - row.first_call) as usize) {
                    *cell = 1 + (v.clamp(0.0, 1.0) * 254.0).round() as u8;
                }
            }
        }
    });
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
                id: s.figures.id,
                model: s.figures.model,
                calls: s.figures.calls,
                chunks: s.figures.chunks,
                total_tokens: s.tokens.total,
                counted_input_tokens: s.figures.counted_input_tokens,
                cost_usd: s.figures.cost_usd,
            }
        })
        .collect()
}

mod call_view;
mod projection;
mod replay;
#[cfg(test)]
mod tests;

pub use call_view::{call_view, component_of, CallChunk, CallView, Component};
pub use projection::{project, project_within, Projection, TREND_WINDOW};
pub use replay::{
    context_at, simulate_view, simulated_compactions, ContextDiff, DiffLine, Fate, SimCall, SimView,
};
