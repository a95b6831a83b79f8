//! The value strategy: the lowest value per token goes first (the value engine's score of each
//! unit's members, summed, over the unit's tokens), with every MemLens rule applied.

use super::{rules, Strategy};
use crate::model::ChunkId;
use crate::policy::engine::decision::Decision;
use crate::policy::engine::state::State;
use std::collections::HashMap;

/// Lowest value per token first.
#[derive(Debug)]
pub(crate) struct Value;

impl Strategy for Value {
    fn decide(&self, s: &mut State, query: &str, d: &mut Decision) {
        rules::apply(s, query, by_value_per_token, d);
    }

    fn repairs_invariants(&self) -> bool {
        true
    }

    fn reads_values(&self) -> bool {
        true
    }
}

/// Unprotected units with an active item, lowest value per token first (ties: oldest first).
fn by_value_per_token(s: &State, query: &str) -> Vec<(u32, Vec<usize>)> {
    let units = rules::oldest_first(s, query);
    let ids: Vec<ChunkId> = units
        .iter()
        .flat_map(|(_, m)| m.iter().map(|&i| s.items[i].chunk.id))
        .collect();
    let values = s
        .value
        .values(&ids, s.call, None, Some(query).filter(|q| !q.is_empty()));
    let by_chunk: HashMap<ChunkId, f32> = ids.iter().copied().zip(values).collect();
    let mut keyed: Vec<(f32, usize, (u32, Vec<usize>))> = units
        .into_iter()
        .enumerate()
        .map(|(pos, (u, m))| {
            let value: f32 = m
                .iter()
                .map(|&i| by_chunk.get(&s.items[i].chunk.id).copied().unwrap_or(0.0))
                .sum();
            let tokens: u32 = m.iter().map(|&i| s.items[i].tokens).sum();
            (value / tokens.max(1) as f32, pos, (u, m))
        })
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    keyed.into_iter().map(|(_, _, u)| u).collect()
}
