//! LlamaIndex `Memory._manage_queue` (llama-index-core `memory/memory.py`), message for
//! message: when the active queue exceeds `token_limit x chat_history_token_ratio`, pop the
//! oldest messages until `token_flush_size` tokens are flushed (always leaving one), then keep
//! flushing until the queue starts on a user message; if that would leave no user message,
//! put the most recent complete turn back. Repeat while over the limit. Flushed messages leave
//! the context (they go to memory blocks, none by default). The system prompt is the agent's,
//! not the memory's. Stateful.
//!
//! Follows `llama_index.core.memory.Memory._manage_queue` of the llama-index-core 0.12 line
//! (`llama_index/core/memory/memory.py`), the `Memory` class that replaced `ChatMemoryBuffer`.

use super::super::Strategy;
use crate::model::Category;
use crate::policy::config::LlamaindexMemory as LlamaindexParams;
use crate::policy::engine::decision::Decision;
use crate::policy::engine::state::{State, Status};

/// The replay of the upstream library, without MemLens' repairs.
#[derive(Debug)]
pub(crate) struct LlamaindexMemory(pub(crate) LlamaindexParams);

impl Strategy for LlamaindexMemory {
    fn decide(&self, s: &mut State, _query: &str, d: &mut Decision) {
        let cfg = self.0.clone();
        let limit = s.or_budget(cfg.token_limit);
        let history_limit = limit as f64 * cfg.chat_history_token_ratio;
        // Active messages, oldest first: (message id, tokens, is a user message).
        let mut queue: std::collections::VecDeque<(u32, u64, bool)> = s
            .active_message_tokens()
            .into_iter()
            .map(|(m, t, c)| (m, t, c == Category::User))
            .collect();
        let flush_size = u64::from(cfg.token_flush_size);
        let tokens = |q: &std::collections::VecDeque<(u32, u64, bool)>| {
            q.iter().map(|x| x.1).sum::<u64>() as f64
        };
        let mut flushed_all: std::collections::HashSet<u32> = std::collections::HashSet::new();
        while tokens(&queue) > history_limit {
            if queue.len() <= 1 {
                break;
            }
            let mut flush: Vec<(u32, u64, bool)> = Vec::new();
            let mut flushed = 0u64;
            while flushed < flush_size && queue.len() > 1 {
                if let Some(m) = queue.pop_front() {
                    flushed += m.1;
                    flush.push(m);
                }
            }
            while queue.front().is_some_and(|m| !m.2) && queue.len() > 1 {
                if let Some(m) = queue.pop_front() {
                    flush.push(m);
                }
            }
            if queue.len() == 1 && queue.front().is_some_and(|m| !m.2) && !flush.is_empty() {
                if let Some(m) = queue.pop_front() {
                    flush.push(m);
                }
                if let Some(start) = flush.iter().rposition(|m| m.2) {
                    for m in flush.drain(start..).rev() {
                        queue.push_front(m);
                    }
                }
            }
            if flush.is_empty() {
                break;
            }
            flushed_all.extend(flush.iter().map(|m| m.0));
        }
        for it in &mut s.items {
            if it.status == Status::Active && flushed_all.contains(&it.message) {
                it.status = Status::Dropped;
                d.evicted.push(it.id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Category::{Assistant, System, User};
    use crate::policy::config::LlamaindexMemory as Params;
    use crate::policy::strategy::testing::{builtin, Script};

    /// token_limit 100 x ratio 0.5: the chat history may hold 50 tokens; flush 20 at a time.
    fn policy() -> crate::policy::PolicyConfig {
        crate::policy::PolicyConfig {
            llamaindex: Some(Params {
                token_limit: 100,
                chat_history_token_ratio: 0.5,
                token_flush_size: 20,
            }),
            ..builtin("llamaindex-memory")
        }
    }

    fn conversation(roles: &str) -> Script {
        let mut s = Script::default();
        s.msg("sys", System, 10);
        for (k, r) in roles.chars().enumerate() {
            let (key, cat) = if r == 'u' {
                (format!("u{k}"), User)
            } else {
                (format!("a{k}"), Assistant)
            };
            s.msg(&key, cat, 20);
        }
        s
    }

    #[test]
    fn flushes_the_oldest_until_the_history_fits_and_starts_on_a_user_message() {
        // 100 tokens of history: flush u0 (20, the flush size), then a1 (the queue must start on
        // a user message); 60 > 50 still: flush u2, then a3. u4 remains (20).
        let s = conversation("uauau");
        assert_eq!(s.keys(&s.decide(policy(), 10_000)), ["sys", "u4"]);
    }

    #[test]
    fn when_flushing_would_leave_no_user_message_the_last_turn_is_put_back() {
        // u0 a1 a2 a3: flushing u0 then the assistant messages would leave only a3, no user
        // message; LlamaIndex puts the most recent complete turn (u0..a3) back and stops.
        let s = conversation("uaaa");
        assert_eq!(
            s.keys(&s.decide(policy(), 10_000)),
            ["sys", "u0", "a1", "a2", "a3"]
        );
    }
}
