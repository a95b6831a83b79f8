//! Sliding window: the oldest units go first, with every MemLens rule (protection, quotas,
//! compression, the value threshold, cleanup, offload) applied.

use super::{rules, Strategy};
use crate::policy::engine::decision::Decision;
use crate::policy::engine::state::State;

/// Oldest first.
#[derive(Debug)]
pub(crate) struct Window {
    /// A rule reads values (the value threshold, quotas by value, the age exemption).
    pub(crate) reads_values: bool,
}

impl Strategy for Window {
    fn decide(&self, s: &mut State, query: &str, d: &mut Decision) {
        rules::apply(s, query, rules::oldest_first, d);
    }

    fn repairs_invariants(&self) -> bool {
        true
    }

    fn marks_changes(&self) -> bool {
        true
    }

    fn reads_values(&self) -> bool {
        self.reads_values
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Category::{Assistant, System, User};
    use crate::policy::strategy::testing::{builtin, Script};

    #[test]
    fn the_oldest_units_go_first_and_a_tool_call_goes_with_its_result() {
        let mut s = Script::default();
        s.msg("sys", System, 10)
            .msg("u1", User, 10)
            .call("c1", "lookup", 10, true)
            .result("r1", "c1", "lookup", 30)
            .msg("a1", Assistant, 10)
            .msg("u2", User, 10);
        // 83 tokens at 60: u1 (10) goes, then the unit c1+r1 (40): 33. The context then
        // starts on a1, an assistant message, so a1 goes too: 23.
        let d = s.decide(builtin("window"), 60);
        assert_eq!(s.keys(&d), ["sys", "u2"]);
        assert_eq!(d.tokens, 23);
        // At 80 only u1 has to go, and the context would start on the tool call: that unit
        // goes with it (a context never starts on a tool call or an orphaned result).
        let d = s.decide(builtin("window"), 80);
        assert_eq!(s.keys(&d), ["sys", "u2"]);
    }

    #[test]
    fn the_system_prompt_and_the_newest_user_message_stay_even_over_budget() {
        let mut s = Script::default();
        s.msg("sys", System, 50)
            .msg("a0", Assistant, 10)
            .msg("u1", User, 50);
        let d = s.decide(builtin("window"), 60);
        assert_eq!(s.keys(&d), ["sys", "u1"]);
        assert!(d.over_budget);
    }
}
