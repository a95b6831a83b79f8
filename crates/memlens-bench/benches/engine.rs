//! `cargo bench -p memlens-bench --bench engine`: the per-turn cost of the incremental policy
//! engine (add one message, ask for the context) with 100 / 1,000 / 10,000 messages already in the
//! pool, under a budget of 8,000 tokens.

use memlens_core::policy::{Engine, EngineOptions, PolicyConfig};
use memlens_core::tokens::TokenCounter;
use memlens_core::{Category, Chunk, ChunkId, ChunkMeta};

fn main() {
    divan::main();
}

/// A chunk of a synthetic support conversation: user and assistant turns with a tool call and
/// result every fourth turn. Token counts are set directly (counting is benchmarked elsewhere).
fn chunk(i: u32) -> Chunk {
    let (category, role, content) = match i % 8 {
        0 | 4 => (Category::User, "user", format!("Customer message {i}: my order ORD{i} has not arrived, please check.")),
        5 => (Category::ToolCall, "assistant", format!("{{\"order_id\": \"ORD{}\"}}", i - 1)),
        6 => (Category::ToolResult, "tool", format!("{{\"order_id\": \"ORD{}\", \"status\": \"in transit\", \"eta\": \"2025-03-{:02}\"}}", i - 2, i % 28 + 1)),
        _ => (Category::Assistant, "assistant", format!("Order ORD{} is in transit and should arrive soon (turn {i}).", i.saturating_sub(1))),
    };
    let call_id = matches!(category, Category::ToolCall | Category::ToolResult)
        .then(|| format!("call_{}", i - i % 8));
    Chunk {
        id: ChunkId(i),
        key: format!("m{i}"),
        category,
        tokens: 30 + (i % 7) * 10,
        content_tokens: 25 + (i % 7) * 10,
        content,
        starts_message: true,
        meta: ChunkMeta {
            role: Some(role.into()),
            tool_call_id: call_id,
            tool_name: matches!(category, Category::ToolCall | Category::ToolResult)
                .then(|| "lookup_order".to_string()),
            ..ChunkMeta::default()
        },
    }
}

fn engine_with(policy: &str, history: u32) -> Engine {
    let config = PolicyConfig::builtin(policy).expect("built-in policy");
    let mut e = Engine::new(
        config,
        EngineOptions {
            budget: 8000,
            input_usd_per_mtok: Some(2.5),
        },
        TokenCounter::for_model(Some("gpt-4o")),
    )
    .expect("engine");
    let mut system = chunk(0);
    system.category = Category::System;
    system.id = ChunkId(history + 1_000_000);
    e.add(&system);
    for i in 0..history {
        e.add(&chunk(i));
        if i % 2 == 1 {
            let _ = e.context(None);
        }
    }
    e
}

#[divan::bench(args = [100, 1000, 10000], sample_count = 20, sample_size = 20)]
fn value_add_and_context(bencher: divan::Bencher<'_, '_>, history: u32) {
    let mut e = engine_with("value", history);
    let mut next = history;
    bencher.bench_local(|| {
        e.add(&chunk(next));
        next += 1;
        e.context(None).tokens
    });
}

#[divan::bench(args = [100, 1000, 10000], sample_count = 20, sample_size = 20)]
fn window_add_and_context(bencher: divan::Bencher<'_, '_>, history: u32) {
    let mut e = engine_with("window", history);
    let mut next = history;
    bencher.bench_local(|| {
        e.add(&chunk(next));
        next += 1;
        e.context(None).tokens
    });
}
