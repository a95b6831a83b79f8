//! Choosing by replay which of the proposed JSON fields ([`crate::drop_rules`]) the fitted
//! policy drops, before any other candidate is tried.

use memlens_core::cost::PriceTable;
use memlens_core::policy::PolicyConfig;
use serde::Serialize;

use crate::candidates::JsonForm;
use crate::{
    drop_rules, evaluate_each, field_uses, total, within_ceiling, Case, DropRules, FieldUse,
    FitError, FitOptions, Outcome,
};

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

/// The base policy with `drops` added to its tool rules (not to a tool whose rule says
/// `compress = false`).
pub(crate) fn with_field_drops(base: &PolicyConfig, drops: &DropRules) -> PolicyConfig {
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
pub(crate) fn choose_field_drops(
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
