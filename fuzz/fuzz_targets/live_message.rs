//! The pool's live message parsing: whatever a JavaScript or Python caller passes as a message
//! (any JSON), `live::parse_message` and `Pool::add` give a value or an error, never a panic, and
//! the pool still decides a context within its budget (or says it is over).
#![no_main]

use libfuzzer_sys::fuzz_target;
use memlens_core::policy::PolicyConfig;
use memlens_import::live::{self, Dialect};
use memlens_pool::{Pool, PoolOptions};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(value) = serde_json::from_slice::<Value>(rest) else {
        return;
    };
    let dialect = [None, Some(Dialect::OpenAi), Some(Dialect::Anthropic)][usize::from(pick % 3)];
    let _ = live::parse_message(&value, dialect);
    let policy = ["value", "window", "value-compress"][usize::from(pick / 3 % 3)];
    let budget = 16 + u32::from(pick) * 4;
    let Ok(mut pool) = Pool::new(PoolOptions {
        model: Some("gpt-4o".into()),
        budget,
        policy: PolicyConfig::builtin(policy).expect("a built-in policy"),
        summarizer: false,
        dialect,
        keep_history: true,
    }) else {
        return;
    };
    // The message as given, then (when it is an array) each element as a message of its own.
    let _ = pool.add(value.clone());
    if let Value::Array(items) = value {
        for item in items {
            let _ = pool.add(item);
        }
    }
    let ctx = pool.context(None);
    assert!(
        ctx.tokens <= u64::from(budget) || ctx.over_budget,
        "over budget unannounced"
    );
    assert!(pool.violations().is_empty(), "{:?}", pool.violations());
    let _ = pool.export();
    let _ = pool.trace_lines(true);
});
