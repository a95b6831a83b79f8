//! `memlens report`: one self-contained HTML page about the traces (see `memlens-report`).

use crate::atomic::write_atomically;
use crate::input::{ImportedFiles, Inputs};
use crate::sim::resolve_policies;
use memlens_core::analysis::{analyze, Analysis, AnalysisOptions};
use memlens_core::simulate::simulate;
use memlens_core::Trace;
use memlens_report::{costliest, render, PolicyResult, ReportInput, DEFAULT_POLICIES};
use std::path::PathBuf;

/// What `memlens report` was asked.
pub struct ReportArgs {
    /// The traces and how to read them.
    pub inputs: Inputs,
    /// Output file.
    pub output: PathBuf,
    /// Policies to compare (`all`: every built-in).
    pub policies: Vec<String>,
    /// Budgets to compare them at (none: no comparison).
    pub budgets: Vec<u32>,
    /// Trace ids to show in detail.
    pub traces: Vec<String>,
    /// Otherwise, this many costliest traces.
    pub detail: usize,
}

/// Writes the report; returns the files that failed to import (reported, not fatal).
pub fn run(args: &ReportArgs) -> Result<Vec<String>, String> {
    let (table, ImportedFiles { imports, errors }) = args.inputs.read()?;
    let traces: Vec<Trace> = imports.into_iter().flat_map(|(_, i)| i.traces).collect();
    if traces.is_empty() {
        return Err(match errors.first() {
            Some(e) => e.clone(),
            None => "no traces in the input".into(),
        });
    }
    let analyses: Vec<Analysis> = traces
        .iter()
        .map(|t| analyze(t, &table, &AnalysisOptions::default()))
        .collect();
    let detail = if args.traces.is_empty() {
        costliest(&analyses, args.detail)
    } else {
        args.traces
            .iter()
            .map(|id| {
                traces
                    .iter()
                    .position(|t| &t.id == id)
                    .ok_or_else(|| format!("--trace {id}: no trace with this id in the input"))
            })
            .collect::<Result<_, _>>()?
    };
    let comparison = compare(&traces, &args.policies, &args.budgets, &table)?;
    let source = args
        .inputs
        .files
        .iter()
        .map(|p| {
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let html = render(&ReportInput {
        source: &source,
        traces: &analyses,
        detail: &detail,
        comparison: &comparison,
        generator: concat!("memlens ", env!("CARGO_PKG_VERSION")),
    });
    write_atomically(&args.output, html.as_bytes())?;
    eprintln!(
        "wrote {} ({} trace(s), {} in detail, {} replays) to {}",
        human_size(html.len()),
        analyses.len(),
        detail.len(),
        comparison.len(),
        args.output.display()
    );
    Ok(errors)
}

fn compare(
    traces: &[Trace],
    policies: &[String],
    budgets: &[u32],
    prices: &memlens_core::cost::PriceTable,
) -> Result<Vec<PolicyResult>, String> {
    let policies = resolve_policies(policies, &DEFAULT_POLICIES)?;
    let mut results = Vec::with_capacity(policies.len() * budgets.len());
    for policy in &policies {
        for &budget in budgets {
            let report = simulate(traces, policy, budget, prices).map_err(|e| e.to_string())?;
            results.push(PolicyResult {
                policy: policy.name.clone(),
                budget,
                totals: report.totals,
            });
        }
    }
    Ok(results)
}

fn human_size(bytes: usize) -> String {
    if bytes >= 1_000_000 {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else {
        format!("{:.0} KB", bytes as f64 / 1e3)
    }
}

/// `--budgets 2000,4000` as numbers; `none` for no budget at all.
pub fn parse_budgets(values: &[String]) -> Result<Vec<u32>, String> {
    if values.len() == 1 && values[0] == "none" {
        return Ok(Vec::new());
    }
    values
        .iter()
        .map(|v| {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("--budgets: {v:?} is not a token count (or `none`)"))
        })
        .collect()
}
