//! Letta/MemGPT: on overflow, the oldest `fraction` of the messages (and any earlier summary)
//! are replaced by a recursive summary (modeled: `compress.summary` or the default model).
//!
//! Follows the summarizer of Letta (formerly MemGPT), `Agent.summarize_messages_inplace`, as
//! documented: on overflow a share of the oldest messages is replaced by a recursive summary.

use super::super::Strategy;
use crate::model::{Category, ChunkId};
use crate::policy::config::{LettaSummarize as LettaParams, SummaryModel};
use crate::policy::engine::decision::Decision;
use crate::policy::engine::state::{State, Status, Summary};

/// The replay of the upstream library, without MemLens' repairs.
#[derive(Debug)]
pub(crate) struct LettaSummarize {
    /// Share of the history summarized on overflow.
    pub(crate) params: LettaParams,
    /// The modeled summarizer.
    pub(crate) model: SummaryModel,
}

impl Strategy for LettaSummarize {
    fn decide(&self, s: &mut State, _query: &str, d: &mut Decision) {
        let model = self.model.clone();
        let budget = u64::from(s.options.budget);
        let mut guard = 0;
        while s.active_tokens() > budget && guard < 16 {
            guard += 1;
            let active: Vec<(u32, u64, Category)> = s.active_message_tokens();
            if active.len() < 2 {
                break;
            }
            let n = ((active.len() as f64 * self.params.fraction).ceil() as usize)
                .clamp(1, active.len() - 1);
            let mut chosen: std::collections::HashSet<u32> =
                active[..n].iter().map(|(m, _, _)| *m).collect();
            // Never split a tool call from its result: extend to whole units.
            let units: std::collections::HashSet<u32> = s
                .items
                .iter()
                .filter(|it| it.status == Status::Active && chosen.contains(&it.message))
                .map(|it| it.unit)
                .collect();
            for it in &s.items {
                if it.status == Status::Active && units.contains(&it.unit) {
                    chosen.insert(it.message);
                }
            }
            let items: Vec<usize> = (0..s.items.len())
                .filter(|&i| s.active(i) && chosen.contains(&s.items[i].message))
                .filter(|&i| s.items[i].category != Category::System)
                .collect();
            if items.len()
                == s.items
                    .iter()
                    .filter(|it| it.status == Status::Active && it.category != Category::System)
                    .count()
            {
                break;
            }
            let mut covered_tokens: u64 = items.iter().map(|&i| u64::from(s.items[i].tokens)).sum();
            let mut covers: Vec<ChunkId> = Vec::new();
            for earlier in s.summaries.iter_mut().filter(|e| e.active) {
                earlier.active = false;
                covered_tokens += u64::from(earlier.tokens);
                covers.append(&mut earlier.covers);
            }
            for &i in &items {
                s.items[i].status = Status::Dropped;
                d.evicted.push(s.items[i].id);
                covers.push(s.items[i].id);
            }
            let summary_tokens = ((covered_tokens as f64 * model.ratio).ceil() as u32).max(1);
            d.summary_cost_usd += self.model.cost_usd(covered_tokens, summary_tokens);
            let at = s.summaries.first().map_or(s.items[items[0]].seq, |first| {
                first.at.min(s.items[items[0]].seq)
            });
            covers.sort();
            s.summaries.push(Summary {
                at,
                tokens: summary_tokens,
                covers,
                active: true,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Category::{Assistant, System, User};
    use crate::policy::strategy::testing::{builtin, Script};

    #[test]
    fn the_oldest_thirty_percent_become_a_recursive_summary_until_it_fits() {
        let mut s = Script::default();
        s.msg("sys", System, 10);
        for k in 1..=5 {
            s.msg(&format!("u{k}"), User, 20)
                .msg(&format!("a{k}"), Assistant, 20);
        }
        // 213 tokens > 150. Round 1: ceil(10 x 0.3) = 3 messages (60 tokens) -> a summary of
        // ceil(60 x 0.15) = 9: 162, still over. Round 2: ceil(7 x 0.3) = 3 more (60) plus the
        // first summary (9) -> ceil(69 x 0.15) = 11: 3 + 10 + 11 + 80 = 104.
        let d = s.decide(builtin("letta-summarize"), 150);
        assert_eq!(s.keys(&d), ["sys", "[summary]", "u4", "a4", "u5", "a5"]);
        assert_eq!(d.tokens, 104);
        let cost = (60.0 * 0.15 + 9.0 * 0.6 + 69.0 * 0.15 + 11.0 * 0.6) / 1e6;
        assert!(
            (d.summary_cost_usd - cost).abs() < 1e-15,
            "{}",
            d.summary_cost_usd
        );
    }
}
