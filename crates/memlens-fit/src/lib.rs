//! Value weights learned from the traces' own hindsight, and a value threshold chosen by replay.
//!
//! Every recorded trace says, through its access graph ([`memlens_core::references`]), which
//! chunks later steps used: free labels ([`memlens_core::hindsight`]). [`fit`] learns the value
//! weights from them (logistic regression over the value factors as the engine sees them at each
//! call, [`memlens_core::value::fit_weights`]), chooses the JSON fields of each tool's results
//! that no later step read to drop (`[tools.NAME] drop_fields`, [`drop_rules`]: only fields whose
//! use the reference detector could have seen, kept where the base policy replayed with them has
//! no more calls with a miss, on the training traces and on each fold of them when the fields are
//! chosen without it), then replays the training traces under the policy
//! with the fitted weights, and with the preset's, at each candidate value threshold, size
//! exponent of the eviction order (`value / tokens^e`), cleanup rule (evict past the budget
//! down to a share of it) and, where the traces' tool results are JSON, with them sent as they
//! are, minified (`compress.minify_json`) and as the fewer of minified and TOON
//! (`compress.toon_json`) (lossless, but it changes what has to be evicted), then at finer
//! thresholds just above the best one, then the best with the assistant's echoed replies evicted
//! (`evict_echoed_replies`), and keeps the candidate that saves the most input tokens
//! with misses in at most the ceiling's share of calls: the user's ceiling, lowered to the base
//! policy's own share on the same traces (a fitted policy misses no more than the one it started
//! from), and held with a confidence: in most resamplings of the training traces, not just on
//! them (misses come in runs within a trace; a threshold that only just fits the traces it was
//! chosen on misses more on others). Where that ceiling is zero, resampling traces without a miss
//! shows none, so the threshold is kept below the training traces' edge by k - 1 times as far as
//! leaving one of k folds of them out moved the edge ([`edge_margin`], a jackknife estimate). A
//! threshold acts in the kind of run most of the traces are (agent runs or conversations). [`cross_validate`] does it k times, holding out each fold of
//! traces, so the figures a user reads are on traces the fit did not see. The result is a
//! policy (`PolicyConfig`): the CLI writes it as a file every host reads.
//!
//! ```
//! use memlens_core::builder::{Message, TraceBuilder};
//! use memlens_core::cost::PriceTable;
//! use memlens_core::tokens::{count_trace, TokenCounter};
//! use memlens_fit::{cases, fit, FitOptions};
//!
//! let mut b = TraceBuilder::new("t", "example");
//! b.push_message(Message::text("system", "You are a travel agent."), None);
//! for i in 0..6 {
//!     b.push_message(Message::text("user", &format!("Booking code QX{i}77 please, row {i}.")), None);
//!     b.push_message(Message::text("assistant", &format!("Noted QX{i}77.")), None);
//! }
//! b.reconstruct_calls();
//! let (mut trace, _) = b.finish();
//! count_trace(&mut trace, &TokenCounter::for_model(None));
//!
//! let traces = [trace];
//! let cases = cases(&traces);
//! let options = FitOptions { budget: 200, ..FitOptions::default() };
//! let fitted = fit(&cases.iter().collect::<Vec<_>>(), &options, &PriceTable::builtin()).unwrap();
//! assert!(fitted.train.calls > 0);
//! assert_eq!(fitted.policy.name, "value-fitted");
//! ```

mod candidates;
mod ceiling;
mod field_drops;
mod fields;
mod folds;
mod margin;
mod replay;
mod samples;
#[cfg(test)]
mod tests;

pub use candidates::run_kind;
pub use ceiling::{within_ceiling, RESAMPLES};
pub use field_drops::{FieldDrops, FieldTrial};
pub use fields::{drop_rules, field_uses, DropRules, FieldUse};
pub use folds::{cross_validate, fit_and_validate, Fold};
pub use margin::{edge_margin, EdgeMargin, ThresholdRun};
pub use replay::{evaluate, evaluate_each, total, Outcome};
pub use samples::samples;

use candidates::{json_forms, keep_below_edge, Replayer, Settings};
use ceiling::{choose, Ceiling};
use field_drops::{choose_field_drops, with_field_drops};
use memlens_core::cost::PriceTable;
use memlens_core::model::Trace;
use memlens_core::policy::{Cleanup, PolicyConfig, PolicyError, TraceMemo};
use memlens_core::references::{detect, AccessGraph};
use memlens_core::value::{fit_weights, FitReport, Weights};
use serde::Serialize;

/// A trace with its access graph (found once: every replay of the trace reads it) and what its
/// replays read of its chunks once ([`TraceMemo`]: every candidate replays every trace).
pub struct Case<'a> {
    /// The trace, counted.
    pub trace: &'a Trace,
    /// Its access graph.
    pub graph: AccessGraph,
    /// Its chunks' texts as the engine read them, shared by its replays (and threads).
    pub memo: TraceMemo,
}

/// Each trace with its access graph.
pub fn cases(traces: &[Trace]) -> Vec<Case<'_>> {
    traces
        .iter()
        .map(|trace| Case {
            trace,
            graph: detect(trace),
            memo: TraceMemo::new(trace.chunks.len()),
        })
        .collect()
}

/// Why fitting failed.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// The base policy or a candidate could not be built.
    #[error("policy {policy}: {source}")]
    Policy {
        /// The policy's name.
        policy: String,
        /// What the engine said.
        source: PolicyError,
    },
    /// Nothing to fit on.
    #[error("no trace with a call to fit on")]
    NoCalls,
    /// Fewer traces than folds.
    #[error("{folds} folds need at least {folds} traces; there are {traces}")]
    TooFewTraces {
        /// Folds asked for.
        folds: usize,
        /// Traces given.
        traces: usize,
    },
}

/// What [`fit`] fits and under which constraint.
#[derive(Debug, Clone)]
pub struct FitOptions {
    /// The policy fitted: its strategy, protection and compression are kept; its value weights
    /// and value threshold are what the fit chooses.
    pub base: PolicyConfig,
    /// The budget the policy runs at.
    pub budget: u32,
    /// The ceiling: at most this share of calls with a miss, on the training traces.
    pub max_miss_rate: f64,
    /// Lower the ceiling to the base policy's own share of calls with a miss on the training
    /// traces, when that is lower: the fitted policy misses no more than the base.
    pub no_more_misses_than_base: bool,
    /// A candidate is within the ceiling when it is on the training traces and in at least this
    /// share of [`RESAMPLES`] resamplings of them (traces drawn with replacement, a fixed seed);
    /// 0 asks only the former.
    pub confidence: f64,
    /// Candidate value thresholds (the fit also tries none).
    pub thresholds: Vec<f32>,
    /// Finer thresholds tried after the grid: this many, evenly between the best candidate's
    /// threshold and the next one of `thresholds` above it, with the best one's other settings
    /// (value scores bunch, so a grid step can be the difference between within and far over).
    pub threshold_steps: usize,
    /// Candidate size exponents of the eviction order (`value / tokens^e`; the fit also tries
    /// the base's own).
    pub size_exponents: Vec<f32>,
    /// Candidate cleanup rules (evict once past `trigger` of the budget, down to `target`; the
    /// fit also tries the base's own).
    pub cleanups: Vec<Cleanup>,
    /// Also try every candidate with JSON tool results sent in fewer tokens, losslessly:
    /// minified (`compress.minify_json`, when some tool result in the traces has whitespace to
    /// lose) and as the fewer of minified and TOON (`compress.toon_json`), when the base sends
    /// them as they are and some tool result is JSON.
    pub try_lossless_json: bool,
    /// Also replay the chosen candidate with `evict_echoed_replies` (in the kind of run fitted
    /// on), and keep it where it saves more within the ceiling.
    pub try_echoed_replies: bool,
    /// Candidate shares for dropping JSON fields of tool results (`[tools.NAME] drop_fields`):
    /// at each, the fields later calls used in at most that share of their tool's results
    /// ([`field_uses`], [`drop_rules`]); empty: fields are not dropped. Tried before the grid on
    /// the base policy: the set that saves the most without more calls with a miss (or within
    /// the ceiling) is kept for every candidate.
    pub field_drop_shares: Vec<f64>,
    /// A field is only dropped when at least this many of its tool's results hold it. A field
    /// no later call used in n results may still be used in up to about 3/n of others (the
    /// "rule of three", at 95% confidence): 60 keeps that under 5%. Fewer let fields used by one
    /// task in forty through (tau-bench at 8,000 tokens, 5 results: misses in 0.3% of held-out
    /// calls against none).
    pub min_field_results: u32,
    /// Each share's fields are also chosen on all but one of this many folds of the training
    /// traces and replayed on the fold left out; a share is kept only where those held-out
    /// replays miss no more than keeping every field does, or hold the ceiling. Fields unused in
    /// every training trace can still be used in others: at 8,000 tokens on tau-bench, fields
    /// chosen on four fifths of the trajectories missed in 0.2% of the fifth's calls where
    /// keeping them missed none. Below 2 (or with fewer traces), only the training replay
    /// decides.
    pub field_drop_folds: usize,
    /// Where the ceiling is zero, the chosen threshold's edge is found again with each of this
    /// many (k) folds of the training traces left out, and the threshold kept k - 1 times as far
    /// below it as leaving a fold out moved it to a threshold that missed there
    /// ([`edge_margin`]). Below 2, the highest threshold without a miss on the training traces
    /// is kept.
    pub edge_folds: usize,
    /// At most this many samples for the weights (an even stride through them beyond): the
    /// regression's cost is linear in them, and tens of thousands pin the weights down.
    pub max_samples: usize,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            base: PolicyConfig::builtin("value").expect("`value` is a built-in policy"),
            budget: 4000,
            max_miss_rate: 0.01,
            no_more_misses_than_base: true,
            confidence: 0.9,
            thresholds: (1..=12).map(|i| i as f32 * 0.05).collect(),
            threshold_steps: 4,
            size_exponents: vec![0.0, 0.5],
            // Past the budget, down to three quarters of it: the context then grows for a few
            // calls with its cached prefix intact instead of losing a chunk every call.
            cleanups: vec![Cleanup {
                trigger: 1.0,
                target: 0.75,
            }],
            try_lossless_json: true,
            try_echoed_replies: true,
            field_drop_shares: vec![0.0, 0.01, 0.03],
            min_field_results: 60,
            field_drop_folds: 5,
            edge_folds: 5,
            max_samples: 50_000,
        }
    }
}

/// Where a candidate's weights came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightsFrom {
    /// Learned from the hindsight labels.
    Fitted,
    /// The base policy's own.
    Base,
}

/// One policy the fit replayed on the training traces.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// Its weights.
    pub weights: WeightsFrom,
    /// Its value threshold.
    pub threshold: Option<f32>,
    /// Its size exponent (`None`: the base's own).
    pub size_exponent: Option<f32>,
    /// Its cleanup rule (`None`: the base's own).
    pub cleanup: Option<Cleanup>,
    /// Whether it sends JSON tool results minified (`compress.minify_json`).
    pub minify_json: bool,
    /// Whether it sends JSON tool results as TOON where that is fewer tokens
    /// (`compress.toon_json`).
    pub toon_json: bool,
    /// Whether it evicts the assistant's replies whose facts are sent elsewhere
    /// (`evict_echoed_replies`, in the kind of run fitted on).
    pub echoed_replies: bool,
    /// Its replay of the training traces.
    pub outcome: Outcome,
    /// Calls and calls with a miss in each training trace (what the resamplings draw from).
    #[serde(skip)]
    pub per_trace: Vec<(u64, u64)>,
}

/// A fitted policy and how it did on the traces it was fitted on.
#[derive(Debug, Clone)]
pub struct Fitted {
    /// The policy: the base with the chosen weights and threshold, named `<base>-fitted`.
    pub policy: PolicyConfig,
    /// Where the chosen weights came from (the preset's win when the learned ones do worse).
    pub weights_from: WeightsFrom,
    /// The regression: the learned weights and how well they separate used from unused chunks.
    pub regression: FitReport,
    /// The base policy's weights, to compare.
    pub base_weights: Weights,
    /// Samples the regression saw (after the stride).
    pub samples: usize,
    /// The chosen candidate's replay of the training traces.
    pub train: Outcome,
    /// The base policy's replay of the same traces, as it is.
    pub base_train: Outcome,
    /// The ceiling applied: the user's, or the base's share of calls with a miss where lower
    /// ([`FitOptions::no_more_misses_than_base`]).
    pub ceiling: f64,
    /// Whether the chosen candidate is within the ceiling with the confidence asked (when none
    /// is, the one with the fewest calls with misses is chosen).
    pub within_ceiling: bool,
    /// Every candidate replayed.
    pub candidates: Vec<Candidate>,
    /// The JSON fields dropped from each tool's results (in the policy's `tools`), and the
    /// replays that chose them.
    pub field_drops: FieldDrops,
    /// Where the ceiling is zero and a threshold was chosen: its edge on the training traces
    /// and the margin kept below it ([`FitOptions::edge_folds`]); `None` where no margin was
    /// needed.
    pub edge: Option<EdgeMargin>,
}

/// Fits the base policy's value weights and value threshold on `cases`; see the crate docs.
pub fn fit(cases: &[&Case], options: &FitOptions, prices: &PriceTable) -> Result<Fitted, FitError> {
    let base = &options.base;
    let base_config = base.value_config().map_err(|source| FitError::Policy {
        policy: base.name.clone(),
        source,
    })?;
    let all = samples::training_samples(cases, &base_config, options.max_samples)?;
    let regression = fit_weights(&all, &base_config);

    // A threshold learned on agent runs drops what a conversation still needs, and the other
    // way round: the fitted threshold acts in the kind of run it was mostly fitted on.
    let runs = run_kind(cases.iter().map(|c| c.trace));
    let base_train = evaluate(cases, base, options.budget, prices)?;
    let ceiling = Ceiling {
        share: if options.no_more_misses_than_base {
            options.max_miss_rate.min(base_train.miss_rate())
        } else {
            options.max_miss_rate
        },
        confidence: options.confidence,
    };
    let json_forms = json_forms(base, options, cases);
    // Fields no later step reads are dropped first, for every candidate: they change what has
    // to be evicted, and so which threshold fits.
    let field_drops = choose_field_drops(cases, base, &json_forms, options, prices, ceiling.share)?;
    let replayer = Replayer::new(
        cases,
        with_field_drops(base, &field_drops.chosen),
        &base_config,
        &regression.weights,
        runs,
        options.budget,
        prices,
    );
    let mut candidates = replayer.grid(options, &json_forms)?;
    let finer = replayer.finer_thresholds(&candidates, options, ceiling)?;
    candidates.extend(finer);
    let mut best = choose(&candidates, |c| ceiling.holds(c))
        .cloned()
        .ok_or(FitError::NoCalls)?;
    let edge = keep_below_edge(
        &replayer,
        &mut candidates,
        &mut best,
        ceiling,
        options.edge_folds,
    )?;
    // Last, the best so far with the assistant's echoed replies evicted.
    if options.try_echoed_replies {
        best = replayer.try_echoed_replies(best, &mut candidates, ceiling)?;
    }
    Ok(Fitted {
        policy: replayer.policy(&Settings::of(&best)),
        weights_from: best.weights,
        base_weights: base_config.weights.clone(),
        regression,
        samples: all.len(),
        train: best.outcome,
        base_train,
        ceiling: ceiling.share,
        within_ceiling: ceiling.holds(&best),
        candidates,
        field_drops,
        edge,
    })
}
