//! Time in the live pool (issue "Numbers users can trust"): a message carries the time it was
//! added and a tool result the time its tool took, as the importers record them in traces, so
//! `max_age_seconds`, a value half-life in seconds and the generation-cost factor act live as
//! they do in a replay; a message marked as a preference is protected.

use memlens_core::cost::PriceTable;
use memlens_core::policy::PolicyConfig;
use memlens_core::references::detect;
use memlens_core::simulate::simulate_trace;
use memlens_core::time::timestamp_secs;
use memlens_core::value::score_trace;
use memlens_core::Category;
use memlens_pool::{
    parse_timestamp, policy_from_value, AddOptions, Pool, PoolError, PoolOptions, Rendered,
};
use serde_json::{json, Value};

/// 2025-06-02T16:46:59Z.
const T0: f64 = 1_748_882_819.0;
const DAY: f64 = 86_400.0;

fn at(secs: f64) -> AddOptions {
    AddOptions {
        timestamp: Some(secs),
        ..AddOptions::default()
    }
}

fn new_pool(policy: PolicyConfig, budget: u32) -> Pool {
    Pool::new(PoolOptions {
        model: Some("gpt-4o".into()),
        budget,
        policy,
        summarizer: false,
        dialect: None,
        keep_history: true,
    })
    .expect("valid pool options")
}

fn originals(items: &[Rendered]) -> Vec<u32> {
    items
        .iter()
        .map(|r| match r {
            Rendered::Original { message } => *message,
            other => panic!("expected messages sent whole, got {other:?}"),
        })
        .collect()
}

#[test]
fn max_age_seconds_evicts_by_the_time_messages_were_added() {
    let aged =
        policy_from_value(&json!({"name": "aged", "strategy": "value", "max_age_seconds": 3600}))
            .unwrap();
    let run = [
        (
            0.0,
            json!({"role": "system", "content": "You are a travel agent."}),
        ),
        (
            0.0,
            json!({"role": "user", "content": "I want to fly to Lisbon next week."}),
        ),
        (
            5.0,
            json!({"role": "assistant", "content": "Lisbon next week: noted."}),
        ),
        (
            2.0 * DAY - 1800.0,
            json!({"role": "user", "content": "Any hotel near the river?"}),
        ),
        (
            2.0 * DAY - 1795.0,
            json!({"role": "assistant", "content": "Three: shall I list them?"}),
        ),
        (
            2.0 * DAY,
            json!({"role": "user", "content": "Yes, the cheapest first."}),
        ),
    ];
    let (mut timed, mut untimed) = (new_pool(aged.clone(), 100_000), new_pool(aged, 100_000));
    let mut ids = Vec::new();
    for (t, m) in &run {
        ids.push(timed.add_with(m.clone(), at(T0 + t)).unwrap());
        untimed.add(m.clone()).unwrap();
    }
    let ctx = timed.context(None);
    // Two days old: out, under a budget that fits everything; half an hour old: kept.
    assert_eq!(originals(&ctx.items), [0, 3, 4, 5]);
    let mut evicted = ctx.evicted.clone();
    evicted.sort_unstable();
    assert_eq!(evicted, [ids[1][0], ids[2][0]]);
    let e = timed.explain(ids[1][0]).unwrap();
    assert_eq!(e.status, "dropped");
    // Messages added without a time never age out (what every pool did before).
    assert_eq!(originals(&untimed.context(None).items), [0, 1, 2, 3, 4, 5]);
}

/// Text of exactly `n` tokens for gpt-4o: `head`, then `words` over and over.
fn note(head: &str, words: &[&str], n: u32) -> String {
    let counter = memlens_pool::counter_for(Some("gpt-4o")).unwrap();
    let mut text = head.to_string();
    for w in words.iter().cycle() {
        if counter.count(&text) >= n {
            break;
        }
        text.push(' ');
        text.push_str(w);
    }
    assert_eq!(counter.count(&text), n, "{text}");
    text
}

#[test]
fn a_preference_is_kept_where_an_unmarked_message_of_the_same_size_and_age_is_dropped() {
    let first = note(
        "I prefer",
        &["aisle", "seats", "and", "quiet", "hotels", "near", "parks"],
        60,
    );
    let second = note(
        "My trip",
        &[
            "starts", "in", "Porto", "then", "goes", "south", "by", "train",
        ],
        60,
    );
    let run = [
        (T0, json!({"role": "system", "content": "Be brief."})),
        (T0 + 10.0, json!({"role": "user", "content": first})),
        (T0 + 10.0, json!({"role": "user", "content": second})),
        (T0 + 15.0, json!({"role": "assistant", "content": "Noted."})),
        (T0 + 20.0, json!({"role": "user", "content": "Book it."})),
    ];
    // `mark`: the message marked as a preference. Chunk ids are message indices here.
    let decide = |budget: u32, mark: Option<u32>| {
        let mut p = new_pool(PolicyConfig::builtin("value").unwrap(), budget);
        for (k, (t, m)) in run.iter().enumerate() {
            let preference = mark == Some(k as u32);
            p.add_with(
                m.clone(),
                AddOptions {
                    preference,
                    ..at(*t)
                },
            )
            .unwrap();
        }
        let ctx = p.context(None);
        let categories = [1, 2].map(|c| p.explain(c).unwrap().category);
        (originals(&ctx.items), categories, ctx.full_tokens as u32)
    };
    let (all, categories, full) = decide(100_000, None);
    assert_eq!((all.len(), categories), (5, [Category::User; 2]));
    // Room for one of the two notes only (the newest two messages are protected): the value
    // policy gives one up; marked as a preference, that one stays and the other goes.
    let budget = full - 40;
    let (unmarked, ..) = decide(budget, None);
    let (dropped, other) = if unmarked.contains(&1) {
        (2, 1)
    } else {
        (1, 2)
    };
    assert_eq!(unmarked, [0, other, 3, 4]);
    let (marked, categories, _) = decide(budget, Some(dropped));
    assert_eq!(marked, [0, dropped, 3, 4]);
    assert_eq!(categories[dropped as usize - 1], Category::Preference);
}

#[test]
fn a_preference_on_a_system_prompt_a_bad_time_or_latency_is_an_error_and_changes_nothing() {
    let mut p = new_pool(PolicyConfig::builtin("value").unwrap(), 1000);
    let system = json!({"role": "system", "content": "Be brief."});
    let marked = AddOptions {
        preference: true,
        ..AddOptions::default()
    };
    let e = p.add_with(system.clone(), marked).unwrap_err();
    assert!(e.to_string().contains("system prompt"), "{e}");
    for bad in [f64::NAN, f64::INFINITY, 1e12, -1e12] {
        let e = p.add_with(system.clone(), at(bad)).unwrap_err();
        assert!(matches!(e, PoolError::Timestamp(_)), "{bad}: {e}");
    }
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        let given = AddOptions {
            latency_ms: Some(bad),
            ..AddOptions::default()
        };
        let e = p.add_with(system.clone(), given).unwrap_err().to_string();
        assert!(e.contains("latency"), "{bad}: {e}");
    }
    assert_eq!((p.stats().messages, p.stats().chunks), (0, 0));
    assert!(parse_timestamp("last Tuesday").is_err());
    assert_eq!(parse_timestamp("2025-06-02T18:46:59+02:00").unwrap(), T0);
    // Harmless mistakes are warnings: a latency on a message without a tool result.
    p.add_with(
        json!({"role": "user", "content": "Hi"}),
        AddOptions {
            latency_ms: Some(5.0),
            ..AddOptions::default()
        },
    )
    .unwrap();
    let w = p.stats().warnings;
    assert!(w.iter().any(|w| w.contains("no tool result")), "{w:?}");
}

fn tool_call(id: &str) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
        "function": {"name": "get_order", "arguments": "{\"order\": \"W1001\"}"}}]})
}

fn tool_result(id: &str) -> Value {
    let rows: Vec<String> = (0..30).map(|i| format!("item {i}: shipped")).collect();
    json!({"role": "tool", "tool_call_id": id, "content": rows.join("; ")})
}

/// A tool result's latency, measured from its call's time or given, is what the generation-cost
/// factor reads: the same factor the value engine gives the trace the pool exports (as it does
/// any importer's latencies); without one, the category's prior.
#[test]
fn a_tool_results_latency_given_or_measured_sets_its_generation_cost() {
    let config = PolicyConfig::builtin("value").unwrap();
    let mut p = new_pool(config.clone(), 100_000);
    p.add_with(
        json!({"role": "user", "content": "Where is W1001?"}),
        at(T0),
    )
    .unwrap();
    // Measured: 20 s between the call and its result.
    p.add_with(tool_call("slow"), at(T0 + 1.0)).unwrap();
    let slow = p.add_with(tool_result("slow"), at(T0 + 21.0)).unwrap()[0];
    // Given: 50 ms, whatever the times say.
    p.add_with(tool_call("fast"), at(T0 + 22.0)).unwrap();
    let given = AddOptions {
        latency_ms: Some(50.0),
        ..at(T0 + 40.0)
    };
    let fast = p.add_with(tool_result("fast"), given).unwrap()[0];
    // No time at all: unknown.
    p.add(tool_call("unknown")).unwrap();
    let unknown = p.add(tool_result("unknown")).unwrap()[0];
    p.context(None);
    let cost = |p: &mut Pool, c: u32| p.explain(c).unwrap().value.factors.generation_cost;
    let (slow_cost, fast_cost, prior) = (
        cost(&mut p, slow),
        cost(&mut p, fast),
        cost(&mut p, unknown),
    );
    assert!(
        slow_cost > prior && prior > fast_cost,
        "{slow_cost} {prior} {fast_cost}"
    );
    let why = p.explain(slow).unwrap().value.explanation.join("; ");
    assert!(why.contains("took 20 s"), "{why}");

    let text = p.export().unwrap();
    let trace = &memlens_import::import("p.jsonl", text.as_bytes(), &Default::default())
        .unwrap()
        .traces[0];
    let latency = |c: u32| trace.chunks[c as usize].meta.latency_ms;
    assert_eq!(
        (latency(slow), latency(fast), latency(unknown)),
        (Some(20_000.0), Some(50.0), None)
    );
    let stamp = |c: u32| trace.chunks[c as usize].meta.timestamp.clone();
    assert_eq!(stamp(slow).as_deref(), Some("2025-06-02T16:47:20Z"));
    assert_eq!(stamp(unknown), None);
    let replayed = score_trace(trace, &config.value_config().unwrap(), &[], 1, None);
    for c in [slow, fast, unknown] {
        let want = replayed[c as usize].factors.generation_cost;
        assert_eq!(cost(&mut p, c), want, "chunk {c}");
    }
}

/// The times of a run: message `k` of a record `k` minutes and a half after the start, a tool
/// result `1 + 7k mod 40` seconds after its call (whole seconds: read back exactly from any
/// form of timestamp).
fn times_of(messages: &[Value]) -> Vec<(f64, Option<f64>)> {
    let mut out = Vec::new();
    let mut clock = T0;
    for (k, m) in messages.iter().enumerate() {
        let latency = (m["role"] == "tool").then(|| (1 + (7 * k) % 40) as f64);
        clock += latency.unwrap_or(90.0);
        out.push((clock, latency.map(|s| s * 1000.0)));
    }
    out
}

/// Live equals replay, with time: a pool fed the tau-bench messages with times (tool latencies
/// measured from them) decides call by call like `memlens simulate` on the same trace carrying
/// those timestamps and latencies as an importer records them, under policies that read them:
/// the generation cost (`value`), a half-life in seconds with `max_age_seconds`. The trace the
/// pool exports carries the same times and latencies. Without the times the decisions differ.
#[test]
fn fed_with_times_the_pool_decides_like_the_simulator_on_the_timed_trace() {
    let path = crate::root().join("../shared/data/traces/tau-bench-gpt-4o-airline.json");
    let raw: Vec<Value> = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut traces = crate::import_path(&path).unwrap().traces;
    let prices = PriceTable::builtin();
    let policies = [
        PolicyConfig::builtin("value").unwrap(),
        policy_from_value(&json!({"name": "timed", "strategy": "value",
            "value_preset": "support-bot", "max_age_seconds": 1500}))
        .unwrap(),
    ];
    let (mut compared, mut differ) = (0, 0);
    for (record, trace) in raw.iter().zip(&mut traces).take(25) {
        trace.model = Some("gpt-4o".into());
        let messages = record["traj"].as_array().unwrap();
        let times = times_of(messages);
        for config in &policies {
            let mut p = new_pool(config.clone(), 3000);
            let mut untimed = new_pool(config.clone(), 3000);
            let mut live = Vec::new();
            for (m, &(t, latency)) in messages.iter().zip(&times) {
                if m["role"] == "assistant" {
                    let ctx = p.context(None);
                    let plain = untimed.context(None);
                    differ += usize::from(plain.evicted != ctx.evicted);
                    live.push((ctx.tokens, ctx.evicted.len() as u32, ctx.over_budget));
                }
                let ids = p.add_with(m.clone(), at(t)).unwrap();
                untimed.add(m.clone()).unwrap();
                // The importer's trace, timed as an importer records times: Unix seconds on
                // every chunk of the message, the latency on its tool result.
                for id in ids {
                    let chunk = &mut trace.chunks[id as usize];
                    assert_eq!(chunk.category, p.explain(id).unwrap().category);
                    chunk.meta.timestamp = Some(format!("{t}"));
                    if chunk.category == Category::ToolResult {
                        chunk.meta.latency_ms = latency;
                    }
                }
            }
            let graph = detect(trace);
            let sim = simulate_trace(trace, &graph, config, 3000, &prices).unwrap();
            let sim: Vec<_> = sim
                .calls
                .iter()
                .map(|c| (c.input_tokens, c.evictions, c.over_budget))
                .collect();
            assert_eq!(live, sim, "{} on {}", config.name, trace.id);
            // The pool's own trace carries the same times (in its own form) and latencies.
            let exported = p.export().unwrap();
            let back = memlens_import::import("p.jsonl", exported.as_bytes(), &Default::default())
                .unwrap()
                .traces
                .remove(0);
            let meta = |c: &memlens_core::Chunk| {
                let t = c.meta.timestamp.as_deref().and_then(timestamp_secs);
                (t, c.meta.latency_ms)
            };
            let (ours, theirs): (Vec<_>, Vec<_>) = (
                back.chunks.iter().map(meta).collect(),
                trace.chunks.iter().map(meta).collect(),
            );
            assert_eq!(ours, theirs, "{}", trace.id);
            compared += live.len();
        }
    }
    assert!(compared > 400, "{compared} calls compared");
    assert!(differ > 20, "times changed only {differ} decisions");
}
