//! Where a run's spend is heading: a linear trend fitted on its last calls, projected over the
//! next calls. Used for the recorded run and for a simulated policy's replay alike (each passes
//! its own per-call input tokens and costs), so the two projections compare.
//!
//! ```
//! use memlens_core::analysis::project;
//! // Input grows by 100 tokens a call; each call costs $0.001 more than the last.
//! let inputs = [1000, 1100, 1200, 1300];
//! let costs = [Some(0.010), Some(0.011), Some(0.012), Some(0.013)];
//! let p = project(&inputs, &costs, 2).expect("enough calls to fit");
//! assert!((p.tokens_per_call - 100.0).abs() < 1e-9);
//! assert!((p.input_tokens - (1400.0 + 1500.0)).abs() < 1e-6);
//! assert!((p.cost_usd.unwrap() - (0.014 + 0.015)).abs() < 1e-12);
//! ```

use serde::{Deserialize, Serialize};

/// How many of the last calls the trend is fitted on: recent growth, not the whole run's
/// average (a run's early calls are often unlike its steady state).
pub const TREND_WINDOW: usize = 20;

/// The next calls of a run, projected from its trend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    /// Calls the trend was fitted on (the last ones, at most [`TREND_WINDOW`]).
    pub fitted_calls: usize,
    /// Input tokens added per call (the fitted slope; negative when the context shrinks).
    pub tokens_per_call: f64,
    /// How many calls are projected.
    pub next_calls: u32,
    /// Projected input tokens over those calls (each call's fitted value, never below 0).
    pub input_tokens: f64,
    /// Projected cost over those calls, from the fitted per-call cost; `None` when any fitted
    /// call is unpriced.
    pub cost_usd: Option<f64>,
}

/// Least squares over `ys` at x = 0, 1, ...: (intercept, slope).
fn fit(ys: &[f64]) -> (f64, f64) {
    let n = ys.len() as f64;
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = ys.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (x, y) in ys.iter().enumerate() {
        let dx = x as f64 - mean_x;
        sxy += dx * (y - mean_y);
        sxx += dx * dx;
    }
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (mean_y - slope * mean_x, slope)
}

/// The fitted line's value at each of the `next` calls after the window, each at least 0.
fn ahead(ys: &[f64], next: u32) -> (Vec<f64>, f64) {
    let (intercept, slope) = fit(ys);
    let last = ys.len() as f64 - 1.0;
    let values = (1..=next)
        .map(|k| (intercept + slope * (last + f64::from(k))).max(0.0))
        .collect();
    (values, slope)
}

/// Projects the `next` calls after a run whose calls had these input tokens and costs (in call
/// order); `None` with fewer than two calls (no trend to fit).
pub fn project(inputs: &[u64], costs: &[Option<f64>], next: u32) -> Option<Projection> {
    project_within(inputs, costs, next, None)
}

/// [`project`] for a run whose context a policy holds to a budget: each projected call's input
/// stops at `budget` (or at the largest input the run already sent, if that is more: protected
/// items can exceed a budget), and its cost shrinks in proportion.
pub fn project_within(
    inputs: &[u64],
    costs: &[Option<f64>],
    next: u32,
    budget: Option<u64>,
) -> Option<Projection> {
    if inputs.len() < 2 {
        return None;
    }
    let window = inputs.len().min(TREND_WINDOW);
    let tail: Vec<f64> = inputs[inputs.len() - window..]
        .iter()
        .map(|&t| t as f64)
        .collect();
    let (tokens, tokens_per_call) = ahead(&tail, next);
    let cap = budget.map(|b| b.max(inputs.iter().copied().max().unwrap_or(0)) as f64);
    // The share of each projected call's tokens that stays under the cap.
    let kept: Vec<f64> = tokens
        .iter()
        .map(|&t| match cap {
            Some(cap) if t > cap => cap / t,
            _ => 1.0,
        })
        .collect();
    let input_tokens = tokens.iter().zip(&kept).map(|(t, k)| t * k).sum();
    let cost_tail: Option<Vec<f64>> = (costs.len() == inputs.len())
        .then(|| costs[costs.len() - window..].iter().copied().collect())
        .flatten();
    let cost_usd = cost_tail.map(|ys| {
        let (costs, _) = ahead(&ys, next);
        costs.iter().zip(&kept).map(|(c, k)| c * k).sum()
    });
    Some(Projection {
        fitted_calls: window,
        tokens_per_call,
        next_calls: next,
        input_tokens,
        cost_usd,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trend_is_fitted_on_the_last_calls_only() {
        // 30 calls: flat at 500 for 10, then +50 per call. The window sees only the growth.
        let inputs: Vec<u64> = (0..30u64)
            .map(|i| if i < 10 { 500 } else { 500 + 50 * (i - 9) })
            .collect();
        let p = project(&inputs, &[], 3).expect("fits");
        assert_eq!(p.fitted_calls, TREND_WINDOW);
        assert!((p.tokens_per_call - 50.0).abs() < 1e-9);
        // The last call is 500 + 50 * 20 = 1,500; the next three 1,550 + 1,600 + 1,650.
        assert!((p.input_tokens - 4800.0).abs() < 1e-6, "{}", p.input_tokens);
        assert_eq!(p.cost_usd, None, "no costs given");
    }

    #[test]
    fn a_shrinking_run_never_projects_negative_calls_and_unpriced_stays_unpriced() {
        let p = project(&[300, 200, 100], &[Some(0.3), None, Some(0.1)], 5).expect("fits");
        assert!((p.tokens_per_call + 100.0).abs() < 1e-9);
        assert_eq!(p.input_tokens, 0.0, "0, -100, ... clamp to 0");
        assert_eq!(p.cost_usd, None);
        assert!(project(&[100], &[Some(1.0)], 5).is_none());
    }

    #[test]
    fn a_budget_stops_the_line_and_scales_the_cost() {
        // +100 a call from 700: the next calls would be 1,100, 1,200, 1,300; the budget is 1,150.
        let inputs = [700, 800, 900, 1000];
        let costs = [Some(0.7), Some(0.8), Some(0.9), Some(1.0)];
        let p = project_within(&inputs, &costs, 3, Some(1150)).expect("fits");
        assert!((p.input_tokens - (1100.0 + 1150.0 + 1150.0)).abs() < 1e-6);
        let cost = 1.1 + 1.2 * (1150.0 / 1200.0) + 1.3 * (1150.0 / 1300.0);
        assert!((p.cost_usd.expect("priced") - cost).abs() < 1e-9);
        // A budget below what the run already sent caps at the run's largest input instead.
        let p = project_within(&inputs, &costs, 1, Some(10)).expect("fits");
        assert!((p.input_tokens - 1000.0).abs() < 1e-6);
    }
}
