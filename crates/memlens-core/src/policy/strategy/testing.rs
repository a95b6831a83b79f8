//! Hand-built conversations for the strategies' behaviour tests: every chunk's tokens are set by
//! the test (no tokenizer), so an expected context can be derived by hand.

use crate::model::{Category, Chunk, ChunkId, ChunkMeta};
use crate::policy::{Decision, Engine, EngineOptions, PolicyConfig};
use crate::tokens::TokenCounter;

/// A conversation under construction.
#[derive(Default)]
pub(crate) struct Script {
    pub(crate) chunks: Vec<Chunk>,
}

impl Script {
    fn push(&mut self, key: &str, category: Category, tokens: u32, starts: bool, meta: ChunkMeta) {
        let id = ChunkId(self.chunks.len() as u32);
        self.chunks.push(Chunk {
            id,
            key: key.to_string(),
            category,
            content: format!("{key} text"),
            starts_message: starts,
            content_tokens: tokens,
            tokens,
            meta,
        });
    }

    /// A message of one chunk.
    pub(crate) fn msg(&mut self, key: &str, category: Category, tokens: u32) -> &mut Script {
        self.push(key, category, tokens, true, ChunkMeta::default());
        self
    }

    /// An assistant message that is one tool call (`starts`: it begins a new message; false
    /// for a parallel call of the same message).
    pub(crate) fn call(&mut self, key: &str, tool: &str, tokens: u32, starts: bool) -> &mut Script {
        let meta = ChunkMeta {
            tool_name: Some(tool.into()),
            tool_call_id: Some(format!("id-{key}")),
            ..ChunkMeta::default()
        };
        self.push(key, Category::ToolCall, tokens, starts, meta);
        self
    }

    /// The result message of the tool call `call`.
    pub(crate) fn result(&mut self, key: &str, call: &str, tool: &str, tokens: u32) -> &mut Script {
        let meta = ChunkMeta {
            tool_name: Some(tool.into()),
            tool_call_id: Some(format!("id-{call}")),
            ..ChunkMeta::default()
        };
        self.push(key, Category::ToolResult, tokens, true, meta);
        self
    }

    /// Sets the last chunk's content (its tokens stay as given).
    pub(crate) fn content(&mut self, text: &str) -> &mut Script {
        if let Some(c) = self.chunks.last_mut() {
            c.content = text.to_string();
        }
        self
    }

    /// Sets the last chunk's timestamp.
    pub(crate) fn at(&mut self, timestamp: &str) -> &mut Script {
        if let Some(c) = self.chunks.last_mut() {
            c.meta.timestamp = Some(timestamp.to_string());
        }
        self
    }

    /// The id of the chunk with this key.
    pub(crate) fn id(&self, key: &str) -> ChunkId {
        self.chunks
            .iter()
            .find(|c| c.key == key)
            .map(|c| c.id)
            .expect("the test names a key of its script")
    }

    /// Runs a live engine, asking for a context after each chunk count in `calls_after`
    /// (ascending); returns the decisions.
    pub(crate) fn run(&self, engine: &mut Engine, calls_after: &[usize]) -> Vec<Decision> {
        let mut out = Vec::new();
        let mut next = 0;
        for &n in calls_after {
            for c in &self.chunks[next..n] {
                engine.add(c);
            }
            next = n;
            out.push(engine.context(None));
        }
        out
    }

    /// Runs a live engine over the whole script and decides one context at the end.
    pub(crate) fn decide(&self, policy: PolicyConfig, budget: u32) -> Decision {
        let mut engine = engine(policy, budget);
        for c in &self.chunks {
            engine.add(c);
        }
        engine.context(None)
    }

    /// The keys of a decision's chunks, in order (summaries as `[summary]`).
    pub(crate) fn keys(&self, d: &Decision) -> Vec<String> {
        d.entries
            .iter()
            .map(|e| match e.chunk {
                Some(id) => self.chunks[id.index()].key.clone(),
                None => "[summary]".to_string(),
            })
            .collect()
    }
}

/// An engine for `policy` at `budget` (no prices).
pub(crate) fn engine(policy: PolicyConfig, budget: u32) -> Engine {
    Engine::new(
        policy,
        EngineOptions {
            budget,
            input_usd_per_mtok: None,
        },
        TokenCounter::for_model(Some("gpt-4o")),
    )
    .expect("test policies are valid and need no hindsight")
}

/// A built-in policy by name.
pub(crate) fn builtin(name: &str) -> PolicyConfig {
    PolicyConfig::builtin(name).expect("a built-in policy")
}
