//! Replaying a policy over the training traces: each trace's outcome, and their sum.

use memlens_core::cost::PriceTable;
use memlens_core::policy::PolicyConfig;
use memlens_core::simulate::simulate_trace_with_memo;
use serde::Serialize;

use crate::{Case, FitError};

/// A policy's replay of a set of traces at one budget, summed: what the fit maximizes (tokens
/// saved) and bounds (the share of calls with a miss).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Outcome {
    /// Traces replayed.
    pub traces: usize,
    /// Calls replayed.
    pub calls: u64,
    /// Calls where a later-used item was not sent.
    pub calls_with_misses: u64,
    /// Items later steps used that were not sent.
    pub misses: u64,
    /// Input tokens the policy sent.
    pub input_tokens: u64,
    /// Input tokens keeping everything sends.
    pub full_input_tokens: u64,
}

impl Outcome {
    /// Share of input tokens saved against keeping everything.
    pub fn saved(&self) -> f64 {
        if self.full_input_tokens == 0 {
            return 0.0;
        }
        (self.full_input_tokens as f64 - self.input_tokens as f64) / self.full_input_tokens as f64
    }

    /// Share of calls with at least one miss.
    pub fn miss_rate(&self) -> f64 {
        if self.calls == 0 {
            return 0.0;
        }
        self.calls_with_misses as f64 / self.calls as f64
    }
}

/// Replays every case under `policy` at `budget` and sums the outcome.
pub fn evaluate(
    cases: &[&Case],
    policy: &PolicyConfig,
    budget: u32,
    prices: &PriceTable,
) -> Result<Outcome, FitError> {
    Ok(total(evaluate_each(cases, policy, budget, prices)?))
}

/// Replays every case under `policy` at `budget`: one outcome per case, in order.
pub fn evaluate_each(
    cases: &[&Case],
    policy: &PolicyConfig,
    budget: u32,
    prices: &PriceTable,
) -> Result<Vec<Outcome>, FitError> {
    cases
        .iter()
        .map(|case| {
            let memo = Some(&case.memo);
            let sim =
                simulate_trace_with_memo(case.trace, &case.graph, policy, budget, prices, memo)
                    .map_err(|source| FitError::Policy {
                        policy: policy.name.clone(),
                        source,
                    })?;
            let t = &sim.totals;
            Ok(Outcome {
                traces: 1,
                calls: t.calls,
                calls_with_misses: t.calls_with_misses,
                misses: t.misses,
                input_tokens: t.input_tokens,
                full_input_tokens: t.full_input_tokens,
            })
        })
        .collect()
}

/// Outcomes summed over folds (each held-out trace counted once).
pub fn total(outcomes: impl IntoIterator<Item = Outcome>) -> Outcome {
    outcomes
        .into_iter()
        .fold(Outcome::default(), |a, b| Outcome {
            traces: a.traces + b.traces,
            calls: a.calls + b.calls,
            calls_with_misses: a.calls_with_misses + b.calls_with_misses,
            misses: a.misses + b.misses,
            input_tokens: a.input_tokens + b.input_tokens,
            full_input_tokens: a.full_input_tokens + b.full_input_tokens,
        })
}
