//! The value strategy: the lowest value per token goes first (the value engine's score of each
//! unit's members, summed, over the unit's tokens), with every MemLens rule applied. Until the
//! run has a tool call or result it is a conversation: then the lowest value goes first, whatever
//! its size, and the assistant's turns are weighed as the user's (`rules::by_value_per_token`,
//! `State::saw_tools`; measured in BENCHMARKS.md, Policies: "Conversations (LoCoMo)").

use super::{rules, Strategy};
use crate::policy::engine::decision::Decision;
use crate::policy::engine::state::State;

/// Lowest value per token first.
#[derive(Debug)]
pub(crate) struct Value;

impl Strategy for Value {
    fn decide(&self, s: &mut State, query: &str, d: &mut Decision) {
        rules::apply(s, query, rules::by_value_per_token, d);
    }

    fn repairs_invariants(&self) -> bool {
        true
    }

    fn marks_changes(&self) -> bool {
        true
    }

    fn reads_values(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{builtin, engine, Script};
    use crate::model::Category::{Assistant, System, User};

    /// sys 10, u1 60 (worth 0.6), a1 10 (worth 0.2), u2 10, a2 10, then the newest user turn
    /// u3 10: 110 tokens and the reply's priming (3) at a budget of 105, so u1 or a1 must go.
    fn chat() -> Script {
        let mut s = Script::default();
        s.msg("sys", System, 10)
            .msg("u1", User, 60)
            .msg("a1", Assistant, 10)
            .msg("u2", User, 10)
            .msg("a2", Assistant, 10)
            .msg("u3", User, 10);
        s
    }

    fn keys_at_105(s: &Script) -> Vec<String> {
        let mut e = engine(builtin("value"), 105);
        for c in &s.chunks {
            e.add(c);
        }
        for (key, value) in [("u1", 0.6), ("a1", 0.2), ("u2", 0.9), ("a2", 0.9)] {
            e.set_value(s.id(key), Some(value));
        }
        s.keys(&e.context(None))
    }

    #[test]
    fn a_conversation_is_ranked_by_value_alone_and_an_agent_run_per_token() {
        // No tool call: by value alone, a1 (0.2) goes before u1 (0.6), whatever their sizes.
        let chat = chat();
        assert_eq!(keys_at_105(&chat), ["sys", "u1", "u2", "a2", "u3"]);
        // The same run with a tool call and its result (1 token each) before u3 is an agent's:
        // per token, u1 (0.6 / 59) goes before a1 (0.2 / 9), and a1 with it, since a context
        // starts on a user message.
        let mut agent = Script::default();
        agent
            .msg("sys", System, 10)
            .msg("u1", User, 59)
            .msg("a1", Assistant, 9)
            .msg("u2", User, 10)
            .msg("a2", Assistant, 10);
        agent
            .call("c1", "lookup", 1, true)
            .result("r1", "c1", "lookup", 1);
        agent.msg("u3", User, 10);
        assert_eq!(keys_at_105(&agent), ["sys", "u2", "a2", "c1", "r1", "u3"]);
    }

    #[test]
    fn a_context_that_only_appends_extends_the_latest_one() {
        // The chat at a budget of 105, then u4 (20), one message at a time after the first three.
        // Each context is checked against a fresh engine's `context` on the same chunks.
        let mut s = chat();
        s.msg("u4", User, 20);
        let fresh = |n: usize| {
            let mut e = engine(builtin("value"), 105);
            s.chunks[..n].iter().for_each(|c| e.add(c));
            e.context(None)
        };
        let mut e = engine(builtin("value"), 105);
        s.chunks[..3].iter().for_each(|c| e.add(c));
        let mut latest = e.context(None);
        let mut extended = Vec::new();
        for n in [4, 5, 6, 7] {
            e.add(&s.chunks[n - 1]);
            let (d, ext) = e.context_after(None, &mut latest);
            assert_eq!(d.entries, fresh(n).entries, "context after {n} chunks");
            assert!(
                ext || !latest.entries.is_empty(),
                "a context not extended leaves the latest"
            );
            extended.push(ext);
            latest = d;
        }
        // u2 and a2 fit (93 and 103 tokens with the priming): extended. u3 does not (113): u1
        // goes, so that context is listed afresh. u4 fits again (73) and extends it.
        assert_eq!(extended, [true, true, false, true]);
    }

    #[test]
    fn value_work_queued_for_a_chunk_is_done_before_its_item_goes() {
        // Under budget nothing ranks, so the chunks' value work waits; then the recorded agent
        // trims u1 from its history (the simulator's `retain`): the value engine must still get
        // u1, as it did when the work was done on arrival.
        let mut s = Script::default();
        s.msg("sys", System, 10)
            .content("you are a travel agent")
            .msg("u1", User, 10)
            .content("my booking code is ZX81QP for the Leeds flight")
            .msg("a1", Assistant, 10)
            .content("found booking ZX81QP");
        let mut e = engine(builtin("value"), 1_000);
        for c in &s.chunks {
            e.add(c);
        }
        let _ = e.context(None);
        e.retain(&[s.id("sys"), s.id("a1")]);
        let _ = e.context(None);
        assert!(e.value_engine().contains(s.id("u1")));
    }

    #[test]
    fn in_a_conversation_both_parties_are_weighed_alike_until_a_tool_is_used() {
        let mut s = Script::default();
        s.msg("sys", System, 10)
            .msg("u1", User, 10)
            .content("the parcel left the depot in Leeds on Monday")
            .msg("a1", Assistant, 10)
            .content("the parcel left the depot in Leeds on Monday");
        s.call("c1", "lookup", 5, true)
            .result("r1", "c1", "lookup", 5);
        let mut e = engine(builtin("value"), 1_000);
        // The category factor: the same for both parties in a conversation, the preset's (0.8
        // and 0.4) once the run is an agent's.
        let categories = |e: &mut crate::policy::Engine| {
            let ids = [s.id("u1"), s.id("a1")];
            let f = e.value_engine().factors(&ids, 1, None, None);
            let category = |i: usize| f[i].map(|f| f.category);
            (category(0), category(1))
        };
        let (conversation, tools) = s.chunks.split_at(3);
        conversation.iter().for_each(|c| e.add(c));
        assert_eq!(categories(&mut e), (Some(0.8), Some(0.8)));
        tools.iter().for_each(|c| e.add(c));
        assert_eq!(categories(&mut e), (Some(0.8), Some(0.4)));
    }
}
