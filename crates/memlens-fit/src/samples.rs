//! The regression's training samples: each chunk's value factors at each call, labelled by
//! whether a later step used it.

use memlens_core::model::{Category, ChunkId};
use memlens_core::time::timestamp_secs;
use memlens_core::value::{Factors, Label, ValueConfig, ValueEngine};

use crate::{Case, FitError};

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
