//! MemLens policies as context builders: each conversation replayed through the policy engine as
//! a live agent would run it, then asked the question.

use crate::{render_turn, ContextBuilder, Conversation};
use memlens_core::tokens::TokenCounter;
use memlens_core::{Chunk, ChunkId};
use std::collections::HashMap;

/// A MemLens policy as a context builder. The conversation is replayed through the policy
/// engine the way a live agent would run it (every agent turn is a call, and the engine decides
/// the context each time, so what it evicted along the way stays evicted unless its archive brings
/// it back); then the question is asked as the current query. Turns cost what
/// [`Conversation::tokens`] says, like every other row. The replay is done once per conversation
/// and budget and cloned for each question.
pub struct PolicyBuilder {
    config: memlens_core::policy::PolicyConfig,
    replayed: HashMap<(String, u32), (memlens_core::policy::Engine, HashMap<ChunkId, usize>)>,
}

impl PolicyBuilder {
    /// A builder for a policy.
    pub fn new(config: memlens_core::policy::PolicyConfig) -> PolicyBuilder {
        PolicyBuilder {
            config,
            replayed: HashMap::new(),
        }
    }

    fn replay(
        &self,
        conv: &Conversation<'_>,
        budget: u32,
    ) -> Result<memlens_core::policy::Engine, memlens_core::policy::PolicyError> {
        use memlens_core::policy::{Engine, EngineOptions};
        let mut engine = Engine::new(
            self.config.clone(),
            EngineOptions {
                // The engine counts the reply priming; the benchmark counts turns only.
                budget: budget + memlens_core::tokens::REPLY_PRIMING_TOKENS,
                input_usd_per_mtok: None,
            },
            TokenCounter::for_model(conv.trace.main_model()),
        )?;
        let turn: HashMap<ChunkId, usize> = conv
            .turns
            .iter()
            .enumerate()
            .map(|(i, &c)| (c, i))
            .collect();
        let as_turn = |id: ChunkId| -> Option<Chunk> {
            let i = *turn.get(&id)?;
            let mut c = conv.trace.chunk(id).clone();
            c.content = render_turn(&c);
            c.tokens = conv.tokens[i];
            c.content_tokens = conv.tokens[i];
            Some(c)
        };
        for call in &conv.trace.calls {
            for &id in &call.input {
                if let Some(c) = as_turn(id) {
                    engine.add(&c);
                }
            }
            let _ = engine.context(None);
        }
        // The turns after the last call (the conversation's last words) are in memory too.
        for &id in &conv.turns {
            if let Some(c) = as_turn(id) {
                engine.add(&c);
            }
        }
        Ok(engine)
    }
}

impl ContextBuilder for PolicyBuilder {
    fn name(&self) -> String {
        self.config.name.clone()
    }

    fn build(&mut self, conv: &Conversation<'_>, question: &str, budget: u32) -> Vec<usize> {
        let key = (conv.trace.id.clone(), budget);
        if !self.replayed.contains_key(&key) {
            let Ok(engine) = self.replay(conv, budget) else {
                return Vec::new();
            };
            let turn = conv
                .turns
                .iter()
                .enumerate()
                .map(|(i, &c)| (c, i))
                .collect();
            self.replayed.insert(key.clone(), (engine, turn));
        }
        let Some((engine, turn)) = self.replayed.get(&key) else {
            return Vec::new();
        };
        let mut engine = engine.clone();
        let decision = engine.context(Some(question));
        let mut context: Vec<usize> = decision
            .chunk_ids()
            .filter_map(|id| turn.get(&id).copied())
            .collect();
        // Protected turns (the newest messages) can exceed a tiny budget: drop the oldest.
        while conv.context_tokens(&context) > u64::from(budget) && !context.is_empty() {
            context.remove(0);
        }
        context
    }
}
