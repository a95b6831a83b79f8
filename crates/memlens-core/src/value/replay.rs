//! A recorded trace fed to a [`ValueEngine`] call by call, as a live engine would have seen it:
//! the one replay behind the analysis heatmap and the fit's training samples.

use super::{ValueConfig, ValueEngine};
use crate::model::{Call, Category, ChunkId, Trace};
use crate::references::AccessGraph;
use crate::time::timestamp_secs;

/// What the engine knows at one call of a [`replay_values`].
pub struct ValueStep<'a> {
    /// The call, its chunks already added.
    pub call: &'a Call,
    /// The call's input chunks (ids the trace holds), in input order.
    pub ids: Vec<ChunkId>,
    /// The latest chunk time seen so far, where the trace has times.
    pub now_secs: Option<f64>,
    /// The newest user message of the input: the task relevance is measured against.
    pub query: Option<&'a str>,
}

/// Replays `trace` into a fresh engine with `config`, calling `visit` at every call: chunks are
/// added at the first call that carries them (in id order, since redundancy is measured against
/// chunks added before) with their times, and a chunk's uses count only the outputs of earlier
/// calls (`graph`).
pub fn replay_values<'a>(
    trace: &'a Trace,
    graph: &AccessGraph,
    config: &ValueConfig,
    mut visit: impl FnMut(&ValueEngine, ValueStep<'a>),
) {
    let mut engine = ValueEngine::new(config.clone());
    let mut uses = vec![0u32; trace.chunks.len()];
    let mut latest: Option<f64> = None;
    for call in &trace.calls {
        let i = call.index;
        if i > 0 {
            for &used in graph.used_at(i - 1) {
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
        visit(
            &engine,
            ValueStep {
                call,
                ids,
                now_secs: latest,
                query,
            },
        );
    }
}
