//! The engine driven through the pool by a decoded sequence of operations (messages of every
//! kind, contexts, labels, host values, usage, policy switches), under every registered policy:
//! after every context the invariants are checked independently (`Pool::violations`) and must hold
//! for MemLens' own policies, and the context is within the budget or says it is not; with the
//! history not kept as well (the engine forgetting what it gave up, the pool releasing it).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use memlens_core::policy::{PolicyConfig, BUILTIN};
use memlens_core::value::Label;
use memlens_core::Usage;
use memlens_pool::{Pool, PoolOptions};
use serde_json::{json, Value};

#[derive(Arbitrary, Debug)]
enum Op {
    User {
        words: u8,
        seed: u8,
    },
    Assistant {
        words: u8,
        seed: u8,
    },
    /// An assistant message with tool calls, then a result for each call whose bit is set.
    Tools {
        sizes: Vec<u8>,
        answered: u8,
        tool: u8,
    },
    Context {
        query: Option<u8>,
    },
    Label {
        chunk: u16,
        label: u8,
    },
    Value {
        chunk: u16,
        value: Option<u8>,
    },
    Usage {
        input: u16,
        cached: u16,
    },
    SetPolicy {
        which: u8,
    },
}

#[derive(Arbitrary, Debug)]
struct Run {
    budget: u16,
    policy: u8,
    summarizer: bool,
    /// Off: the pool forgets what its policy gave up (and refuses export and set_policy).
    keep_history: bool,
    ops: Vec<Op>,
}

const WORDS: &[&str] = &[
    "flight",
    "booking",
    "ABC123",
    "refund",
    "remember",
    "always",
    "never",
    "42",
    "3.14",
    "/src/main.rs",
    "https://example.com/a",
    "用户",
    "需求是",
    "请记住",
    "目标是",
    "東京",
    "예약",
    "error:",
    "{\"id\": 7}",
    "cargo test",
    "the",
    "and",
    "of",
    "passenger",
    "Lisbon",
];

fn text(words: u8, seed: u8) -> String {
    (0..usize::from(words % 96) + 1)
        .map(|i| WORDS[(i * 7 + usize::from(seed) * 13) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

fn policy(which: u8) -> Option<PolicyConfig> {
    PolicyConfig::builtin(BUILTIN[usize::from(which) % BUILTIN.len()]).ok()
}

fuzz_target!(|run: Run| {
    let budget = u32::from(run.budget.max(1));
    let Some(first) = policy(run.policy) else {
        return;
    };
    // The oracle, and letta-summarize without a summarizer, are refused live: an error, fine.
    let Ok(mut pool) = Pool::new(PoolOptions {
        model: Some("gpt-4o".into()),
        budget,
        policy: first,
        summarizer: run.summarizer,
        dialect: None,
        keep_history: run.keep_history,
    }) else {
        return;
    };
    pool.add(
        json!({"role": "system", "content": "You are a careful agent. Remember the user's goal."}),
    )
    .expect("a system message is valid");
    let mut call = 0u32;
    // `set_policy` replays the whole run under the new policy: more than a few switches per
    // input re-test the same replay at a cost quadratic in the input (it was 57% of the time).
    let mut switches_left = 3u8;
    for op in run.ops.into_iter().take(64) {
        match op {
            Op::User { words, seed } => {
                pool.add(json!({"role": "user", "content": text(words, seed)}))
                    .expect("valid");
            }
            Op::Assistant { words, seed } => {
                pool.add(json!({"role": "assistant", "content": text(words, seed)}))
                    .expect("valid");
            }
            Op::Tools {
                sizes,
                answered,
                tool,
            } => {
                let sizes: Vec<u8> = sizes.into_iter().take(4).collect();
                if sizes.is_empty() {
                    continue;
                }
                let name = ["lookup", "web_search", "read_file", "bash"][usize::from(tool % 4)];
                let ids: Vec<String> = sizes
                    .iter()
                    .map(|_| {
                        call += 1;
                        format!("call_{call}")
                    })
                    .collect();
                let calls: Vec<Value> = ids
                    .iter()
                    .map(|id| {
                        json!({"id": id, "type": "function",
                        "function": {"name": name, "arguments": format!("{{\"q\": \"{id}\"}}")}})
                    })
                    .collect();
                pool.add(json!({"role": "assistant", "content": null, "tool_calls": calls}))
                    .expect("valid");
                for (k, (id, size)) in ids.iter().zip(&sizes).enumerate() {
                    if answered & (1 << k) != 0 {
                        let content = text(*size, k as u8);
                        pool.add(json!({"role": "tool", "tool_call_id": id, "content": content}))
                            .expect("valid");
                    }
                }
            }
            Op::Context { query } => {
                let query = query.map(|q| text(q % 8, q));
                let ctx = pool.context(query.as_deref());
                assert!(
                    ctx.tokens <= u64::from(budget) || ctx.over_budget,
                    "{} tokens over a budget of {budget}, not announced",
                    ctx.tokens
                );
                if pool.engine().guarantees_invariants() {
                    let broken = pool.violations();
                    assert!(
                        broken.is_empty(),
                        "{}: {broken:?}",
                        pool.engine().config().name
                    );
                }
            }
            Op::Label { chunk, label } => {
                let label =
                    [None, Some(Label::Important), Some(Label::Useless)][usize::from(label % 3)];
                let _ = pool.label(u32::from(chunk), label);
            }
            Op::Value { chunk, value } => {
                let _ = pool.set_value(u32::from(chunk), value.map(|v| f32::from(v) / 200.0));
            }
            Op::Usage { input, cached } => pool.record_usage(Usage {
                input_tokens: Some(u64::from(input)),
                cache_read_tokens: Some(u64::from(cached)),
                ..Usage::default()
            }),
            Op::SetPolicy { which } => {
                if switches_left == 0 {
                    continue;
                }
                switches_left -= 1;
                if let Some(p) = policy(which) {
                    let _ = pool.set_policy(p);
                }
            }
        }
    }
    let _ = pool.export();
});
