//! What the worker computes on a loaded trace: its analysis, one call's breakdown, replays
//! under policies (one, a budget sweep, a comparison, the frontier, the context at a call) and
//! the static report.

use super::{now, trace_and_graph, trace_of, State};
use crate::protocol::Response;
use memlens_core::analysis::{
    analyze, call_view, context_at, simulate_view, simulated_compactions, AnalysisOptions,
};
use memlens_core::cost::PriceTable;
use memlens_core::policy::PolicyConfig;
use memlens_core::references::AccessGraph;
use memlens_core::Trace;

/// `Request::Analyze`: the analysis of trace `trace` and its chunks' contents.
pub(super) fn analysis(
    state: &State,
    prices: &PriceTable,
    trace: usize,
    options: &AnalysisOptions,
) -> Result<Response, String> {
    let start = now();
    let t = trace_of(state, trace)?;
    let analysis = analyze(t, prices, options);
    let contents = t.chunks.iter().map(|c| c.content.clone()).collect();
    Ok(Response::Analysis {
        trace,
        analysis: Box::new(analysis),
        contents,
        millis: now() - start,
    })
}

/// `Request::CallView`: call `call` of trace `trace` broken down.
pub(super) fn call(
    state: &State,
    prices: &PriceTable,
    trace: usize,
    call: u32,
) -> Result<Response, String> {
    let t = trace_of(state, trace)?;
    let view = call_view(t, prices, call).map(Box::new);
    Ok(Response::CallView { view })
}

/// `Request::Simulate`: one replay, with the summaries the policy made.
pub(super) fn simulate(
    state: &mut State,
    prices: &PriceTable,
    trace: usize,
    policy: &PolicyConfig,
    budget: u32,
) -> Result<Response, String> {
    let (t, g) = trace_and_graph(state, trace)?;
    let mut view = simulate_view(t, g, policy, budget, prices).map_err(|e| e.to_string())?;
    view.summaries =
        simulated_compactions(t, g, policy, budget, prices).map_err(|e| e.to_string())?;
    Ok(Response::Sim { view })
}

/// `Request::Sweep`: one policy at each budget.
pub(super) fn sweep(
    state: &mut State,
    prices: &PriceTable,
    trace: usize,
    policy: &PolicyConfig,
    budgets: &[u32],
) -> Result<Response, String> {
    let (t, g) = trace_and_graph(state, trace)?;
    let views = budgets
        .iter()
        .map(|&b| simulate_view(t, g, policy, b, prices))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    Ok(Response::Sweep { views })
}

/// `Request::Compare`: each policy at one budget.
pub(super) fn compare(
    state: &mut State,
    prices: &PriceTable,
    trace: usize,
    policies: &[PolicyConfig],
    budget: u32,
) -> Result<Response, String> {
    let (t, g) = trace_and_graph(state, trace)?;
    let views = policies
        .iter()
        .map(|p| simulate_view(t, g, p, budget, prices))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    Ok(Response::Compare { views })
}

/// `Request::Replays`: every policy at every budget, totals only (the frontier).
pub(super) fn replays(
    state: &mut State,
    prices: &PriceTable,
    trace: usize,
    policies: &[PolicyConfig],
    budgets: &[u32],
) -> Result<Response, String> {
    let (t, g) = trace_and_graph(state, trace)?;
    let mut results = Vec::with_capacity(policies.len() * budgets.len());
    for p in policies {
        for &budget in budgets {
            let v = simulate_view(t, g, p, budget, prices).map_err(|e| e.to_string())?;
            results.push((v.policy, v.budget, v.totals));
        }
    }
    Ok(Response::Replays { trace, results })
}

/// `Request::Diff`: the context the policy sends at call `call`.
pub(super) fn diff(
    state: &mut State,
    prices: &PriceTable,
    trace: usize,
    (policy, budget): (&PolicyConfig, u32),
    call: u32,
) -> Result<Response, String> {
    let (t, g) = trace_and_graph(state, trace)?;
    let diff = context_at(t, g, policy, budget, prices, call).map_err(|e| e.to_string())?;
    Ok(Response::Diff { diff })
}

/// The static report of one trace, as `memlens report FILE --trace ID` writes it: the report's
/// default policies replayed at its default budgets.
pub(super) fn report(
    trace: &Trace,
    graph: &AccessGraph,
    prices: &PriceTable,
    options: &AnalysisOptions,
    source: &str,
) -> Result<Response, String> {
    let analysis = analyze(trace, prices, options);
    let mut comparison = Vec::new();
    for name in memlens_report::DEFAULT_POLICIES {
        let policy = PolicyConfig::builtin(name).map_err(|e| e.to_string())?;
        for budget in memlens_report::DEFAULT_BUDGETS {
            let v =
                simulate_view(trace, graph, &policy, budget, prices).map_err(|e| e.to_string())?;
            comparison.push(memlens_report::PolicyResult {
                policy: v.policy,
                budget: v.budget,
                totals: v.totals,
            });
        }
    }
    let html = memlens_report::render(&memlens_report::ReportInput {
        source,
        traces: std::slice::from_ref(&analysis),
        detail: &[0],
        comparison: &comparison,
        generator: concat!("memlens ", env!("CARGO_PKG_VERSION")),
    });
    let stem = analysis.summary.figures.id.replace(['/', ' '], "-");
    Ok(Response::Report {
        html,
        file_name: format!("{stem}.report.html"),
    })
}
