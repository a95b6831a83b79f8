//! The candidate policies the fit replays: their settings, the policy each makes from the base,
//! and the stages that try them (the grid, finer thresholds, echoed replies evicted).

use memlens_core::cost::PriceTable;
use memlens_core::model::{Category, Trace};
use memlens_core::policy::compress::{minify_json, toon_json};
use memlens_core::policy::{Cleanup, PolicyConfig, RunKind};
use memlens_core::value::{ValueConfig, Weights};

use crate::ceiling::{choose, Ceiling};
use crate::{
    edge_margin, evaluate_each, total, Candidate, Case, EdgeMargin, FitError, FitOptions,
    ThresholdRun, WeightsFrom,
};

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
pub(crate) struct JsonForm {
    /// `compress.minify_json`.
    pub minify: bool,
    /// `compress.toon_json`.
    pub toon: bool,
}

impl JsonForm {
    /// How `c` sends them.
    pub fn of(c: &Candidate) -> JsonForm {
        JsonForm {
            minify: c.minify_json,
            toon: c.toon_json,
        }
    }
}

/// The JSON forms the fit tries: the base's own when it sends JSON results in another form;
/// else as they are, minified (when some result has whitespace to lose) and the fewer of
/// minified and TOON (when some result is JSON).
pub(crate) fn json_forms(
    base: &PolicyConfig,
    options: &FitOptions,
    cases: &[&Case<'_>],
) -> Vec<JsonForm> {
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

impl Candidate {
    /// Whether this candidate keeps echoed replies and has `other`'s settings but for the
    /// threshold.
    pub(crate) fn same_settings_as(&self, other: &Candidate) -> bool {
        self.weights == other.weights
            && self.size_exponent == other.size_exponent
            && self.cleanup == other.cleanup
            && JsonForm::of(self) == JsonForm::of(other)
            && !self.echoed_replies
    }
}

/// What sets one candidate apart from another: what [`Replayer::replay`] replays.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// Where its weights come from.
    pub weights: WeightsFrom,
    /// Its value threshold.
    pub threshold: Option<f32>,
    /// Its size exponent (`None`: the base's own).
    pub size_exponent: Option<f32>,
    /// Its cleanup rule (`None`: the base's own).
    pub cleanup: Option<Cleanup>,
    /// How it sends JSON tool results.
    pub json: JsonForm,
    /// Whether it evicts the assistant's echoed replies.
    pub echoed_replies: bool,
}

impl Settings {
    /// `c`'s settings.
    pub fn of(c: &Candidate) -> Settings {
        Settings {
            weights: c.weights,
            threshold: c.threshold,
            size_exponent: c.size_exponent,
            cleanup: c.cleanup,
            json: JsonForm::of(c),
            echoed_replies: c.echoed_replies,
        }
    }
}

/// What every candidate shares: the training traces, the base policy (with the chosen fields
/// dropped), both sets of weights and the kind of run the fit is for.
pub(crate) struct Replayer<'r> {
    cases: &'r [&'r Case<'r>],
    base: PolicyConfig,
    base_config: &'r ValueConfig,
    fitted: &'r Weights,
    runs: RunKind,
    /// The base evicts echoed replies in this kind of run already (the `value` preset, in agent
    /// runs): every candidate does.
    base_echoes: bool,
    budget: u32,
    prices: &'r PriceTable,
}

impl<'r> Replayer<'r> {
    /// Candidates of `base` (its value settings `base_config`) with the `fitted` weights or the
    /// base's, in runs of kind `runs`, replayed on `cases` at `budget`.
    pub fn new(
        cases: &'r [&'r Case<'r>],
        base: PolicyConfig,
        base_config: &'r ValueConfig,
        fitted: &'r Weights,
        runs: RunKind,
        budget: u32,
        prices: &'r PriceTable,
    ) -> Self {
        let base_echoes = base
            .evict_echoed_replies
            .is_some_and(|r| r == runs || r.is_any());
        Replayer {
            cases,
            base,
            base_config,
            fitted,
            runs,
            base_echoes,
            budget,
            prices,
        }
    }

    /// The policy with `s`'s settings: the base's strategy, protection and compression, named
    /// `<base>-fitted`.
    pub fn policy(&self, s: &Settings) -> PolicyConfig {
        let (base, runs) = (&self.base, self.runs);
        let weights = match s.weights {
            WeightsFrom::Fitted => self.fitted,
            WeightsFrom::Base => &self.base_config.weights,
        };
        let mut p = base.clone();
        if s.echoed_replies {
            p.evict_echoed_replies = Some(runs);
        }
        p.compress.minify_json = s.json.minify;
        p.compress.toon_json = s.json.toon;
        p.name = format!("{}-fitted", base.name);
        p.value_preset = None;
        p.value = ValueConfig {
            weights: weights.clone(),
            ..self.base_config.clone()
        };
        p.value_threshold = s.threshold;
        if s.threshold.is_some() && base.value_threshold_runs == RunKind::Any {
            p.value_threshold_runs = runs;
        }
        // The size exponent and cleanup chosen here are for the same kind of run as the
        // threshold: on LoCoMo an exponent fitted on agent runs gives up a conversation's
        // longer turns (BENCHMARKS.md, "Fit").
        if s.size_exponent.is_some() {
            p.size_exponent = s.size_exponent;
            if base.size_exponent_runs == RunKind::Any {
                p.size_exponent_runs = runs;
            }
        }
        if s.cleanup.is_some() {
            p.cleanup = s.cleanup;
            if base.cleanup_runs == RunKind::Any {
                p.cleanup_runs = runs;
            }
        }
        p
    }

    /// The candidate with settings `s` (echoed replies evicted where the base evicts them),
    /// replayed on the training traces.
    pub fn replay(&self, s: Settings) -> Result<Candidate, FitError> {
        let s = Settings {
            echoed_replies: s.echoed_replies || self.base_echoes,
            ..s
        };
        let policy = self.policy(&s);
        let each = evaluate_each(self.cases, &policy, self.budget, self.prices)?;
        Ok(Candidate {
            weights: s.weights,
            threshold: s.threshold,
            size_exponent: s.size_exponent,
            cleanup: s.cleanup,
            minify_json: s.json.minify,
            toon_json: s.json.toon,
            echoed_replies: s.echoed_replies,
            outcome: total(each.iter().copied()),
            per_trace: each
                .iter()
                .map(|o| (o.calls, o.calls_with_misses))
                .collect(),
        })
    }

    /// Every combination of weights, JSON form, cleanup rule, size exponent and threshold
    /// (`None` of the last three: the base's own, or no threshold), in that nesting.
    pub fn grid(
        &self,
        options: &FitOptions,
        json_forms: &[JsonForm],
    ) -> Result<Vec<Candidate>, FitError> {
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
        for weights in [WeightsFrom::Fitted, WeightsFrom::Base] {
            for &json in json_forms {
                for &cleanup in &cleanups {
                    for &size_exponent in &exponents {
                        for &threshold in &thresholds {
                            candidates.push(self.replay(Settings {
                                weights,
                                threshold,
                                size_exponent,
                                cleanup,
                                json,
                                echoed_replies: false,
                            })?);
                        }
                    }
                }
            }
        }
        Ok(candidates)
    }

    /// Finer thresholds above the grid's best, with its other settings: where that best is
    /// within the ceiling and has a threshold, [`FitOptions::threshold_steps`] of them evenly
    /// between it and the next grid threshold above.
    pub fn finer_thresholds(
        &self,
        grid: &[Candidate],
        options: &FitOptions,
        ceiling: Ceiling,
    ) -> Result<Vec<Candidate>, FitError> {
        let mut finer = Vec::new();
        let grid_best = choose(grid, |c| ceiling.holds(c));
        let Some((best, low)) = grid_best
            .filter(|b| ceiling.holds(b))
            .and_then(|b| b.threshold.map(|t| (b, t)))
        else {
            return Ok(finer);
        };
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
                finer.push(self.replay(Settings {
                    threshold: Some(t),
                    echoed_replies: false,
                    ..Settings::of(best)
                })?);
            }
        }
        Ok(finer)
    }

    /// `best` with the assistant's echoed replies evicted: one more replay, not a grid
    /// dimension (which would double the fit's replays), added to `candidates`; the better of
    /// the two within the ceiling is returned. None is tried when the base evicts them.
    pub fn try_echoed_replies(
        &self,
        best: Candidate,
        candidates: &mut Vec<Candidate>,
        ceiling: Ceiling,
    ) -> Result<Candidate, FitError> {
        if self.base_echoes {
            return Ok(best);
        }
        let echoed = self.replay(Settings {
            echoed_replies: true,
            ..Settings::of(&best)
        })?;
        candidates.push(echoed.clone());
        let pair = [best, echoed];
        Ok(choose(&pair, |c| ceiling.holds(c))
            .unwrap_or(&pair[0])
            .clone())
    }
}

/// At a zero ceiling the resamplings cannot show how near the edge a threshold is: keeps
/// `best`'s threshold below it by k - 1 times as far as leaving one of k (`folds`) folds out
/// moved the edge (`margin.rs`). The lowered threshold is replayed and added to `candidates`,
/// and replaces `best` where it is within the ceiling too (a lower threshold that misses where
/// the edge did not would be no safer). `None` where no margin was needed.
pub(crate) fn keep_below_edge(
    replayer: &Replayer,
    candidates: &mut Vec<Candidate>,
    best: &mut Candidate,
    ceiling: Ceiling,
    folds: usize,
) -> Result<Option<EdgeMargin>, FitError> {
    let Some(at) = best
        .threshold
        .filter(|_| ceiling.share <= 0.0 && ceiling.holds(best))
    else {
        return Ok(None);
    };
    let runs: Vec<ThresholdRun> = candidates
        .iter()
        .filter(|c| c.same_settings_as(best))
        .filter_map(|c| {
            c.threshold.map(|threshold| ThresholdRun {
                threshold,
                per_trace: &c.per_trace,
            })
        })
        .collect();
    let margin = edge_margin(&runs, at, folds);
    if margin > 0.0 {
        let lowered = ((at - margin) * 1000.0).round() / 1000.0;
        let threshold = (lowered > 0.0).then_some(lowered);
        let c = replayer.replay(Settings {
            threshold,
            echoed_replies: false,
            ..Settings::of(best)
        })?;
        candidates.push(c.clone());
        if ceiling.holds(&c) {
            *best = c;
        }
        return Ok(Some(EdgeMargin {
            edge: at,
            margin,
            threshold,
        }));
    }
    Ok(None)
}
