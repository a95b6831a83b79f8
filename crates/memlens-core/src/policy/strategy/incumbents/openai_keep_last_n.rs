//! OpenAI Agents SDK `SQLiteSession.get_items(limit=N)`: the last N session items, each
//! message, function call and function call output an item of its own; the agent's
//! instructions are not session items and are always sent. Stateless. It can cut between a
//! function call and its output: a violation the simulator reports.
//!
//! Follows `SQLiteSession.get_items(limit)` of openai-agents-python
//! (`src/agents/memory/sqlite_session.py`): "returns the latest N items in chronological order".

use super::super::Strategy;
use crate::model::Category;
use crate::policy::engine::decision::Decision;
use crate::policy::engine::state::{State, Status};

/// The replay of the upstream library, without MemLens' repairs.
#[derive(Debug)]
pub(crate) struct OpenaiKeepLastN {
    /// Items kept.
    pub(crate) n: u32,
}

impl Strategy for OpenaiKeepLastN {
    fn decide(&self, s: &mut State, _query: &str, d: &mut Decision) {
        let n = self.n as usize;
        let live: Vec<usize> = (0..s.items.len())
            .filter(|&i| s.live(i) && s.items[i].category != Category::System)
            .collect();
        let cut = live.len().saturating_sub(n);
        for (k, &i) in live.iter().enumerate() {
            let keep = k >= cut;
            if !keep && s.items[i].status == Status::Active {
                d.evicted.push(s.items[i].id);
            }
            s.items[i].status = if keep {
                Status::Active
            } else {
                Status::Dropped
            };
        }
    }

    fn restores_dropped(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Category::{Assistant, System, User};
    use crate::policy::strategy::testing::{builtin, Script};
    use crate::policy::validate::{check, Violation};

    fn policy(n: u32) -> crate::policy::PolicyConfig {
        crate::policy::PolicyConfig {
            keep_last_n: Some(n),
            ..builtin("openai-keep-last-n")
        }
    }

    #[test]
    fn keeps_the_last_n_items_and_always_the_instructions() {
        let mut s = Script::default();
        s.msg("sys", System, 10);
        for k in ["u1", "a1", "u2", "a2", "u3"] {
            s.msg(k, if k.starts_with('u') { User } else { Assistant }, 10);
        }
        // Whatever the budget: get_items(limit=N) counts items, not tokens.
        let d = s.decide(policy(2), 10_000);
        assert_eq!(s.keys(&d), ["sys", "a2", "u3"]);
        assert_eq!(
            builtin("openai-keep-last-n").keep_last_n,
            None,
            "20 by default"
        );
    }

    #[test]
    fn a_function_call_and_its_output_are_two_items_and_can_be_cut_apart() {
        let mut s = Script::default();
        s.msg("sys", System, 10)
            .msg("u1", User, 10)
            .call("c1", "lookup", 10, true)
            .result("r1", "c1", "lookup", 10)
            .msg("a1", Assistant, 10)
            .msg("u2", User, 10);
        let d = s.decide(policy(3), 10_000);
        assert_eq!(s.keys(&d), ["sys", "r1", "a1", "u2"]);
        let full: Vec<_> = s.chunks.iter().map(|c| c.id).collect();
        let violations = check(|id| &s.chunks[id.index()], &full, &d);
        assert!(
            violations
                .iter()
                .any(|v| matches!(v, Violation::ToolPairSplit { id } if id == "id-c1")),
            "{violations:?}"
        );
    }
}
