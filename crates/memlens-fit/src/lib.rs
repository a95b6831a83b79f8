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

mod fields;
mod margin;

pub use fields::{drop_rules, field_uses, DropRules, FieldUse};
pub use margin::{edge_margin, EdgeMargin, ThresholdRun};

use memlens_core::cost::PriceTable;
use memlens_core::model::{Category, ChunkId, Trace};
use memlens_core::policy::compress::{minify_json, toon_json};
use memlens_core::policy::{Cleanup, PolicyConfig, PolicyError, RunKind};
use memlens_core::references::{detect, AccessGraph};
use memlens_core::simulate::simulate_trace;
use memlens_core::time::timestamp_secs;
use memlens_core::value::{
    fit_weights, splitmix64, Factors, FitReport, Label, ValueConfig, ValueEngine, Weights,
};
use serde::Serialize;

/// A trace with its access graph (found once: every replay of the trace reads it).
pub struct Case<'a> {
    /// The trace, counted.
    pub trace: &'a Trace,
    /// Its access graph.
    pub graph: AccessGraph,
}

/// Each trace with its access graph.
pub fn cases(traces: &[Trace]) -> Vec<Case<'_>> {
    traces
        .iter()
        .map(|trace| Case {
            trace,
            graph: detect(trace),
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
            let sim = simulate_trace(case.trace, &case.graph, policy, budget, prices).map_err(
                |source| FitError::Policy {
                    policy: policy.name.clone(),
                    source,
                },
            )?;
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

/// The training samples of one trace: for every chunk in every call's input (system prompts
/// left out: they are always kept), its value factors as a live engine with `config` sees them
/// at that call (uses found so far, the newest user message as the task, times where the trace
/// has them), labelled important when that call's output or a later one used it, useless when
/// none did.
pub fn samples(case: &Case, config: &ValueConfig) -> Vec<(Factors, Label)> {
    let trace = case.trace;
    let mut engine = ValueEngine::new(config.clone());
    let mut uses = vec![0u32; trace.chunks.len()];
    let mut latest: Option<f64> = None;
    let mut out = Vec::new();
    for call in &trace.calls {
        let i = call.index;
        if i > 0 {
            for &used in case.graph.used_at(i - 1) {
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
        // The engine measures redundancy against chunks added before: add in id order.
        let mut new: Vec<ChunkId> = ids
            .iter()
            .copied()
            .filter(|&id| !engine.contains(id))
            .collect();
        new.sort_unstable();
        for id in new {
            let chunk = trace.chunk(id);
            let time = chunk.meta.timestamp.as_deref().and_then(timestamp_secs);
            if let Some(t) = time {
                latest = Some(latest.map_or(t, |l| l.max(t)));
            }
            engine.add(chunk, i, time);
            engine.set_uses(id, uses[id.index()]);
        }
        let query = ids
            .iter()
            .rev()
            .map(|&id| trace.chunk(id))
            .find(|c| c.category == Category::User)
            .map(|c| c.content.as_str());
        let factors = engine.factors(&ids, i, latest, query);
        for (&id, factors) in ids.iter().zip(factors) {
            let Some(factors) = factors else { continue };
            if trace.chunk(id).category == Category::System {
                continue;
            }
            let used_later = case.graph.uses_of(id).iter().any(|&u| u >= i);
            let label = if used_later {
                Label::Important
            } else {
                Label::Useless
            };
            out.push((factors, label));
        }
    }
    out
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

impl Candidate {
    /// Whether this candidate keeps echoed replies and has `other`'s settings but for the
    /// threshold.
    fn same_settings_as(&self, other: &Candidate) -> bool {
        self.weights == other.weights
            && self.size_exponent == other.size_exponent
            && self.cleanup == other.cleanup
            && JsonForm::of(self) == JsonForm::of(other)
            && !self.echoed_replies
    }
}

/// The fields the fit drops and how it chose them ([`FitOptions::field_drop_shares`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FieldDrops {
    /// The fields dropped, by tool (empty: none).
    pub chosen: DropRules,
    /// The base policy replayed with no field dropped and with each share's fields.
    pub trials: Vec<FieldTrial>,
    /// Every field of every tool's JSON results on its own: how often later calls used it and
    /// whether they could be seen to (why a field was kept).
    pub uses: Vec<FieldUse>,
}

/// The base policy (in the fit's most compact JSON form) replayed with one set of dropped
/// fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldTrial {
    /// The share the fields were chosen at (`None`: no field dropped).
    pub share: Option<f64>,
    /// Fields dropped, over all tools.
    pub fields: usize,
    /// Its replay of the training traces.
    pub outcome: Outcome,
    /// The fields dropped, by tool.
    pub rules: DropRules,
    /// The same share's fields chosen on all but one fold of the training traces, replayed on
    /// the fold left out, summed over folds (`None`: not checked, see
    /// [`FitOptions::field_drop_folds`]).
    pub held_out: Option<Outcome>,
}

/// Fits the base policy's value weights and value threshold on `cases`; see the crate docs.
pub fn fit(cases: &[&Case], options: &FitOptions, prices: &PriceTable) -> Result<Fitted, FitError> {
    let base = &options.base;
    let policy_error = |source| FitError::Policy {
        policy: base.name.clone(),
        source,
    };
    let base_config = base.value_config().map_err(policy_error)?;
    let mut all: Vec<(Factors, Label)> = cases
        .iter()
        .flat_map(|c| samples(c, &base_config))
        .collect();
    if all.is_empty() && cases.iter().all(|c| c.trace.calls.is_empty()) {
        return Err(FitError::NoCalls);
    }
    if all.len() > options.max_samples {
        let stride = all.len().div_ceil(options.max_samples);
        all = all.into_iter().step_by(stride).collect();
    }
    let regression = fit_weights(&all, &base_config);

    // A threshold learned on agent runs drops what a conversation still needs, and the other
    // way round: the fitted threshold acts in the kind of run it was mostly fitted on.
    let runs = run_kind(cases.iter().map(|c| c.trace));
    let base_train = evaluate(cases, base, options.budget, prices)?;
    let ceiling = if options.no_more_misses_than_base {
        options.max_miss_rate.min(base_train.miss_rate())
    } else {
        options.max_miss_rate
    };
    let json_forms = json_forms(base, options, cases);
    // Fields no later step reads are dropped first, for every candidate: they change what has
    // to be evicted, and so which threshold fits.
    let field_drops = choose_field_drops(cases, base, &json_forms, options, prices, ceiling)?;
    let dropped_base = with_field_drops(base, &field_drops.chosen);
    let base = &dropped_base;
    let candidate_policy = |weights: &Weights,
                            threshold: Option<f32>,
                            exponent: Option<f32>,
                            cleanup: Option<Cleanup>,
                            json: JsonForm,
                            echoed_replies: bool| {
        let mut p = base.clone();
        if echoed_replies {
            p.evict_echoed_replies = Some(runs);
        }
        p.compress.minify_json = json.minify;
        p.compress.toon_json = json.toon;
        p.name = format!("{}-fitted", base.name);
        p.value_preset = None;
        p.value = ValueConfig {
            weights: weights.clone(),
            ..base_config.clone()
        };
        p.value_threshold = threshold;
        if threshold.is_some() && base.value_threshold_runs == RunKind::Any {
            p.value_threshold_runs = runs;
        }
        // The size exponent and cleanup chosen here are for the same kind of run as the
        // threshold: on LoCoMo an exponent fitted on agent runs gives up a conversation's
        // longer turns (BENCHMARKS.md).
        if exponent.is_some() {
            p.size_exponent = exponent;
            if base.size_exponent_runs == RunKind::Any {
                p.size_exponent_runs = runs;
            }
        }
        if cleanup.is_some() {
            p.cleanup = cleanup;
            if base.cleanup_runs == RunKind::Any {
                p.cleanup_runs = runs;
            }
        }
        p
    };
    // The base evicts echoed replies in this kind of run already (the `value` preset, in agent
    // runs): every candidate does.
    let base_echoes = base
        .evict_echoed_replies
        .is_some_and(|r| r == runs || r.is_any());
    let replay = |from: WeightsFrom,
                  threshold: Option<f32>,
                  size_exponent: Option<f32>,
                  cleanup: Option<Cleanup>,
                  json: JsonForm,
                  echoed_replies: bool|
     -> Result<Candidate, FitError> {
        let weights = match from {
            WeightsFrom::Fitted => &regression.weights,
            WeightsFrom::Base => &base_config.weights,
        };
        let echoed_replies = echoed_replies || base_echoes;
        let policy = candidate_policy(
            weights,
            threshold,
            size_exponent,
            cleanup,
            json,
            echoed_replies,
        );
        let each = evaluate_each(cases, &policy, options.budget, prices)?;
        Ok(Candidate {
            weights: from,
            threshold,
            size_exponent,
            cleanup,
            minify_json: json.minify,
            toon_json: json.toon,
            echoed_replies,
            outcome: total(each.iter().copied()),
            per_trace: each
                .iter()
                .map(|o| (o.calls, o.calls_with_misses))
                .collect(),
        })
    };
    let mut candidates = Vec::new();
    let thresholds: Vec<Option<f32>> = std::iter::once(None)
        .chain(options.thresholds.iter().copied().map(Some))
        .collect();
    let exponents: Vec<Option<f32>> = std::iter::once(None)
        .chain(options.size_exponents.iter().copied().map(Some))
        .collect();
    let cleanups: Vec<Option<Cleanup>> = std::iter::once(None)
        .chain(options.cleanups.iter().copied().map(Some))
        .collect();
    for from in [WeightsFrom::Fitted, WeightsFrom::Base] {
        for &json in &json_forms {
            for &cleanup in &cleanups {
                for &size_exponent in &exponents {
                    for &threshold in &thresholds {
                        let c = replay(from, threshold, size_exponent, cleanup, json, false)?;
                        candidates.push(c);
                    }
                }
            }
        }
    }
    let within = |c: &Candidate| within_ceiling(&c.per_trace, ceiling, options.confidence);
    // Finer thresholds above the grid's best, with its other settings.
    let grid_best = choose(&candidates, within).cloned();
    if let Some((best, low)) = grid_best
        .filter(|b| within(b))
        .and_then(|b| b.threshold.map(|t| (b, t)))
    {
        let next = options
            .thresholds
            .iter()
            .copied()
            .filter(|&t| t > low)
            .min_by(f32::total_cmp);
        if let Some(high) = next {
            for k in 1..=options.threshold_steps {
                let t = low + (high - low) * k as f32 / (options.threshold_steps + 1) as f32;
                let t = (t * 1000.0).round() / 1000.0;
                candidates.push(replay(
                    best.weights,
                    Some(t),
                    best.size_exponent,
                    best.cleanup,
                    JsonForm::of(&best),
                    false,
                )?);
            }
        }
    }
    let mut best = choose(&candidates, within)
        .cloned()
        .ok_or(FitError::NoCalls)?;
    // At a zero ceiling the resamplings cannot show how near the edge a threshold is: keep it
    // below by k - 1 times as far as leaving one of k folds out moved the edge (`margin.rs`).
    let mut edge = None;
    if let Some(at) = best.threshold.filter(|_| ceiling <= 0.0 && within(&best)) {
        let runs: Vec<ThresholdRun> = candidates
            .iter()
            .filter(|c| c.same_settings_as(&best))
            .filter_map(|c| {
                c.threshold.map(|threshold| ThresholdRun {
                    threshold,
                    per_trace: &c.per_trace,
                })
            })
            .collect();
        let margin = edge_margin(&runs, at, options.edge_folds);
        if margin > 0.0 {
            let lowered = ((at - margin) * 1000.0).round() / 1000.0;
            let threshold = (lowered > 0.0).then_some(lowered);
            let c = replay(
                best.weights,
                threshold,
                best.size_exponent,
                best.cleanup,
                JsonForm::of(&best),
                false,
            )?;
            edge = Some(EdgeMargin {
                edge: at,
                margin,
                threshold,
            });
            candidates.push(c.clone());
            // A lower threshold that misses where the edge did not would be no safer.
            if within(&c) {
                best = c;
            }
        }
    }
    // Last, the best so far with the assistant's echoed replies evicted: one more replay, not a
    // grid dimension (which would double the fit's replays); none when the base evicts them.
    if options.try_echoed_replies && !base_echoes {
        let echoed = replay(
            best.weights,
            best.threshold,
            best.size_exponent,
            best.cleanup,
            JsonForm::of(&best),
            true,
        )?;
        candidates.push(echoed.clone());
        let pair = [best, echoed];
        best = choose(&pair, within).unwrap_or(&pair[0]).clone();
    }
    let weights = match best.weights {
        WeightsFrom::Fitted => &regression.weights,
        WeightsFrom::Base => &base_config.weights,
    };
    Ok(Fitted {
        policy: candidate_policy(
            weights,
            best.threshold,
            best.size_exponent,
            best.cleanup,
            JsonForm::of(&best),
            best.echoed_replies,
        ),
        weights_from: best.weights,
        base_weights: base_config.weights.clone(),
        regression,
        samples: all.len(),
        train: best.outcome,
        base_train,
        ceiling,
        within_ceiling: within(&best),
        candidates,
        field_drops,
        edge,
    })
}

/// The base policy with `drops` added to its tool rules (not to a tool whose rule says
/// `compress = false`).
fn with_field_drops(base: &PolicyConfig, drops: &DropRules) -> PolicyConfig {
    let mut p = base.clone();
    for (tool, fields) in drops {
        let rule = p.tools.entry(tool.clone()).or_default();
        if rule.compress {
            for f in fields {
                if !rule.drop_fields.contains(f) {
                    rule.drop_fields.push(f.clone());
                }
            }
        }
    }
    p
}

/// Replays the base (in the most compact of the fit's JSON forms) with no field dropped and
/// with each share's fields; keeps the set that saves the most without more calls with a miss
/// than none, or within the ceiling, both on the training traces and where each fold of them
/// was left out of the choice ([`FitOptions::field_drop_folds`]).
fn choose_field_drops(
    cases: &[&Case],
    base: &PolicyConfig,
    json_forms: &[JsonForm],
    options: &FitOptions,
    prices: &PriceTable,
    ceiling: f64,
) -> Result<FieldDrops, FitError> {
    if options.field_drop_shares.is_empty() {
        return Ok(FieldDrops::default());
    }
    let mut sets: Vec<(Option<f64>, DropRules)> = vec![(None, DropRules::new())];
    for &share in &options.field_drop_shares {
        let rules = drop_rules(cases, share, options.min_field_results);
        if !sets.iter().any(|(_, r)| *r == rules) {
            sets.push((Some(share), rules));
        }
    }
    if sets.len() == 1 {
        return Ok(FieldDrops::default());
    }
    let form = json_forms.last().copied();
    let policy_with = |rules: &DropRules| {
        let mut p = with_field_drops(base, rules);
        if let Some(form) = form {
            p.compress.minify_json = form.minify;
            p.compress.toon_json = form.toon;
        }
        p
    };
    let per_trace_of = |each: &[Outcome]| -> Vec<(u64, u64)> {
        each.iter()
            .map(|o| (o.calls, o.calls_with_misses))
            .collect()
    };
    let folds = options.field_drop_folds.min(cases.len());
    let mut trials = Vec::new();
    let mut per_trace = Vec::new();
    let mut held_outs = Vec::new();
    for (share, rules) in sets {
        let each = evaluate_each(cases, &policy_with(&rules), options.budget, prices)?;
        per_trace.push(per_trace_of(&each));
        // Held out within the training traces: trace `i` is in fold `i % folds`.
        let held_out = match share {
            Some(share) if folds >= 2 => {
                let mut outcomes = Vec::new();
                for k in 0..folds {
                    let in_fold = |i: &usize| i % folds == k;
                    let pick = |held: bool| -> Vec<&Case> {
                        (cases.iter().enumerate())
                            .filter(|(i, _)| in_fold(i) == held)
                            .map(|(_, c)| *c)
                            .collect()
                    };
                    let (held, train) = (pick(true), pick(false));
                    let fold_rules = drop_rules(&train, share, options.min_field_results);
                    let p = policy_with(&fold_rules);
                    outcomes.extend(evaluate_each(&held, &p, options.budget, prices)?);
                }
                Some(outcomes)
            }
            _ => None,
        };
        trials.push(FieldTrial {
            share,
            fields: rules.values().map(Vec::len).sum(),
            outcome: total(each),
            rules,
            held_out: held_out.as_ref().map(|o| total(o.iter().copied())),
        });
        held_outs.push(held_out);
    }
    let none = trials[0].outcome.calls_with_misses;
    let holds = |each: &[(u64, u64)], misses: u64| {
        misses <= none || within_ceiling(each, ceiling, options.confidence)
    };
    let best = trials
        .iter()
        .zip(&per_trace)
        .zip(&held_outs)
        .filter(|((t, each), held)| {
            holds(each, t.outcome.calls_with_misses)
                && held.as_ref().is_none_or(|h| {
                    let misses = h.iter().map(|o| o.calls_with_misses).sum();
                    holds(&per_trace_of(h), misses)
                })
        })
        .map(|((t, _), _)| t)
        .max_by(|a, b| a.outcome.saved().total_cmp(&b.outcome.saved()));
    Ok(FieldDrops {
        chosen: best.map(|t| t.rules.clone()).unwrap_or_default(),
        trials,
        uses: field_uses(cases),
    })
}

/// The candidate that saves the most among those `within` the ceiling (fewer misses on a tie),
/// else the one with the fewest calls with a miss (more saved on a tie).
fn choose(candidates: &[Candidate], within: impl Fn(&Candidate) -> bool) -> Option<&Candidate> {
    candidates
        .iter()
        .filter(|c| within(c))
        .max_by(|a, b| {
            a.outcome
                .saved()
                .total_cmp(&b.outcome.saved())
                .then(b.outcome.miss_rate().total_cmp(&a.outcome.miss_rate()))
        })
        .or_else(|| {
            candidates.iter().min_by(|a, b| {
                a.outcome
                    .miss_rate()
                    .total_cmp(&b.outcome.miss_rate())
                    .then(b.outcome.saved().total_cmp(&a.outcome.saved()))
            })
        })
}

/// Resamplings of the training traces [`FitOptions::confidence`] counts.
pub const RESAMPLES: usize = 400;

/// Whether the share of calls with a miss is within `ceiling` over all traces (`per_trace`:
/// calls and calls with a miss of each) and in at least `confidence` of [`RESAMPLES`]
/// resamplings of the traces with replacement. Traces, not calls, are drawn: a trace's misses
/// come in runs (one id given up is missed at every later call that quotes it). The draws are a
/// fixed splitmix64 sequence, so a fit is reproducible.
pub fn within_ceiling(per_trace: &[(u64, u64)], ceiling: f64, confidence: f64) -> bool {
    let fits = |calls: u64, missed: u64| missed as f64 <= ceiling * calls as f64;
    let (calls, missed) = per_trace
        .iter()
        .fold((0, 0), |(c, m), &(tc, tm)| (c + tc, m + tm));
    if !fits(calls, missed) {
        return false;
    }
    if confidence <= 0.0 || per_trace.is_empty() {
        return true;
    }
    let n = per_trace.len() as u64;
    let mut state: u64 = 0x5EED_F17E;
    let mut held = 0usize;
    for _ in 0..RESAMPLES {
        let (mut c, mut m) = (0, 0);
        for _ in 0..n {
            let z = splitmix64(state);
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            // Multiply-shift onto 0..n: no modulo bias worth the name at these sizes.
            let i = ((z >> 32) * n) >> 32;
            let (tc, tm) = per_trace[i as usize];
            c += tc;
            m += tm;
        }
        held += usize::from(fits(c, m));
    }
    held as f64 >= confidence * RESAMPLES as f64
}

/// The kind of run most of the traces are: agent runs (a tool call or result) or conversations;
/// any on a tie. Agent benchmarks have a few runs that never needed a tool (18 of tau-bench's
/// 200): they do not make the set conversations.
pub fn run_kind<'a>(traces: impl IntoIterator<Item = &'a Trace>) -> RunKind {
    let (mut agents, mut conversations) = (0usize, 0usize);
    for t in traces {
        let tools = t
            .chunks
            .iter()
            .any(|c| matches!(c.category, Category::ToolCall | Category::ToolResult));
        if tools {
            agents += 1;
        } else {
            conversations += 1;
        }
    }
    match agents.cmp(&conversations) {
        std::cmp::Ordering::Greater => RunKind::Agent,
        std::cmp::Ordering::Less => RunKind::Conversation,
        std::cmp::Ordering::Equal => RunKind::Any,
    }
}

/// How a candidate sends JSON tool results: `compress.minify_json` and `compress.toon_json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct JsonForm {
    minify: bool,
    toon: bool,
}

impl JsonForm {
    fn of(c: &Candidate) -> JsonForm {
        JsonForm {
            minify: c.minify_json,
            toon: c.toon_json,
        }
    }
}

/// The JSON forms the fit tries: the base's own when it sends JSON results in another form;
/// else as they are, minified (when some result has whitespace to lose) and the fewer of
/// minified and TOON (when some result is JSON).
fn json_forms(base: &PolicyConfig, options: &FitOptions, cases: &[&Case<'_>]) -> Vec<JsonForm> {
    let own = JsonForm {
        minify: base.compress.minify_json,
        toon: base.compress.toon_json,
    };
    if own.minify || own.toon || !options.try_lossless_json {
        return vec![own];
    }
    let results = || {
        cases.iter().flat_map(|c| {
            c.trace
                .chunks
                .iter()
                .filter(|c| c.category == Category::ToolResult)
        })
    };
    let mut forms = vec![own];
    if results().any(|c| minify_json(&c.content).is_some()) {
        forms.push(JsonForm {
            minify: true,
            toon: false,
        });
    }
    if results().any(|c| toon_json(&c.content).is_some()) {
        forms.push(JsonForm {
            minify: true,
            toon: true,
        });
    }
    forms
}

/// One fold of [`cross_validate`]: fitted on the other folds, measured on this one.
#[derive(Debug, Clone)]
pub struct Fold {
    /// The fold's number (0-based): traces `i` with `i % folds == index` are held out.
    pub index: usize,
    /// The fit on the other folds.
    pub fitted: Fitted,
    /// The fitted policy on the held-out traces.
    pub validation: Outcome,
    /// The base policy on the held-out traces.
    pub base_validation: Outcome,
}

/// k-fold cross-validation by trace: trace `i` (in the order given) is in fold `i % folds`.
pub fn cross_validate(
    cases: &[Case],
    folds: usize,
    options: &FitOptions,
    prices: &PriceTable,
) -> Result<Vec<Fold>, FitError> {
    if folds < 2 || cases.len() < folds {
        return Err(FitError::TooFewTraces {
            folds,
            traces: cases.len(),
        });
    }
    let mut out = Vec::with_capacity(folds);
    for index in 0..folds {
        // Trace i is held out in fold i % folds.
        let (mut train, mut validation) = (Vec::new(), Vec::new());
        for (i, case) in cases.iter().enumerate() {
            if i % folds == index {
                validation.push(case);
            } else {
                train.push(case);
            }
        }
        let fitted = fit(&train, options, prices)?;
        out.push(Fold {
            index,
            validation: evaluate(&validation, &fitted.policy, options.budget, prices)?,
            base_validation: evaluate(&validation, &options.base, options.budget, prices)?,
            fitted,
        });
    }
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;
    use memlens_core::builder::{Message, TraceBuilder};
    use memlens_core::tokens::{count_trace, TokenCounter};

    /// A support chat: each user turn gives a code that the next reply quotes; chatter between.
    fn trace(seed: u32) -> Trace {
        let mut b = TraceBuilder::new(format!("t{seed}"), "test");
        b.push_message(Message::text("system", "You are a support agent."), None);
        for i in 0..12 {
            let code = format!("ZK{}{:03}", seed, i * 7 + 11);
            b.push_message(
                Message::text(
                    "user",
                    format!("Ticket {code}: my router drops the line at night."),
                ),
                None,
            );
            b.push_message(
                Message::text("assistant", format!("Checking ticket {code}.")),
                None,
            );
            b.push_message(
                Message::text(
                    "user",
                    "Thanks, and the weather here is lovely today by the way.",
                ),
                None,
            );
            b.push_message(Message::text("assistant", "Glad to hear it!"), None);
        }
        b.reconstruct_calls();
        let (mut trace, _) = b.finish();
        count_trace(&mut trace, &TokenCounter::for_model(None));
        trace
    }

    #[test]
    fn samples_are_labelled_by_later_use() {
        let t = trace(1);
        let cases = cases(std::slice::from_ref(&t));
        let samples = samples(&cases[0], &ValueConfig::default());
        let pairs: usize = t
            .calls
            .iter()
            .map(|c| {
                c.input
                    .iter()
                    .filter(|&&id| t.chunk(id).category != Category::System)
                    .count()
            })
            .sum();
        assert_eq!(samples.len(), pairs);
        let important = samples
            .iter()
            .filter(|(_, l)| *l == Label::Important)
            .count();
        assert!(important > 0 && important < samples.len(), "{important}");
    }

    #[test]
    fn the_fit_is_never_worse_than_the_base_on_its_training_traces() {
        let traces: Vec<Trace> = (0..4).map(trace).collect();
        let cases = cases(&traces);
        let refs: Vec<&Case> = cases.iter().collect();
        let options = FitOptions {
            budget: 300,
            max_miss_rate: 0.5,
            ..FitOptions::default()
        };
        let fitted = fit(&refs, &options, &PriceTable::builtin()).expect("fits");
        // The base's weights without a threshold are among the candidates, and the base is within
        // this ceiling: the chosen one is within it too and saves at least as much.
        assert!(
            fitted.base_train.miss_rate() <= options.max_miss_rate,
            "{:?}",
            fitted.base_train
        );
        assert!(fitted.within_ceiling);
        assert!(fitted.train.saved() >= fitted.base_train.saved());
        assert!(fitted.train.miss_rate() <= fitted.ceiling);
        let grid = 2
            * (1 + options.size_exponents.len())
            * (1 + options.thresholds.len())
            * (1 + options.cleanups.len());
        // The grid, then finer thresholds above its best where it had one within the ceiling,
        // then the best of those with the echoed replies evicted (the only such candidate).
        let (echoed, rest) = fitted.candidates.split_last().expect("candidates");
        assert!(echoed.echoed_replies);
        assert!(rest.iter().all(|c| !c.echoed_replies));
        let best = choose(rest, |c| within_ceiling(&c.per_trace, fitted.ceiling, 0.9));
        let best = best.expect("a best candidate");
        assert_eq!(
            (echoed.weights, echoed.threshold, echoed.size_exponent),
            (best.weights, best.threshold, best.size_exponent)
        );
        let finer = &rest[grid..];
        assert!(finer.is_empty() || finer.len() == options.threshold_steps);
        for c in finer {
            let t = c.threshold.expect("a finer threshold");
            assert!(!options.thresholds.contains(&t), "{t} is on the grid");
        }
        // The chosen policy replays to the figures the fit reported.
        let again = evaluate(
            &refs,
            &fitted.policy,
            options.budget,
            &PriceTable::builtin(),
        )
        .expect("replays");
        assert_eq!(again, fitted.train);
        // Its value settings are the policy's own now (no preset), the weights the chosen ones.
        assert_eq!(fitted.policy.value_preset, None);
        let chosen = match fitted.weights_from {
            WeightsFrom::Fitted => &fitted.regression.weights,
            WeightsFrom::Base => &fitted.base_weights,
        };
        assert_eq!(&fitted.policy.value.weights, chosen);
        // Support chats: a threshold, where one was chosen, acts in conversations only.
        assert_eq!(run_kind(&traces), RunKind::Conversation);
        assert_eq!(
            fitted.policy.value_threshold.is_some(),
            fitted.policy.value_threshold_runs == RunKind::Conversation,
            "{:?}",
            fitted.policy
        );
    }

    #[test]
    fn lossless_json_forms_are_candidates_where_the_tool_results_are_json() {
        let mut b = TraceBuilder::new("json", "test");
        b.push_message(Message::text("system", "You are a travel agent."), None);
        for i in 0..4 {
            b.push_message(Message::text("user", format!("Flights for day {i}?")), None);
            let flights = r#"[{"flight_number": "HAT069", "origin": "JFK", "price": 121}, {"flight_number": "HAT083", "origin": "JFK", "price": 100}]"#;
            b.push_message(Message::text("tool", flights), None);
            b.push_message(Message::text("assistant", "HAT083 costs 100."), None);
        }
        b.reconstruct_calls();
        let (mut trace, _) = b.finish();
        count_trace(&mut trace, &TokenCounter::for_model(None));
        let traces = [trace, self::trace(1)];
        assert_eq!(run_kind(&traces[..1]), RunKind::Agent);
        assert_eq!(run_kind(&traces), RunKind::Any);
        assert_eq!(run_kind(&[]), RunKind::Any);
        let mostly = [traces[0].clone(), traces[0].clone(), traces[1].clone()];
        assert_eq!(run_kind(&mostly), RunKind::Agent);
        let cases = cases(&traces);
        let refs: Vec<&Case> = cases.iter().collect();
        let options = FitOptions {
            budget: 100_000,
            thresholds: vec![],
            size_exponents: vec![],
            cleanups: vec![],
            // The JSON forms alone are counted here.
            try_echoed_replies: false,
            ..FitOptions::default()
        };
        let fitted = fit(&refs, &options, &PriceTable::builtin()).expect("fits");
        // Two weights x as sent, minified, and the fewer of minified and TOON: nothing is
        // evicted under this budget, so the lossless forms save tokens with no miss, and TOON's
        // table (the keys written once) saves the most.
        assert_eq!(fitted.candidates.len(), 6);
        let saved = |minify: bool, toon: bool| {
            let c = fitted
                .candidates
                .iter()
                .find(|c| (c.minify_json, c.toon_json) == (minify, toon))
                .expect("the form was tried");
            c.outcome.saved()
        };
        assert!(saved(false, false) == 0.0 && 0.0 < saved(true, false));
        assert!(saved(true, false) < saved(true, true));
        assert!(fitted.policy.compress.minify_json && fitted.policy.compress.toon_json);
        assert!(fitted.train.saved() > 0.0 && fitted.base_train.saved() == 0.0);
        assert_eq!(fitted.train.miss_rate(), 0.0);
        // Not offered when the base minifies already, or when no result is JSON.
        let mut base = options.base.clone();
        base.compress.minify_json = true;
        let with = FitOptions {
            base,
            ..options.clone()
        };
        assert_eq!(
            fit(&refs, &with, &PriceTable::builtin())
                .expect("fits")
                .candidates
                .len(),
            2
        );
        let plain = [self::trace(2)];
        let plain = super::cases(&plain);
        let plain: Vec<&Case> = plain.iter().collect();
        assert_eq!(
            fit(&plain, &options, &PriceTable::builtin())
                .expect("fits")
                .candidates
                .len(),
            2
        );
    }

    #[test]
    fn the_ceiling_holds_in_resamplings_of_the_traces() {
        // 20 traces of 10 calls, misses in 2 calls of one trace: 1% of the calls, within a 1%
        // ceiling on these traces, but over it whenever a resampling draws that trace twice
        // (about a quarter of them).
        let mut runs = vec![(10, 0); 20];
        runs[7] = (10, 2);
        assert!(within_ceiling(&runs, 0.01, 0.0));
        assert!(!within_ceiling(&runs, 0.01, 0.9));
        assert!(within_ceiling(&runs, 0.01, 0.6));
        assert!(!within_ceiling(&runs, 0.005, 0.0));
        // No miss at all holds at a zero ceiling, in every resampling.
        assert!(within_ceiling(&[(10, 0); 5], 0.0, 1.0));
        assert!(!within_ceiling(&[(10, 0), (10, 1)], 0.0, 0.0));
        // Misses spread over every trace hold in every resampling.
        assert!(within_ceiling(&[(100, 1); 30], 0.01, 1.0));
        assert!(within_ceiling(&[], 0.01, 0.9));
    }

    #[test]
    fn the_ceiling_is_lowered_to_the_base_policys_own_misses() {
        // Each reply quotes the ticket given two user turns before: a budget that keeps only
        // the latest turns misses it.
        let late = |seed: u32| {
            let mut b = TraceBuilder::new(format!("late{seed}"), "test");
            b.push_message(Message::text("system", "You are a support agent."), None);
            let code = |i: u32| format!("ZK{seed}{:03}", i * 7 + 11);
            for i in 0..12 {
                let text = format!("Ticket {}: my router drops the line at night.", code(i));
                b.push_message(Message::text("user", text), None);
                let quoted = code(i.saturating_sub(2));
                let reply = format!("Ticket {quoted} is fixed; the weather is lovely today.");
                b.push_message(Message::text("assistant", reply), None);
            }
            b.reconstruct_calls();
            let (mut trace, _) = b.finish();
            count_trace(&mut trace, &TokenCounter::for_model(None));
            trace
        };
        let traces: Vec<Trace> = (0..4).map(late).collect();
        let cases = cases(&traces);
        let refs: Vec<&Case> = cases.iter().collect();
        let options = FitOptions {
            budget: 120,
            max_miss_rate: 0.9,
            thresholds: vec![0.3, 0.5],
            size_exponents: vec![],
            cleanups: vec![],
            ..FitOptions::default()
        };
        let lowered = fit(&refs, &options, &PriceTable::builtin()).expect("fits");
        let base = lowered.base_train.miss_rate();
        assert!(
            base > 0.0 && base < 0.9,
            "{base}: the test needs some misses"
        );
        assert_eq!(lowered.ceiling, base);
        assert!(lowered.within_ceiling && lowered.train.miss_rate() <= base);
        // A candidate with more misses than the base saves more, and is taken when allowed.
        let user = fit(
            &refs,
            &FitOptions {
                no_more_misses_than_base: false,
                ..options.clone()
            },
            &PriceTable::builtin(),
        )
        .expect("fits");
        assert_eq!(user.ceiling, 0.9);
        assert!(user.train.miss_rate() > base, "{:?}", user.train);
        assert!(user.train.saved() > lowered.train.saved());
    }

    #[test]
    fn at_a_zero_ceiling_a_threshold_one_trace_binds_is_kept_below_its_edge() {
        // Nine chats whose turns nothing later quotes, and one whose last reply quotes the code
        // its first user turn gave: only that trace misses, and only at thresholds above the
        // code's value. It binds the edge alone: without its fold, every threshold tried is
        // clean.
        let chat = |seed: u32, quoted: bool| {
            let mut b = TraceBuilder::new(format!("chat{seed}"), "test");
            b.push_message(Message::text("system", "You are a support agent."), None);
            let first = if quoted {
                "My booking code is QX7731, for the record."
            } else {
                "Hello there, I just wanted to chat a little."
            };
            b.push_message(Message::text("user", first), None);
            b.push_message(Message::text("assistant", "Noted."), None);
            for i in 0..10 {
                let text = format!("Thanks, the weather is lovely today, day {seed} {i}.");
                b.push_message(Message::text("user", text), None);
                b.push_message(Message::text("assistant", "Glad to hear it!"), None);
            }
            b.push_message(Message::text("user", "What was it again?"), None);
            let last = if quoted {
                "It is QX7731."
            } else {
                "Nothing much."
            };
            b.push_message(Message::text("assistant", last), None);
            b.reconstruct_calls();
            let (mut trace, _) = b.finish();
            count_trace(&mut trace, &TokenCounter::for_model(None));
            trace
        };
        let traces: Vec<Trace> = (0..10).map(|i| chat(i, i == 9)).collect();
        let cases = cases(&traces);
        let refs: Vec<&Case> = cases.iter().collect();
        let options = FitOptions {
            budget: 100_000,
            // The threshold acts from the first call, under this budget the only rule that does.
            base: PolicyConfig {
                act_from: None,
                ..PolicyConfig::builtin("value").expect("built in")
            },
            // The quoted code is worth more than the default grid's top (0.6) here.
            thresholds: (1..=19).map(|i| i as f32 * 0.05).collect(),
            size_exponents: vec![],
            cleanups: vec![],
            field_drop_shares: vec![],
            try_echoed_replies: false,
            ..FitOptions::default()
        };
        let prices = PriceTable::builtin();
        let at_edge = fit(
            &refs,
            &FitOptions {
                edge_folds: 0,
                ..options.clone()
            },
            &prices,
        )
        .expect("fits");
        // Nothing is evicted under this budget but by a threshold: the base misses nothing.
        assert_eq!(at_edge.ceiling, 0.0);
        assert!(at_edge.within_ceiling && at_edge.edge.is_none());
        let edge = at_edge
            .policy
            .value_threshold
            .expect("some threshold is clean on every trace");
        let above = at_edge
            .candidates
            .iter()
            .filter(|c| c.threshold.is_some_and(|t| t > edge))
            .filter(|c| c.per_trace[9].1 > 0);
        assert!(above.count() > 0, "the quoting trace misses above {edge}");

        let kept_below = fit(&refs, &options, &prices).expect("fits");
        let margin = kept_below.edge.expect("a margin");
        assert_eq!(margin.edge, edge);
        // Without fold 4 (traces 4 and 9) the highest threshold tried is clean: the margin is
        // four times that move.
        let highest = (kept_below.candidates.iter())
            .filter_map(|c| c.threshold)
            .fold(0.0f32, f32::max);
        assert!(
            (margin.margin - 4.0 * (highest - edge)).abs() < 1e-5,
            "{margin:?}"
        );
        assert_eq!(kept_below.policy.value_threshold, margin.threshold);
        assert!(margin.threshold.is_none_or(|t| t < edge));
        assert_eq!(kept_below.train.calls_with_misses, 0);
        assert!(kept_below.train.saved() <= at_edge.train.saved());
    }

    #[test]
    fn cross_validation_holds_out_every_trace_once() {
        let traces: Vec<Trace> = (0..6).map(trace).collect();
        let cases = cases(&traces);
        let options = FitOptions {
            budget: 300,
            thresholds: vec![0.2, 0.4],
            size_exponents: vec![0.0],
            ..FitOptions::default()
        };
        let folds = cross_validate(&cases, 3, &options, &PriceTable::builtin()).expect("folds");
        assert_eq!(folds.len(), 3);
        let held = total(folds.iter().map(|f| f.validation));
        assert_eq!(held.traces, traces.len());
        let all: Vec<&Case> = cases.iter().collect();
        let everything =
            evaluate(&all, &options.base, options.budget, &PriceTable::builtin()).expect("replays");
        let base_held = total(folds.iter().map(|f| f.base_validation));
        assert_eq!(
            base_held, everything,
            "the base's folds add up to the whole"
        );
        assert!(matches!(
            cross_validate(&cases[..2], 3, &options, &PriceTable::builtin()),
            Err(FitError::TooFewTraces {
                folds: 3,
                traces: 2
            })
        ));
    }
}
