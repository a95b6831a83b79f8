//! The hindsight oracle: it knows every future reference (Belady's MIN, token-weighted), so it
//! runs only on a recorded trace. It bounds what any policy can achieve on misses at a budget.

use super::Strategy;
use crate::model::{Category, ChunkId};
use crate::policy::engine::decision::Decision;
use crate::policy::engine::state::{State, Status};
use crate::tokens::REPLY_PRIMING_TOKENS;
use std::collections::HashMap;
use std::sync::Arc;

/// For each chunk, the calls whose outputs use it, ascending: what the oracle reads. Built from
/// a recorded trace's access graph (`simulate::hindsight`); there is none live.
#[derive(Debug, Clone, Default)]
pub struct Hindsight(Arc<HashMap<ChunkId, Vec<u32>>>);

impl Hindsight {
    /// From each chunk's uses (call indices, ascending).
    pub fn new(uses: HashMap<ChunkId, Vec<u32>>) -> Hindsight {
        Hindsight(Arc::new(uses))
    }
}

/// Stateless: for each call it picks the best context from every live chunk, as a policy with
/// a perfect archive would. Protected units first, then the units this call's output will use
/// (smallest first), then the rest by soonest next use (Belady's order), while they fit.
#[derive(Debug)]
pub(crate) struct Oracle {
    future: Hindsight,
}

impl Oracle {
    pub(crate) fn new(future: Hindsight) -> Oracle {
        Oracle { future }
    }
}

impl Strategy for Oracle {
    fn decide(&self, s: &mut State, _query: &str, d: &mut Decision) {
        select(s, &self.future.0, d);
        s.start_on_user(d);
    }

    fn repairs_invariants(&self) -> bool {
        true
    }

    fn restores_dropped(&self) -> bool {
        true
    }
}

fn select(s: &mut State, future: &HashMap<ChunkId, Vec<u32>>, d: &mut Decision) {
    let now = s.call;
    let next_use = |e: &State, m: &[usize]| -> Option<u32> {
        m.iter()
            .filter_map(|&i| {
                let uses = future.get(&e.items[i].id)?;
                uses.get(uses.partition_point(|&c| c < now)).copied()
            })
            .min()
    };
    let mut units: Vec<(u32, Vec<usize>)> = Vec::new();
    {
        let mut pos: HashMap<u32, usize> = HashMap::new();
        for (i, it) in s.items.iter().enumerate() {
            if it.status == Status::Gone {
                continue;
            }
            let k = *pos.entry(it.unit).or_insert_with(|| {
                units.push((it.unit, Vec::new()));
                units.len() - 1
            });
            units[k].1.push(i);
        }
    }
    let was_active: Vec<bool> = s
        .items
        .iter()
        .map(|it| it.status == Status::Active)
        .collect();
    // (rank, next use, tokens, position): protected 0, used now 1, used later 2, never 3.
    let mut ranked: Vec<(u8, u32, u64, usize)> = units
        .iter()
        .enumerate()
        .map(|(k, (_, m))| {
            let tokens: u64 = m.iter().map(|&i| u64::from(s.items[i].tokens)).sum();
            let rank_use = next_use(s, m);
            let rank = if s.unit_protected(m) {
                0
            } else {
                match rank_use {
                    Some(c) if c == now => 1,
                    Some(_) => 2,
                    None => 3,
                }
            };
            (rank, rank_use.unwrap_or(u32::MAX), tokens, k)
        })
        .collect();
    ranked.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(if a.0 == 1 {
                a.2.cmp(&b.2)
            } else {
                a.1.cmp(&b.1)
            })
            .then(a.3.cmp(&b.3))
    });
    let mut total = u64::from(REPLY_PRIMING_TOKENS);
    let mut keep = vec![false; units.len()];
    for &(rank, _, tokens, k) in &ranked {
        if rank == 3 {
            break;
        }
        if rank == 0 || total + tokens <= u64::from(s.options.budget) {
            keep[k] = true;
            total += tokens;
        }
    }
    // The context must start on a user message: bring the user turn that precedes the first
    // kept unit, when it fits (otherwise `start_on_user` drops the leading units).
    let is_user = |e: &State, m: &[usize]| m.iter().any(|&i| e.items[i].category == Category::User);
    let is_system =
        |e: &State, m: &[usize]| m.iter().all(|&i| e.items[i].category == Category::System);
    if let Some(first) = (0..units.len()).find(|&k| keep[k] && !is_system(s, &units[k].1)) {
        if !is_user(s, &units[first].1) {
            if let Some(u) = (0..first).rev().find(|&k| is_user(s, &units[k].1)) {
                let tokens: u64 = units[u]
                    .1
                    .iter()
                    .map(|&i| u64::from(s.items[i].tokens))
                    .sum();
                if total + tokens <= u64::from(s.options.budget) {
                    keep[u] = true;
                }
            }
        }
    }
    for (k, (_, members)) in units.iter().enumerate() {
        for &i in members {
            s.items[i].status = if keep[k] {
                Status::Active
            } else {
                Status::Dropped
            };
            if was_active[i] && !keep[k] {
                d.evicted.push(s.items[i].id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Hindsight;
    use crate::model::Category::{Assistant, System, User};
    use crate::model::ChunkId;
    use crate::policy::strategy::testing::{builtin, Script};
    use crate::policy::{Engine, EngineOptions, PolicyError};
    use crate::tokens::TokenCounter;
    use std::collections::HashMap;

    fn options(budget: u32) -> EngineOptions {
        EngineOptions {
            budget,
            input_usd_per_mtok: None,
        }
    }

    #[test]
    fn cannot_be_built_live() {
        let err = Engine::new(
            builtin("oracle"),
            options(100),
            TokenCounter::for_model(None),
        )
        .expect_err("no hindsight live");
        assert!(matches!(err, PolicyError::NeedsHindsight { .. }), "{err}");
    }

    #[test]
    fn keeps_what_this_call_uses_and_drops_what_nothing_uses() {
        let mut s = Script::default();
        s.msg("sys", System, 10)
            .msg("u1", User, 20)
            .msg("a1", Assistant, 20)
            .msg("u2", User, 20)
            .msg("a2", Assistant, 20)
            .msg("u3", User, 20);
        // Call 0 uses u1 and a2; nothing uses a1 or u2.
        let uses: HashMap<ChunkId, Vec<u32>> = [(ChunkId(1), vec![0]), (ChunkId(4), vec![0])]
            .into_iter()
            .collect();
        let mut engine = Engine::with_hindsight(
            builtin("oracle"),
            options(1_000),
            TokenCounter::for_model(None),
            &Hindsight::new(uses),
        )
        .expect("hindsight given");
        for c in &s.chunks {
            engine.add(c);
        }
        // Even with room for everything, what no later step uses is left out.
        assert_eq!(s.keys(&engine.context(None)), ["sys", "u1", "a2", "u3"]);
    }
}
