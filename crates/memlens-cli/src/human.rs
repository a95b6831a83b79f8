//! The human-readable `inspect` report.

use crate::fmt::{truncate, usd};
use memlens_core::report::{TopChunk, TraceSummary};
use memlens_core::Category;
use memlens_import::Import;
use std::collections::BTreeMap;

/// How many traces get a row of their own before the total.
const TRACE_ROWS: usize = 20;

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// Prints one file's report.
pub fn print_file(name: &str, result: &Import, summaries: &[TraceSummary], top: usize) {
    let calls: usize = summaries.iter().map(|s| s.calls).sum();
    let chunks: usize = summaries.iter().map(|s| s.chunks).sum();
    println!(
        "{name}: {} trace(s), format {}, {calls} calls, {chunks} chunks, {} warning(s)",
        summaries.len(),
        result.format,
        result.warning_count
    );
    if let Some(s) = summaries.first() {
        let model = s.model.as_deref().unwrap_or("no model given");
        let how = if s.tokens_estimated {
            "estimated"
        } else {
            "exact"
        };
        println!(
            "  model {model}; tokens counted with {} ({how})",
            s.encoding
        );
    }
    println!();
    println!(
        "  {:<28} {:>6} {:>7} {:>9} {:>12} {:>12} {:>10}",
        "trace", "calls", "chunks", "tokens", "input sent", "reported", "cost"
    );
    for s in summaries.iter().take(TRACE_ROWS) {
        println!(
            "  {:<28} {:>6} {:>7} {:>9} {:>12} {:>12} {:>10}",
            truncate(&s.id, 28),
            s.calls,
            s.chunks,
            s.tokens.total,
            s.counted_input_tokens,
            opt(s.reported_input_tokens),
            usd(s.cost_usd)
        );
    }
    if summaries.len() > TRACE_ROWS {
        println!("  ... {} more trace(s)", summaries.len() - TRACE_ROWS);
    }
    let sum = |f: fn(&TraceSummary) -> u64| summaries.iter().map(f).sum::<u64>();
    let reported: Option<u64> = summaries
        .iter()
        .filter_map(|s| s.reported_input_tokens)
        .reduce(|a, b| a + b);
    let cost: Option<f64> = summaries.iter().map(|s| s.cost_usd).sum();
    if summaries.len() > 1 {
        println!(
            "  {:<28} {:>6} {:>7} {:>9} {:>12} {:>12} {:>10}",
            "total",
            calls,
            chunks,
            sum(|s| s.tokens.total),
            sum(|s| s.counted_input_tokens),
            opt(reported),
            usd(cost)
        );
    }
    // Tokens by category over the whole file.
    let mut by_cat: BTreeMap<Category, u64> = BTreeMap::new();
    for s in summaries {
        for (c, n) in &s.tokens.by_category {
            *by_cat.entry(*c).or_insert(0) += n;
        }
    }
    let total: u64 = by_cat.values().sum();
    println!();
    println!("  tokens by category (each chunk once):");
    for (c, n) in &by_cat {
        let share = if total > 0 {
            *n as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        println!("    {:<12} {:>10} {:>6.1}%", c.as_str(), n, share);
    }
    if let (Some(r), Some(counted)) = (
        reported,
        summaries
            .iter()
            .filter_map(|s| s.counted_input_tokens_where_reported)
            .reduce(|a, b| a + b),
    ) {
        let diff = r as i64 - counted as i64;
        println!();
        println!(
            "  reported vs. counted input tokens (calls with usage): {r} vs. {counted} ({diff:+}, {:+.1}%)",
            diff as f64 * 100.0 / counted.max(1) as f64
        );
        if summaries.len() == 1 {
            for c in summaries[0]
                .calls_detail
                .iter()
                .filter(|c| c.reported_input.is_some())
                .take(TRACE_ROWS)
            {
                println!(
                    "    call {:>3}: reported {:>8}  counted {:>8}  diff {:>+6}  cached {:>7}",
                    c.index,
                    opt(c.reported_input),
                    c.counted.input,
                    c.input_diff.unwrap_or(0),
                    c.cached_input
                );
            }
        }
    }
    let orphans: usize = summaries.iter().map(|s| s.orphan_tool_results).sum();
    let unanswered: usize = summaries.iter().map(|s| s.unanswered_tool_calls).sum();
    let probes: usize = summaries.iter().map(|s| s.probes).sum();
    println!();
    println!("  tool pairs: {orphans} orphaned result(s), {unanswered} unanswered call(s); probes: {probes}");
    // Costliest chunks across the file.
    let mut tops: Vec<(&str, &TopChunk)> = summaries
        .iter()
        .flat_map(|s| s.top_chunks.iter().map(move |c| (s.id.as_str(), c)))
        .collect();
    tops.sort_by(|a, b| {
        b.1.cost_usd
            .unwrap_or(0.0)
            .total_cmp(&a.1.cost_usd.unwrap_or(0.0))
            .then(b.1.token_calls.cmp(&a.1.token_calls))
    });
    println!();
    println!("  top {top} chunks by attributed input cost (tokens x calls carried):");
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
        println!(
            "    {:<30} {:<24} {:>6} tok x{:<4} {:>10}  {}",
            truncate(&label, 30),
            truncate(&kind, 24),
            c.tokens,
            c.calls_carried,
            usd(c.cost_usd),
            truncate(&c.preview, 60)
        );
    }
    println!();
}
