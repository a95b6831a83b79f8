//! A trace's summary, as `memlens inspect` prints it and the web app's overview shows it.

use crate::compaction::{compaction_reports, CompactionReport};
use crate::cost::{trace_cost, CallCost, PriceTable, TraceCost};
use crate::model::{Category, Trace};
use crate::references::AccessGraph;
use crate::tokens::{Encoding, TokenCounter};
pub use crate::unrecorded::UNRECORDED_ATTRIBUTE;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Token totals over a trace's distinct chunks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenTotals {
    /// Sum of every distinct chunk's tokens (the memory, each item once).
    pub total: u64,
    /// The same by category; categories with no chunks are left out.
    pub by_category: BTreeMap<Category, u64>,
}

/// One of the chunks that cost the most.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopChunk {
    /// Stable key.
    pub key: String,
    /// Category.
    pub category: Category,
    /// Tool name, for tool calls and results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Tokens.
    pub tokens: u32,
    /// Calls it rode along in.
    pub calls_carried: u32,
    /// Tokens times calls carried.
    pub token_calls: u64,
    /// Attributed input cost, `None` when unpriced.
    pub cost_usd: Option<f64>,
    /// The first characters of its content, on one line.
    pub preview: String,
}

/// The figures of one trace that `memlens inspect` ([`TraceSummary`]) and the web analyzer
/// (`analysis::Summary`) both report, computed once by [`summarize`] and flattened into each
/// (their JSON has these keys at the top level).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceFigures {
    /// Trace id.
    pub id: String,
    /// Importer.
    pub format: String,
    /// Main model.
    pub model: Option<String>,
    /// The encoding counts used (`"o200k_base"`, `"cl100k_base"`).
    pub encoding: Encoding,
    /// True when the model is not one whose tokenizer is known: counts are estimates.
    pub tokens_estimated: bool,
    /// Number of LLM calls.
    pub calls: usize,
    /// Number of distinct chunks.
    pub chunks: usize,
    /// The largest counted input of any call.
    pub peak_input_tokens: u64,
    /// The model's context window, when the price table knows it.
    pub context_window: Option<u64>,
    /// Sum of reported input tokens over calls that report usage; `None` when none do.
    pub reported_input_tokens: Option<u64>,
    /// Sum of counted input tokens over all calls (every call re-sends its context).
    pub counted_input_tokens: u64,
    /// Counted input over the calls that report usage, to compare with `reported_input_tokens`.
    pub counted_input_tokens_where_reported: Option<u64>,
    /// Of `counted_input_tokens`, the context the log does not record (the unrecorded item,
    /// estimated from reported usage: [`crate::unrecorded`]), summed over calls.
    #[serde(default)]
    pub unrecorded_input_tokens: u64,
    /// Reported over counted input where both are known: with a tokenizer that is an
    /// estimate, the factor that calibrates the log's counted part to the model's tokens.
    #[serde(default)]
    pub calibration: Option<Calibration>,
    /// Sum of counted output tokens.
    pub counted_output_tokens: u64,
    /// Tool pairs whose call is missing.
    pub orphan_tool_results: usize,
    /// Tool calls with no result.
    pub unanswered_tool_calls: usize,
    /// The price entry used; `None`: unpriced.
    pub priced_as: Option<String>,
    /// Total cost; `None` when unpriced.
    pub cost_usd: Option<f64>,
}

/// Summary of one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceSummary {
    /// The figures shared with the web analyzer.
    #[serde(flatten)]
    pub figures: TraceFigures,
    /// Token totals.
    pub tokens: TokenTotals,
    /// Probes (questions with evidence).
    pub probes: usize,
    /// Per-call detail: counted vs. reported input, shared prefix, cache, cost.
    pub calls_detail: Vec<CallCost>,
    /// The chunks with the highest attributed cost (by token-calls when unpriced).
    pub top_chunks: Vec<TopChunk>,
    /// The trace's compactions with their fidelity (what the summary kept, later misses).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub compactions: Vec<CompactionReport>,
    /// Why counted and reported figures may differ for this trace, one sentence each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Reported input against counted input over the calls that report it: how far the counts in
/// o200k (or the trace's encoding) stand from the provider's own tokenizer. A calibrated
/// estimate of the log's part in the model's tokens is `ratio` times its counted tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Reported input (less the unrecorded item) over counted input (less the item).
    pub ratio: f64,
    /// Calls that report input.
    pub calls: usize,
}

/// The [`Calibration`] of a trace's calls; `None` when no call reports input.
pub fn calibration(calls: &[CallCost]) -> Option<Calibration> {
    let (mut reported, mut counted, mut n) = (0u64, 0u64, 0usize);
    for c in calls {
        let Some(r) = c.reported_input.filter(|&r| r > 0) else {
            continue;
        };
        reported = reported.saturating_add(r.saturating_sub(c.unrecorded));
        counted += c.counted.input.saturating_sub(c.unrecorded);
        n += 1;
    }
    (n > 0 && counted > 0).then(|| Calibration {
        ratio: reported as f64 / counted as f64,
        calls: n,
    })
}

/// Summarizes a counted trace. `top` is how many top chunks to list.
pub fn summarize(trace: &Trace, prices: &PriceTable, top: usize) -> TraceSummary {
    // The access graph is only needed for the compactions' later misses.
    let graph = (!trace.compactions.is_empty()).then(|| crate::references::detect(trace));
    let cost = trace_cost(trace, prices);
    summarize_with(trace, prices, &cost, top, graph.as_ref())
}

/// [`summarize`] with the trace's cost and access graph already computed (`None`: compactions
/// not reported), for callers that need them too.
pub(crate) fn summarize_with(
    trace: &Trace,
    prices: &PriceTable,
    cost: &TraceCost,
    top: usize,
    graph: Option<&AccessGraph>,
) -> TraceSummary {
    // The counter's choice: estimated also when the vocabulary could not be loaded (`assets`).
    let choice = TokenCounter::for_model(trace.main_model()).choice();
    let mut by_category = BTreeMap::new();
    let mut total = 0u64;
    for c in &trace.chunks {
        *by_category.entry(c.category).or_insert(0) += u64::from(c.tokens);
        total += u64::from(c.tokens);
    }
    let reported: Vec<&CallCost> = cost
        .calls
        .iter()
        .filter(|c| c.reported_input.is_some())
        .collect();
    let (reported_input_tokens, counted_where_reported) = if reported.is_empty() {
        (None, None)
    } else {
        (
            // Saturating: reported counts come from the file (a fuzzed Gemini session overflowed).
            Some(
                reported
                    .iter()
                    .filter_map(|c| c.reported_input)
                    .fold(0, u64::saturating_add),
            ),
            Some(reported.iter().map(|c| c.counted.input).sum()),
        )
    };
    let mut order: Vec<usize> = (0..trace.chunks.len()).collect();
    order.sort_by(|&a, &b| {
        let (ca, cb) = (&cost.chunks[a], &cost.chunks[b]);
        cb.cost_usd
            .unwrap_or(0.0)
            .total_cmp(&ca.cost_usd.unwrap_or(0.0))
            .then(cb.token_calls.cmp(&ca.token_calls))
            .then(a.cmp(&b))
    });
    let top_chunks = order
        .into_iter()
        .take(top)
        .map(|i| {
            let (chunk, cc) = (&trace.chunks[i], &cost.chunks[i]);
            TopChunk {
                key: chunk.key.clone(),
                category: chunk.category,
                tool_name: chunk.meta.tool_name.clone(),
                tokens: chunk.tokens,
                calls_carried: cc.calls_carried,
                token_calls: cc.token_calls,
                cost_usd: cc.cost_usd,
                preview: preview(&chunk.content, 80),
            }
        })
        .collect();
    let context_window = cost
        .priced_as
        .as_deref()
        .and_then(|k| prices.models.get(k))
        .and_then(|p| p.context_window);
    let figures = TraceFigures {
        id: trace.id.clone(),
        format: trace.format.clone(),
        model: trace.main_model().map(str::to_string),
        encoding: choice.encoding,
        tokens_estimated: choice.estimated,
        calls: trace.calls.len(),
        chunks: trace.chunks.len(),
        peak_input_tokens: cost
            .calls
            .iter()
            .map(|c| c.counted.input)
            .max()
            .unwrap_or(0),
        context_window,
        reported_input_tokens,
        counted_input_tokens: cost.calls.iter().map(|c| c.counted.input).sum(),
        counted_input_tokens_where_reported: counted_where_reported,
        unrecorded_input_tokens: cost.calls.iter().map(|c| c.unrecorded).sum(),
        calibration: calibration(&cost.calls),
        counted_output_tokens: cost.calls.iter().map(|c| c.counted.output).sum(),
        orphan_tool_results: trace.orphan_results().count(),
        unanswered_tool_calls: trace.unanswered_calls().count(),
        priced_as: cost.priced_as.clone(),
        cost_usd: cost.total_usd,
    };
    TraceSummary {
        figures,
        tokens: TokenTotals { total, by_category },
        probes: trace.probes.len(),
        notes: notes(
            trace,
            choice.estimated,
            reported_input_tokens,
            counted_where_reported,
        ),
        calls_detail: cost.calls.clone(),
        top_chunks,
        compactions: graph.map_or_else(Vec::new, |g| compaction_reports(trace, g)),
    }
}

fn notes(
    trace: &Trace,
    estimated: bool,
    reported: Option<u64>,
    counted: Option<u64>,
) -> Vec<String> {
    let mut out = Vec::new();
    if estimated {
        out.push(format!(
            "tokens counted with o200k: {} has a tokenizer of its own, so counts are estimates",
            trace.main_model().unwrap_or("an unnamed model")
        ));
    }
    if let Some(item) = trace
        .chunks
        .iter()
        .find(|c| c.category == Category::Unrecorded)
    {
        out.push(format!(
            "the unrecorded item: {} tokens per call, {}",
            item.tokens, item.content
        ));
    } else if let Some(what) = trace.attributes.get(UNRECORDED_ATTRIBUTE) {
        out.push(match reported {
            Some(_) => format!(
                "the file does not record {what}; the reported usage shows none of it beyond counting noise"
            ),
            None => format!(
                "the file does not record {what}, and no call reports usage to estimate it from"
            ),
        });
    }
    if let (Some(reported), Some(counted)) = (reported, counted) {
        if reported > 0 && counted > 0 {
            let ratio = reported as f64 / counted as f64;
            if !(0.9..=1.1).contains(&ratio) {
                out.push(format!(
                    "reported input is {ratio:.2}x the counted input over the calls that report usage"
                ));
            }
        }
    }
    out
}

/// The first `max_chars` characters of `text` on one line, whitespace runs collapsed.
pub fn preview(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for word in text.split_whitespace() {
        if count > 0 {
            if count >= max_chars {
                out.push('…');
                return out;
            }
            out.push(' ');
            count += 1;
        }
        for ch in word.chars() {
            if count >= max_chars {
                out.push('…');
                return out;
            }
            out.push(ch);
            count += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::preview;

    #[test]
    fn preview_collapses_whitespace_and_cuts_on_chars() {
        assert_eq!(preview("a\n\n  b", 10), "a b");
        assert_eq!(preview("héllo wörld", 5), "héllo…");
        assert_eq!(preview("", 5), "");
    }
}
