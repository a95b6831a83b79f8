//! LangChain `trim_messages(strategy="last", include_system=True, start_on="human",
//! allow_partial=False)`, applied to the whole history before every call: keep the system
//! message, then the longest suffix of messages that fits, then drop leading messages until a
//! human one. Stateless.
//!
//! Follows `langchain_core.messages.utils.trim_messages` as documented for the langchain-core 0.3
//! line (parameters `strategy`, `include_system`, `start_on`, `allow_partial`).

use super::super::Strategy;
use crate::model::Category;
use crate::policy::config::LangchainTrim as LangchainTrimParams;
use crate::policy::engine::decision::Decision;
use crate::policy::engine::state::{State, Status};
use crate::tokens::REPLY_PRIMING_TOKENS;

/// The replay of the upstream library, without MemLens' repairs.
#[derive(Debug)]
pub(crate) struct LangchainTrim(pub(crate) LangchainTrimParams);

impl Strategy for LangchainTrim {
    fn decide(&self, s: &mut State, _query: &str, d: &mut Decision) {
        let lc = self.0.clone();
        let mut room = u64::from(s.options.budget).saturating_sub(u64::from(REPLY_PRIMING_TOKENS));
        if lc.include_system {
            room = room.saturating_sub(s.system_tokens());
        }
        let messages = s.message_tokens();
        let mut kept: Vec<(u32, Category)> = Vec::new();
        for &(m, t, c) in messages.iter().rev() {
            if t > room {
                break;
            }
            room -= t;
            kept.push((m, c));
        }
        kept.reverse();
        if lc.start_on_human {
            let first_user = kept.iter().position(|(_, c)| *c == Category::User);
            kept.drain(..first_user.unwrap_or(kept.len()));
        }
        let kept = kept.into_iter().map(|(m, _)| m).collect();
        s.keep_messages(&kept, d);
        if !lc.include_system {
            for it in &mut s.items {
                if it.category == Category::System && it.status == Status::Active {
                    it.status = Status::Dropped;
                }
            }
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

    /// system 10, then five 20-token turns u1 a1 u2 a2 u3; the reply priming is 3.
    fn five_turns() -> Script {
        let mut s = Script::default();
        s.msg("sys", System, 10);
        for k in ["u1", "a1", "u2", "a2", "u3"] {
            s.msg(k, if k.starts_with('u') { User } else { Assistant }, 20);
        }
        s
    }

    #[test]
    fn keeps_the_longest_suffix_that_fits_after_the_system_message() {
        let s = five_turns();
        // Room 73 - 3 - 10 = 60: u3, a2, u2 fit (60), a1 does not; u2 is human.
        let d = s.decide(builtin("langchain-trim"), 73);
        assert_eq!(s.keys(&d), ["sys", "u2", "a2", "u3"]);
        assert_eq!(d.tokens, 73);
    }

    #[test]
    fn then_starts_on_a_human_message() {
        let s = five_turns();
        // Room 53 - 13 = 40: u3 and a2 fit; a2 is not human, so it goes too.
        let d = s.decide(builtin("langchain-trim"), 53);
        assert_eq!(s.keys(&d), ["sys", "u3"]);
    }

    #[test]
    fn stops_at_the_first_message_that_does_not_fit() {
        // `strategy="last"` takes a suffix: a small older message behind a big one is not
        // reached, although it would fit.
        let mut s = Script::default();
        s.msg("sys", System, 10)
            .msg("u1", User, 5)
            .msg("a1", Assistant, 100)
            .msg("u2", User, 10);
        let d = s.decide(builtin("langchain-trim"), 63);
        assert_eq!(s.keys(&d), ["sys", "u2"]);
    }

    #[test]
    fn without_include_system_the_system_message_goes_too() {
        let s = five_turns();
        let mut policy = builtin("langchain-trim");
        policy.langchain = Some(crate::policy::config::LangchainTrim {
            include_system: false,
            ..Default::default()
        });
        // Room 73 - 3 = 70 (the system message no longer counts): u3 a2 u2 fit (60), a1 does
        // not (80); the system message is not sent.
        let d = s.decide(policy, 73);
        assert_eq!(s.keys(&d), ["u2", "a2", "u3"]);
    }
}
