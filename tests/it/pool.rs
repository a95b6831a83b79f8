//! The npm package's live pool (crates/memlens-pool, natively): fed the real tau-bench messages
//! turn by turn it decides exactly like `memlens simulate`; the messages it renders are valid for
//! the provider on random streams; bad input is an error, never a panic.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use memlens_core::cost::PriceTable;
use memlens_core::policy::PolicyConfig;
use memlens_core::references::detect;
use memlens_core::simulate::simulate_trace;
use memlens_pool::{Pool, PoolContext, PoolError, PoolOptions, Rendered};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::HashSet;

mod time;

fn pool(policy: &str, budget: u32, summarizer: bool) -> Pool {
    Pool::new(PoolOptions {
        model: Some("gpt-4o".into()),
        budget,
        policy: PolicyConfig::builtin(policy).expect("built-in policy"),
        summarizer,
        dialect: None,
        keep_history: true,
    })
    .expect("valid pool options")
}

/// The messages a rendered context stands for, as the provider would receive them.
fn materialize(added: &[Value], items: &[Rendered]) -> Vec<Value> {
    items
        .iter()
        .map(|it| match it {
            Rendered::Original { message } => added[*message as usize].clone(),
            Rendered::Patched { value, .. } => Value::clone(value),
            Rendered::Summary { .. } => json!({"role": "system", "content": "summary"}),
        })
        .collect()
}

/// OpenAI's validity rules on a message list: every tool result answers a tool call of the
/// closest assistant message before it, and every tool call is answered.
fn check_openai(messages: &[Value]) -> Result<(), String> {
    let mut open: HashSet<String> = HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        match m["role"].as_str() {
            Some("tool") => {
                let id = m["tool_call_id"].as_str().unwrap_or_default();
                if !open.remove(id) {
                    return Err(format!(
                        "message {i}: tool result {id:?} answers no open call"
                    ));
                }
            }
            _ => {
                if !open.is_empty() {
                    return Err(format!("message {i}: calls {open:?} left unanswered"));
                }
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    open.insert(c["id"].as_str().unwrap_or_default().to_string());
                }
            }
        }
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(format!("calls {open:?} left unanswered at the end"))
    }
}

#[test]
fn fed_turn_by_turn_the_pool_decides_like_the_simulator_on_tau_bench() {
    let path = crate::root().join("../shared/data/traces/tau-bench-gpt-4o-airline.json");
    let bytes = std::fs::read(&path).expect("the shared tau-bench file");
    let raw: Vec<Value> = serde_json::from_slice(&bytes).expect("tau-bench JSON");
    let mut traces = crate::import_path(&path).expect("import").traces;
    for t in &mut traces {
        t.model = Some("gpt-4o".into());
    }
    let prices = PriceTable::builtin();
    let mut compared = 0;
    for (policy, summarizer) in [
        ("value", false),
        ("window", false),
        ("recall", false),
        ("value-compress", false),
        ("langchain-trim", false),
        ("anthropic-clear-tool-uses", false),
        ("letta-summarize", true),
    ] {
        let config = PolicyConfig::builtin(policy).expect("built-in");
        for (record, trace) in raw.iter().zip(&traces).take(60) {
            let graph = detect(trace);
            let sim = simulate_trace(trace, &graph, &config, 4000, &prices).expect("simulate");
            let mut p = pool(policy, 4000, summarizer);
            let messages = record["traj"].as_array().expect("traj");
            let mut calls = sim.calls.iter();
            for m in messages {
                if m["role"] == "assistant" {
                    let ctx = p.context(None);
                    let want = calls
                        .next()
                        .expect("one simulated call per assistant message");
                    assert_eq!(
                        (
                            ctx.tokens,
                            ctx.evicted.len() as u32,
                            ctx.compressed.len() as u32,
                            ctx.over_budget
                        ),
                        (
                            want.input_tokens,
                            want.evictions,
                            want.compressions,
                            want.over_budget
                        ),
                        "{policy} on {}: call {}",
                        trace.id,
                        want.index
                    );
                    compared += 1;
                }
                p.add(m.clone()).expect("tau-bench messages are valid");
            }
            assert!(calls.next().is_none(), "{}: every call replayed", trace.id);
        }
    }
    assert!(compared > 5000, "compared {compared} calls");
}

#[derive(Debug, Clone)]
enum Step {
    User(usize),
    Assistant(usize),
    Tools(Vec<usize>),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1usize..80).prop_map(Step::User),
        (1usize..80).prop_map(Step::Assistant),
        prop::collection::vec(1usize..300, 1..4).prop_map(Step::Tools),
    ]
}

fn words(n: usize, seed: usize) -> String {
    (0..n)
        .map(|i| format!("w{}", (i * 7 + seed * 13) % 97))
        .collect::<Vec<_>>()
        .join(" ")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn rendered_contexts_are_valid_openai_message_lists(
        steps in prop::collection::vec(step(), 1..30),
        budget in 40u32..3000,
        which in 0usize..5,
    ) {
        let policy = ["value", "window", "value-compress", "recall", "value-offload"][which];
        let mut p = pool(policy, budget, false);
        let mut added = vec![json!({"role": "system", "content": "You are a careful agent."})];
        p.add(added[0].clone()).unwrap();
        let mut newest_user = None;
        let mut call_id = 0;
        for (k, s) in steps.iter().enumerate() {
            let mut batch = Vec::new();
            match s {
                Step::User(n) => batch.push(json!({"role": "user", "content": words(*n, k)})),
                Step::Assistant(n) => batch.push(json!({"role": "assistant", "content": words(*n, k)})),
                Step::Tools(sizes) => {
                    let ids: Vec<String> = sizes.iter().map(|_| { call_id += 1; format!("call_{call_id}") }).collect();
                    batch.push(json!({"role": "assistant", "content": null, "tool_calls": ids.iter().map(|id| json!(
                        {"id": id, "type": "function", "function": {"name": "lookup", "arguments": format!("{{\"q\": \"{id}\"}}")}})).collect::<Vec<_>>()}));
                    for (id, n) in ids.iter().zip(sizes) {
                        batch.push(json!({"role": "tool", "tool_call_id": id, "content": words(*n, k)}));
                    }
                }
            }
            for m in batch {
                if m["role"] == "user" { newest_user = Some(added.len()); }
                p.add(m.clone()).unwrap();
                added.push(m);
            }
            let ctx = p.context(None);
            let sent = materialize(&added, &ctx.items);
            prop_assert_eq!(check_openai(&sent), Ok(()));
            prop_assert!(matches!(ctx.items.first(), Some(Rendered::Original { message: 0 })), "system prompt first");
            if let Some(u) = newest_user {
                prop_assert!(ctx.items.iter().any(|it| matches!(it, Rendered::Original { message } if *message as usize == u)), "newest user turn kept");
            }
            prop_assert!(ctx.tokens <= u64::from(budget) || ctx.over_budget);
        }
    }
}

#[test]
fn bad_input_is_an_error_with_a_clear_message() {
    let opts = |model: &str, policy: &str, summarizer: bool| PoolOptions {
        model: Some(model.into()),
        budget: 1000,
        policy: PolicyConfig::builtin(policy).expect("built-in"),
        summarizer,
        dialect: None,
        keep_history: true,
    };
    let err = Pool::new(opts("my-own-llm", "value", false))
        .err()
        .expect("unknown model");
    assert!(matches!(err, PoolError::UnknownModel(_)), "{err}");
    assert!(err.to_string().contains("my-own-llm"));
    // Claude is priced: counted (estimated) with o200k.
    assert!(Pool::new(opts("claude-sonnet-4-5", "value", false)).is_ok());
    let err = Pool::new(opts("gpt-4o", "letta-summarize", false))
        .err()
        .expect("needs summarizer");
    assert!(err.to_string().contains("summarizer"), "{err}");
    // The oracle reads the future of a recorded trace: a live pool has none.
    let err = Pool::new(opts("gpt-4o", "oracle", true))
        .err()
        .expect("the oracle is refused live");
    assert!(err.to_string().contains("only for replays"), "{err}");

    let mut p = pool("value", 1000, false);
    for bad in [
        json!(3),
        json!({"content": "x"}),
        json!({"role": 7}),
        json!([]),
    ] {
        let e = p.add(bad.clone()).expect_err("invalid message");
        assert!(e.to_string().starts_with("invalid message"), "{bad}: {e}");
    }
    assert!(p.explain(99).is_err());
    assert!(p.label(99, None).is_err());
}

#[test]
fn export_is_native_format_the_importers_read_back() {
    let mut p = pool("window", 60, false);
    p.add(json!({"role": "system", "content": "Be brief."}))
        .unwrap();
    for i in 0..6 {
        p.add(
            json!({"role": "user", "content": format!("question {i} about the weather in Lisbon")}),
        )
        .unwrap();
        p.context(None);
        p.record_usage(memlens_core::Usage {
            input_tokens: Some(50),
            ..Default::default()
        });
        p.add(json!({"role": "assistant", "content": format!("answer {i}: sunny")}))
            .unwrap();
    }
    let text = p.export().expect("the pool keeps its history");
    let back = memlens_import::import("pool.jsonl", text.as_bytes(), &Default::default())
        .expect("reads back");
    assert_eq!(back.format, "memlens");
    let t = &back.traces[0];
    assert_eq!(t.calls.len(), 6);
    // The 13 chunks the pool held, and the part of the reported 50 input tokens it never held
    // (the host's own system prompt, say): the unrecorded item, estimated on reading back.
    let unrecorded = |c: &&memlens_core::Chunk| c.category == memlens_core::Category::Unrecorded;
    assert_eq!(t.chunks.iter().filter(|c| !unrecorded(c)).count(), 13);
    assert_eq!(t.chunks.iter().filter(unrecorded).count(), 1);
    assert_eq!(
        t.calls[0].usage.as_ref().and_then(|u| u.input_tokens),
        Some(50)
    );
    // The window dropped early turns: the recorded inputs are what was sent, not everything.
    assert!(t.calls[5].input.len() < 12, "{:?}", t.calls[5].input);
    let stats = p.stats();
    assert_eq!(stats.calls, 6);
    assert!(stats.dropped > 0 && stats.sent_tokens < stats.full_tokens);
    assert_eq!(stats.reported_input_tokens, 300);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Whatever a JavaScript caller passes as messages (random JSON built from the words the
    /// parsers look for), the pool returns an error or a value: never a panic, which in wasm would
    /// be a trap.
    #[test]
    fn random_messages_never_panic_the_pool(
        messages in prop::collection::vec(crate::properties::json_value(), 1..12),
        budget in 1u32..500,
        which in 0usize..6,
    ) {
        let policy = ["value", "window", "value-compress", "value-offload", "anthropic-clear-tool-uses", "langchain-trim"][which];
        let mut p = pool(policy, budget, false);
        for m in messages {
            // Also as a role-bearing message, so the parsers go past the role check.
            let mut with_role = m.clone();
            if let Value::Object(o) = &mut with_role {
                o.entry("role").or_insert_with(|| json!("assistant"));
            }
            let _ = p.add(m);
            let _ = p.add(with_role);
            let ctx = p.context(None);
            prop_assert!(ctx.tokens <= u64::from(budget) || ctx.over_budget);
        }
        let _ = p.explain(0);
        let _ = p.export();
    }
}

#[test]
fn deferred_value_work_gives_the_same_explanations_as_eager() {
    // The window policy defers value-engine and detector work until something reads values; the
    // value pool here has it done after every message (`prepare`), as on arrival. With nothing
    // evicted, both see the same chunks in the same order, so every explanation must match.
    let path = crate::root().join("../shared/data/traces/tau-bench-gpt-4o-airline.json");
    let raw: Vec<Value> =
        serde_json::from_slice(&std::fs::read(&path).expect("tau-bench")).expect("JSON");
    for record in raw.iter().take(5) {
        let (mut lazy, mut eager) = (
            pool("window", 1_000_000, false),
            pool("value", 1_000_000, false),
        );
        let mut ids = Vec::new();
        for (k, m) in record["traj"].as_array().expect("traj").iter().enumerate() {
            if m["role"] == "assistant" {
                lazy.context(None);
                eager.context(None);
            }
            ids.extend(lazy.add(m.clone()).expect("valid"));
            eager.add(m.clone()).expect("valid");
            eager.prepare();
            if k == 3 {
                // A label in between: catching up must keep the order of work.
                lazy.label(ids[1], Some(memlens_core::value::Label::Important))
                    .expect("known");
                eager
                    .label(ids[1], Some(memlens_core::value::Label::Important))
                    .expect("known");
            }
        }
        for &id in &ids {
            let (a, b) = (
                lazy.explain(id).expect("known"),
                eager.explain(id).expect("known"),
            );
            assert_eq!(a.value, b.value, "chunk {id}");
        }
    }
}

#[test]
fn set_policy_switches_mid_run_as_if_the_new_policy_had_run_from_the_start() {
    let path = crate::root().join("../shared/data/traces/tau-bench-gpt-4o-airline.json");
    let raw: Vec<Value> =
        serde_json::from_slice(&std::fs::read(&path).expect("tau-bench")).expect("JSON");
    for record in raw.iter().take(20) {
        let messages = record["traj"].as_array().expect("traj");
        let half = messages.len() / 2;
        // `switched` runs window for the first half, then value; `value` runs value throughout.
        let mut switched = pool("window", 3000, false);
        let mut value = pool("value", 3000, false);
        for (k, m) in messages.iter().enumerate() {
            if k == half {
                switched
                    .set_policy(PolicyConfig::builtin("value").unwrap())
                    .unwrap();
                assert_eq!(switched.stats().policy, "value");
            }
            if m["role"] == "assistant" {
                let (a, b) = (switched.context(None), value.context(None));
                if k >= half {
                    assert_eq!((a.tokens, &a.items), (b.tokens, &b.items), "message {k}");
                }
            }
            // Labels survive the switch: one label in the first half.
            let ids_a = switched.add(m.clone()).unwrap();
            let ids_b = value.add(m.clone()).unwrap();
            if k == 1 {
                let label = Some(memlens_core::value::Label::Important);
                switched.label(ids_a[0], label).unwrap();
                value.label(ids_b[0], label).unwrap();
            }
        }
    }
    // The oracle cannot be switched to live.
    let mut p = pool("window", 3000, false);
    assert!(matches!(
        p.set_policy(PolicyConfig::builtin("oracle").unwrap()),
        Err(PoolError::NeedsHindsight(_))
    ));
}

#[test]
fn the_pools_cost_estimate_is_prompt_cache_aware_like_the_simulator() {
    let path = crate::root().join("../shared/data/traces/tau-bench-gpt-4o-airline.json");
    let raw: Vec<Value> =
        serde_json::from_slice(&std::fs::read(&path).expect("tau-bench")).expect("JSON");
    let mut traces = crate::import_path(&path).expect("import").traces;
    let prices = PriceTable::builtin();
    let (_, price) = prices.lookup("gpt-4o").expect("gpt-4o is priced");
    let out_rate = price.output.expect("output price") / 1e6;
    let mut cached_calls = 0;
    for (record, trace) in raw.iter().zip(&mut traces).take(10) {
        trace.model = Some("gpt-4o".into());
        let sim = simulate_trace(
            trace,
            &detect(trace),
            &PolicyConfig::builtin("window").unwrap(),
            4000,
            &prices,
        )
        .expect("simulate");
        let mut p = pool("window", 4000, false);
        for m in record["traj"].as_array().expect("traj") {
            if m["role"] == "assistant" {
                p.context(None);
            }
            p.add(m.clone()).unwrap();
        }
        // The simulator's cost of each call is its input (cache-aware) plus its output.
        let output: f64 = trace
            .calls
            .iter()
            .map(|c| {
                c.output
                    .iter()
                    .map(|&id| f64::from(trace.chunk(id).tokens))
                    .sum::<f64>()
            })
            .sum::<f64>()
            * out_rate;
        let want = sim.totals.cost_usd.expect("priced") - output;
        let got = p.stats().est_input_cost_usd.expect("priced");
        assert!(
            (got - want).abs() < 1e-9,
            "{}: pool {got} vs simulator {want}",
            trace.id
        );
        cached_calls += sim.calls.iter().filter(|c| c.cached_tokens > 0).count();
    }
    assert!(
        cached_calls > 0,
        "some calls hit the cache, so the check means something"
    );
}

#[test]
fn appended_trace_lines_make_a_file_readable_at_every_step_and_whole_at_the_end() {
    // Ten tau-bench trajectories fed to a pool turn by turn; after every turn the new lines are
    // appended, as an agent writing its trace file would.
    let path = crate::root().join("../shared/data/traces/tau-bench-gpt-4o-airline.json");
    let raw: Vec<Value> =
        serde_json::from_slice(&std::fs::read(&path).expect("tau-bench")).expect("JSON");
    let import = |text: &str| {
        memlens_import::import(
            "run.jsonl",
            text.as_bytes(),
            &memlens_import::ImportOptions::default(),
        )
    };
    for record in raw.iter().take(10) {
        let mut p = pool("window", 2000, false);
        let mut file = String::new();
        let mut calls_seen = 0;
        for m in record["traj"].as_array().expect("traj") {
            if m["role"] == "assistant" {
                let _ = p.context(None);
            }
            p.add(m.clone()).expect("a tau-bench message");
            file.push_str(&p.trace_lines(false).expect("kept"));
            if m["role"] == "assistant" {
                // Usage arrives after the reply, into the call already recorded: held back
                // until the next call, it still reaches the file.
                p.record_usage(memlens_core::Usage {
                    input_tokens: Some(1000 + calls_seen as u64),
                    output_tokens: Some(42),
                    ..Default::default()
                });
            }
            // Every step's file is a valid native file whose calls only ever grow.
            let partial = import(&file).expect("each prefix imports");
            let calls = partial.traces[0].calls.len();
            assert!(calls >= calls_seen);
            calls_seen = calls;
        }
        file.push_str(&p.trace_lines(true).expect("kept"));
        assert_eq!(
            p.trace_lines(true).expect("kept"),
            "",
            "nothing is written twice"
        );
        let appended = import(&file).expect("the appended file imports");
        let exported = import(&p.export().expect("kept")).expect("the export imports");
        assert_eq!(appended.traces, exported.traces);
        assert!(!appended.traces[0].calls.is_empty());
        assert!(appended.traces[0].calls.iter().all(|c| c.usage.is_some()));
    }
}

/// The pool's trace file is append-only JSON Lines; an agent killed mid-write leaves a truncated
/// last line. Reading it keeps every complete record and says what was skipped (issue 15).
#[test]
fn a_trace_file_cut_mid_line_reads_with_a_warning() {
    let mut p = pool("window", 200, false);
    p.add(json!({"role": "system", "content": "Be brief."}))
        .unwrap();
    let mut file = p.trace_lines(false).expect("kept");
    for i in 0..4 {
        p.add(json!({"role": "user", "content": format!("question {i} about Lisbon")}))
            .unwrap();
        p.context(None);
        p.add(json!({"role": "assistant", "content": format!("answer {i}")}))
            .unwrap();
        file.push_str(&p.trace_lines(false).expect("kept"));
    }
    let whole = memlens_import::import("pool.jsonl", file.as_bytes(), &Default::default())
        .expect("the whole file reads");
    assert!(whole.warnings.is_empty(), "{:?}", whole.warnings);
    // Cut in the middle of the last line.
    let last_start = file.trim_end().rfind('\n').expect("several lines") + 1;
    let cut = &file[..last_start + (file.len() - last_start) / 2];
    let read = memlens_import::import("pool.jsonl", cut.as_bytes(), &Default::default())
        .expect("a cut file still reads");
    assert_eq!(read.warnings.len(), 1, "{:?}", read.warnings);
    let w = read.warnings[0].to_string();
    assert!(w.contains("pool.jsonl") && w.contains("skipped"), "{w}");
    let chunks =
        |i: &memlens_import::Import| i.traces.iter().map(|t| t.chunks.len()).sum::<usize>();
    let calls = |i: &memlens_import::Import| i.traces.iter().map(|t| t.calls.len()).sum::<usize>();
    // One record lost at most: the rest of the run is there.
    assert!(chunks(&read) + calls(&read) + 1 >= chunks(&whole) + calls(&whole));
}

fn pool_keeping(policy: &str, budget: u32, keep_history: bool) -> Pool {
    Pool::new(PoolOptions {
        model: Some("gpt-4o".into()),
        budget,
        policy: PolicyConfig::builtin(policy).expect("built-in policy"),
        summarizer: false,
        dialect: None,
        keep_history,
    })
    .expect("valid pool options")
}

/// One long run: the first tau-bench system prompt, then the other messages of the first `n`
/// trajectories in order (thousands of messages, so that most of them are given up).
fn long_run(n: usize) -> Vec<Value> {
    let path = crate::root().join("../shared/data/traces/tau-bench-gpt-4o-airline.json");
    let raw: Vec<Value> =
        serde_json::from_slice(&std::fs::read(&path).expect("tau-bench")).expect("JSON");
    let mut run = Vec::new();
    for record in raw.iter().take(n) {
        for m in record["traj"].as_array().expect("traj") {
            if m["role"] != "system" || run.is_empty() {
                run.push(m.clone());
            }
        }
    }
    run
}

/// The value policy's queued value work (`Pool::prepare`, done by the npm package while the
/// agent waits for the model) may be done after every message (as on arrival), after every
/// context, or only when a context ranks by value: every context is the same, whether the pool
/// keeps its history or gives up what it dropped.
#[test]
fn value_work_done_early_or_late_decides_the_same() {
    let run = long_run(12);
    for keep_history in [true, false] {
        // 0: never prepared; 1: prepared after every context; 2: after every message.
        let mut pools: Vec<Pool> = (0..3)
            .map(|_| pool_keeping("value", 2_000, keep_history))
            .collect();
        let mut evicted = 0;
        for (k, m) in run.iter().enumerate() {
            if m["role"] == "assistant" {
                let contexts: Vec<PoolContext> =
                    pools.iter_mut().map(|p| p.context(None)).collect();
                pools[1].prepare();
                evicted += contexts[0].evicted.len();
                for c in &contexts[1..] {
                    assert_eq!(
                        (&c.items, &c.evicted, c.tokens),
                        (&contexts[0].items, &contexts[0].evicted, contexts[0].tokens),
                        "message {k}, history kept: {keep_history}"
                    );
                }
            }
            for p in &mut pools {
                p.add(m.clone()).expect("a tau-bench message");
            }
            pools[2].prepare();
        }
        assert!(
            evicted > 100,
            "the budget must make the policy rank: {evicted} evicted"
        );
    }
}

/// Issue 15: a pool that does not keep its history forgets what its policy gave up, so its
/// memory follows the context, not the run. `window` reads no values, so it must decide exactly
/// as a pool that keeps everything, and write the same trace file byte for byte.
#[test]
fn a_window_pool_without_history_decides_and_writes_as_one_that_keeps_it() {
    let run = long_run(40);
    assert!(run.len() > 1000, "{} messages", run.len());
    let mut kept = pool_keeping("window", 2000, true);
    let mut released = pool_keeping("window", 2000, false);
    let (mut kept_file, mut released_file) = (String::new(), String::new());
    let mut most_held = 0;
    let mut added: Vec<Option<Value>> = Vec::new();
    for (i, m) in run.iter().enumerate() {
        if m["role"] == "assistant" {
            let a = kept.context(None);
            let b = released.context(None);
            let all: Vec<Value> = added
                .iter()
                .map(|m| m.clone().unwrap_or(Value::Null))
                .collect();
            assert_eq!(
                materialize(&all, &a.items),
                materialize(&all, &b.items),
                "message {i}"
            );
            assert_eq!((a.tokens, a.full_tokens), (b.tokens, b.full_tokens));
            assert_eq!(a.evicted, b.evicted);
            // What the pool released never comes back: the host may let it go too.
            for &m in &b.released_messages {
                added[m as usize] = None;
            }
            assert!(b.items.iter().all(|it| match it {
                Rendered::Original { message } | Rendered::Patched { message, .. } =>
                    added[*message as usize].is_some(),
                Rendered::Summary { .. } => true,
            }));
            assert!(released.violations().is_empty());
        }
        kept.add(m.clone()).expect("a tau-bench message");
        released.add(m.clone()).expect("a tau-bench message");
        added.push(Some(m.clone()));
        kept_file.push_str(&kept.trace_lines(false).expect("kept"));
        released_file.push_str(&released.trace_lines(false).expect("written as it goes"));
        if m["role"] == "assistant" {
            let usage = memlens_core::Usage {
                input_tokens: Some(1000 + i as u64),
                ..Default::default()
            };
            kept.record_usage(usage);
            released.record_usage(usage);
        }
        let held = released.held();
        most_held = most_held.max(held.messages);
        // Written records go at once: only the newest call and an open tool pair wait.
        assert!(held.trace_chunks <= 8 && held.trace_calls <= 1, "{held:?}");
    }
    kept_file.push_str(&kept.trace_lines(true).expect("kept"));
    released_file.push_str(&released.trace_lines(true).expect("written as it goes"));
    assert_eq!(kept_file, released_file, "the same trace file");
    assert_eq!(kept.stats().dropped, released.stats().dropped);
    let (k, r) = (kept.held(), released.held());
    assert_eq!(k.messages, run.len());
    // A 2,000-token window holds a few dozen messages of the thousands added.
    assert!(most_held < 100 && r.messages < 100, "{most_held} / {r:?}");
    assert!(r.engine_chunks < 100, "{r:?}");
}

/// The value policy reads values, which a forgetting engine measures over what it still holds:
/// its decisions may differ from a remembering pool's, but every invariant holds, and what it
/// holds (messages, engine items, value-engine entries) stays near its context over a long run.
#[test]
fn a_value_pool_without_history_keeps_the_invariants_and_holds_what_its_context_needs() {
    let run = long_run(60);
    // `recall` offloads what it gives up to its archive, which it may bring back: the pool holds
    // the archive (memory follows the context plus the archive), so only its invariants are
    // checked here.
    for (policy, budget, archives) in [
        ("value", 4000, false),
        ("value-compress", 2000, false),
        ("recall", 4000, true),
    ] {
        let mut p = pool_keeping(policy, budget, false);
        let mut most = memlens_pool::Held::default();
        for m in &run {
            if m["role"] == "assistant" {
                let ctx = p.context(None);
                assert!(ctx.tokens <= u64::from(budget) || ctx.over_budget);
                let broken = p.violations();
                assert!(broken.is_empty(), "{policy}: {broken:?}");
            }
            p.add(m.clone()).expect("a tau-bench message");
            let h = p.held();
            // The value engine is rebuilt from the held chunks once 1,024 (or twice the held
            // chunks) were forgotten since the last rebuild.
            assert!(
                h.value_entries <= h.engine_chunks + 1024.max(2 * h.engine_chunks) + 16,
                "{policy}: {h:?}"
            );
            most.messages = most.messages.max(h.messages);
            most.engine_chunks = most.engine_chunks.max(h.engine_chunks);
            most.value_entries = most.value_entries.max(h.value_entries);
        }
        assert!(
            run.len() > 1500 && (archives || most.messages < run.len() / 4),
            "{policy}: {} messages, {most:?}",
            run.len()
        );
        // Without trace lines asked for, the trace is given up as it goes: no export later.
        assert!(matches!(
            p.trace_lines(true),
            Err(PoolError::HistoryNotKept(..))
        ));
        assert!(matches!(p.export(), Err(PoolError::HistoryNotKept(..))));
    }
}

#[test]
fn a_pool_without_history_refuses_what_needs_it_with_a_clear_error() {
    let mut p = pool_keeping("window", 60, false);
    p.add(json!({"role": "system", "content": "Be brief."}))
        .unwrap();
    let mut first = Vec::new();
    for k in 0..20 {
        let ids = p
            .add(json!({"role": "user", "content": format!("question {k}: what is the weather in Lisbon today?")}))
            .unwrap();
        first.extend(ids);
        let _ = p.context(None);
        p.add(json!({"role": "assistant", "content": "Sunny."}))
            .unwrap();
    }
    let e = p.export().unwrap_err().to_string();
    assert!(e.contains("export") && e.contains("keepHistory"), "{e}");
    let e = p
        .set_policy(PolicyConfig::builtin("value").unwrap())
        .unwrap_err();
    assert!(e.to_string().contains("set_policy"), "{e}");
    let e = p.explain(first[0].max(1)).unwrap_err();
    assert!(matches!(e, PoolError::Released(_)), "{e}");
    assert!(e.to_string().contains("released"), "{e}");
    let e = p.trace_lines(false).unwrap_err().to_string();
    assert!(e.contains("trace_lines"), "{e}");
    let e = Pool::new(PoolOptions {
        model: None,
        budget: 1000,
        policy: PolicyConfig::builtin("window").unwrap(),
        summarizer: true,
        dialect: None,
        keep_history: false,
    })
    .err()
    .expect("refused")
    .to_string();
    assert!(e.contains("summarize"), "{e}");
}
