//! The human-readable `inspect` report.

use crate::out::outln;
use memlens_core::compaction::ItemTally;
use memlens_core::report::{TopChunk, TraceSummary};
use memlens_core::Category;
use memlens_import::Import;
use memlens_report::fmt::{truncate, usd};
use std::collections::BTreeMap;

/// How many traces get a row of their own before the total.
pub const TRACE_ROWS: usize = 20;

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// Prints one file's report.
pub fn print_file(name: &str, result: &Import, summaries: &[TraceSummary], top: usize) {
    let calls: usize = summaries.iter().map(|s| s.figures.calls).sum();
    let chunks: usize = summaries.iter().map(|s| s.figures.chunks).sum();
    outln!(
        "{name}: {} trace(s), format {}, {calls} calls, {chunks} chunks, {} warning(s)",
        summaries.len(),
        result.format,
        result.warning_count
    );
    if let Some(s) = summaries.first() {
        let model = s.figures.model.as_deref().unwrap_or("no model given");
        let how = if s.figures.tokens_estimated {
            "estimated"
        } else {
            "exact"
        };
        outln!(
            "  model {model}; tokens counted with {} ({how})",
            s.figures.encoding
        );
    }
    let reported = print_traces(summaries, calls, chunks);
    print_categories(summaries);
    if let (Some(r), Some(counted)) = (
        reported,
        summaries
            .iter()
            .filter_map(|s| s.figures.counted_input_tokens_where_reported)
            .reduce(|a, b| a + b),
    ) {
        print_reported(summaries, r, counted);
    }
    let orphans: usize = summaries
        .iter()
        .map(|s| s.figures.orphan_tool_results)
        .sum();
    let unanswered: usize = summaries
        .iter()
        .map(|s| s.figures.unanswered_tool_calls)
        .sum();
    let probes: usize = summaries.iter().map(|s| s.probes).sum();
    outln!();
    outln!("  tool pairs: {orphans} orphaned result(s), {unanswered} unanswered call(s); probes: {probes}");
    print_links_and_notes(result, summaries);
    for s in summaries {
        print_compactions(s);
    }
    print_top_chunks(summaries, top);
    outln!();
}

/// The traces table: a row per trace (the first [`TRACE_ROWS`]), and their total where there is
/// more than one. Returns the input tokens the traces reported, where any did.
fn print_traces(summaries: &[TraceSummary], calls: usize, chunks: usize) -> Option<u64> {
    outln!();
    outln!(
        "  {:<28} {:>6} {:>7} {:>9} {:>12} {:>12} {:>10}",
        "trace",
        "calls",
        "chunks",
        "tokens",
        "input sent",
        "reported",
        "cost"
    );
    for s in summaries.iter().take(TRACE_ROWS) {
        outln!(
            "  {:<28} {:>6} {:>7} {:>9} {:>12} {:>12} {:>10}",
            truncate(&s.figures.id, 28),
            s.figures.calls,
            s.figures.chunks,
            s.tokens.total,
            s.figures.counted_input_tokens,
            opt(s.figures.reported_input_tokens),
            usd(s.figures.cost_usd)
        );
    }
    if summaries.len() > TRACE_ROWS {
        outln!("  ... {} more trace(s)", summaries.len() - TRACE_ROWS);
    }
    let sum = |f: fn(&TraceSummary) -> u64| summaries.iter().map(f).sum::<u64>();
    let reported: Option<u64> = summaries
        .iter()
        .filter_map(|s| s.figures.reported_input_tokens)
        .reduce(|a, b| a + b);
    let cost: Option<f64> = summaries.iter().map(|s| s.figures.cost_usd).sum();
    if summaries.len() > 1 {
        outln!(
            "  {:<28} {:>6} {:>7} {:>9} {:>12} {:>12} {:>10}",
            "total",
            calls,
            chunks,
            sum(|s| s.tokens.total),
            sum(|s| s.figures.counted_input_tokens),
            opt(reported),
            usd(cost)
        );
    }
    reported
}

/// Tokens by category over the whole file, each chunk once.
fn print_categories(summaries: &[TraceSummary]) {
    let mut by_cat: BTreeMap<Category, u64> = BTreeMap::new();
    for s in summaries {
        for (c, n) in &s.tokens.by_category {
            *by_cat.entry(*c).or_insert(0) += n;
        }
    }
    let total: u64 = by_cat.values().sum();
    outln!();
    outln!("  tokens by category (each chunk once):");
    for (c, n) in &by_cat {
        let share = if total > 0 {
            *n as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        outln!("    {:<12} {:>10} {:>6.1}%", c.as_str(), n, share);
    }
}

/// The `top` costliest chunks across the file.
fn print_top_chunks(summaries: &[TraceSummary], top: usize) {
    let mut tops: Vec<(&str, &TopChunk)> = summaries
        .iter()
        .flat_map(|s| s.top_chunks.iter().map(move |c| (s.figures.id.as_str(), c)))
        .collect();
    tops.sort_by(|a, b| {
        b.1.cost_usd
            .unwrap_or(0.0)
            .total_cmp(&a.1.cost_usd.unwrap_or(0.0))
            .then(b.1.token_calls.cmp(&a.1.token_calls))
    });
    outln!();
    outln!("  top {top} chunks by attributed input cost (tokens x calls carried):");
    for (trace, c) in tops.into_iter().take(top) {
        let label = if summaries.len() > 1 {
            format!("{trace}/{}", c.key)
        } else {
            c.key.clone()
        };
        let kind = match &c.tool_name {
            Some(t) => format!("{}:{t}", c.category),
            None => c.category.to_string(),
        };
        outln!(
            "    {:<30} {:<24} {:>6} tok x{:<4} {:>10}  {}",
            truncate(&label, 30),
            truncate(&kind, 24),
            c.tokens,
            c.calls_carried,
            usd(c.cost_usd),
            truncate(&c.preview, 60)
        );
    }
}

/// Subagent links (a trace started by a parent session's call) and the notes on counted vs.
/// reported figures, each distinct note once.
fn print_links_and_notes(result: &Import, summaries: &[TraceSummary]) {
    for t in result.traces.iter().filter(|t| t.parent.is_some()) {
        if let Some(p) = &t.parent {
            let call = p.call.map_or_else(
                || "(call not found in the files opened)".to_string(),
                |c| format!("call {c}"),
            );
            outln!("  subagent {}: started by {} {call}", t.id, p.trace);
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for s in summaries {
        for note in &s.notes {
            if seen.insert(note.as_str()) {
                outln!("  note: {note}");
            }
        }
    }
}

fn share(t: ItemTally) -> String {
    match t.share() {
        Some(s) => format!("{}/{} ({:.0}%)", t.kept, t.replaced, s * 100.0),
        None => "-".to_string(),
    }
}

/// A trace's compactions: what each replaced, what its summary kept, what later calls missed.
fn print_compactions(s: &TraceSummary) {
    if s.compactions.is_empty() {
        return;
    }
    outln!();
    outln!(
        "  compactions in {} ({}):",
        s.figures.id,
        s.compactions.len()
    );
    for c in &s.compactions {
        let reported = match (c.reported_tokens_before, c.reported_tokens_after) {
            (Some(b), Some(a)) => format!(", reported {b} -> {a} tokens"),
            (Some(b), None) => format!(", reported {b} tokens before"),
            _ => String::new(),
        };
        let summary = match &c.summary_key {
            Some(k) => format!("summary {k} ({} tok)", c.summary_tokens),
            None => "no summary recorded".to_string(),
        };
        outln!(
            "    #{} before call {} ({}{reported}): replaced {} chunks ({} tok) with {summary}",
            c.index + 1,
            c.first_call,
            c.trigger.as_deref().unwrap_or("trigger unknown"),
            c.replaced_chunks,
            c.replaced_tokens,
        );
        outln!(
            "       kept: identifiers {}, paths {}, commands {}, numbers {}, urls {}",
            share(c.identifiers),
            share(c.paths),
            share(c.commands),
            share(c.numbers),
            share(c.urls)
        );
        if c.later_miss_count > 0 {
            let examples: Vec<String> = c
                .later_misses
                .iter()
                .take(3)
                .map(|m| format!("{:?} (call {})", truncate(&m.evidence.text, 40), m.call))
                .collect();
            outln!(
                "       later calls that used lost content: {} use(s) in {} call(s), e.g. {}",
                c.later_miss_count,
                c.calls_with_misses,
                examples.join(", ")
            );
        } else {
            outln!("       no later call used content it lost");
        }
    }
}

/// Reported input against what MemLens counted, over the calls that report usage: the log's
/// part, the unrecorded item and the counting difference add up to what was billed.
fn print_reported(summaries: &[TraceSummary], reported: u64, counted: u64) {
    let unrecorded: u64 = summaries
        .iter()
        .flat_map(|s| &s.calls_detail)
        .filter(|c| c.reported_input.is_some())
        .map(|c| c.unrecorded)
        .sum();
    let diff = reported as i64 - counted as i64;
    let share = |n: i64| n as f64 * 100.0 / reported.max(1) as f64;
    outln!();
    outln!(
        "  reported input (calls with usage): {reported} = {} in the log + {unrecorded} not in the log ({:.1}%, unrecorded) {diff:+} counting difference ({:+.1}%)",
        counted - unrecorded,
        share(unrecorded as i64),
        share(diff)
    );
    if let [s] = summaries {
        if let Some(c) = s.figures.calibration.filter(|_| s.figures.tokens_estimated) {
            outln!(
                "  calibrated estimate: {} counts {:.3}x the {} count of the log's part (over {} calls); counts shown are {}",
                s.figures.model.as_deref().unwrap_or("the model"),
                c.ratio,
                s.figures.encoding,
                c.calls,
                s.figures.encoding
            );
        }
        for c in s
            .calls_detail
            .iter()
            .filter(|c| c.reported_input.is_some())
            .take(TRACE_ROWS)
        {
            outln!(
                "    call {:>3}: reported {:>8}  in log {:>8}  unrecorded {:>7}  diff {:>+6}  cached {:>7}",
                c.index,
                opt(c.reported_input),
                c.counted.input - c.unrecorded,
                c.unrecorded,
                c.input_diff.unwrap_or(0),
                c.cached_input
            );
        }
    }
}
