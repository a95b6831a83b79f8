//! The regression's training samples: each chunk's value factors at each call, labelled by
//! whether a later step used it.

use memlens_core::model::Category;
use memlens_core::value::{replay_values, Factors, Label, ValueConfig};

use crate::{Case, FitError};

/// The training samples of one trace: for every chunk in every call's input (system prompts
/// left out: they are always kept), its value factors at that call ([`replay_values`]), labelled important when that call's output or a later one used it, useless when
/// none did.
pub fn samples(case: &Case, config: &ValueConfig) -> Vec<(Factors, Label)> {
    let trace = case.trace;
    let mut out = Vec::new();
    replay_values(trace, &case.graph, config, |engine, step| {
        let i = step.call.index;
        let factors = engine.factors(&step.ids, i, step.now_secs, step.query);
        for (&id, factors) in step.ids.iter().zip(factors) {
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
    });
    out
}

/// The samples of every case, thinned by an even stride to at most `max_samples` (the
/// regression's cost is linear in them); no call in any case is [`FitError::NoCalls`].
pub(crate) fn training_samples(
    cases: &[&Case],
    config: &ValueConfig,
    max_samples: usize,
) -> Result<Vec<(Factors, Label)>, FitError> {
    let mut all: Vec<(Factors, Label)> = cases.iter().flat_map(|c| samples(c, config)).collect();
    if all.is_empty() && cases.iter().all(|c| c.trace.calls.is_empty()) {
        return Err(FitError::NoCalls);
    }
    if all.len() > max_samples {
        let stride = all.len().div_ceil(max_samples);
        all = all.into_iter().step_by(stride).collect();
    }
    Ok(all)
}
