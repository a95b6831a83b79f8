//! Policies: the invariants hold on random traces and budgets; replays are deterministic; the
//! simulator's totals add up on the real tau-bench file.

use memlens_core::builder::{Message, Part, TraceBuilder};
use memlens_core::cost::PriceTable;
use memlens_core::policy::validate::check;
use memlens_core::policy::{
    Engine, EngineOptions, PolicyConfig, RunKind, StrategyKind as PolicyStrategy,
};
use memlens_core::simulate::simulate;
use memlens_core::tokens::{count_trace, TokenCounter};
use memlens_core::{Category, Trace};
use proptest::prelude::*;

/// One step of a random agent run.
#[derive(Debug, Clone)]
enum Step {
    User(usize),
    Assistant(usize),
    /// Parallel tool calls with these result sizes.
    Tools(Vec<usize>),
    /// Reasoning before an assistant reply of this size.
    Reasoning(usize),
    /// A user message with an image beside its text.
    Image(usize),
    /// A subagent started by a `Task` tool call: its run is a trace of its own.
    Subagent(Vec<Step>),
}

fn leaf_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1usize..60).prop_map(Step::User),
        (1usize..60).prop_map(Step::Assistant),
        prop::collection::vec(1usize..200, 1..4).prop_map(Step::Tools),
        (1usize..60).prop_map(Step::Reasoning),
        (1usize..30).prop_map(Step::Image),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => leaf_step(),
        1 => prop::collection::vec(leaf_step(), 1..8).prop_map(Step::Subagent),
    ]
}

fn words(n: usize, seed: usize) -> String {
    (0..n)
        .map(|i| format!("w{}", (i * 7 + seed) % 97))
        .collect::<Vec<_>>()
        .join(" ")
}

fn message(role: &str, parts: Vec<Part>) -> Message {
    Message {
        role: None,
        role_name: role.into(),
        parts,
        ..Message::default()
    }
}

/// Builds a trace from steps: system prompt, then the steps; every assistant turn (and every
/// tool round) is a call.
fn build(steps: &[Step]) -> Trace {
    build_set(steps, false).remove(0)
}

/// The run and its subagents' runs (each linked to the run): tool definitions first when
/// `tools`, then the system prompt and the steps.
fn build_set(steps: &[Step], tools: bool) -> Vec<Trace> {
    let mut set = vec![Trace::default()];
    set[0] = build_into("random", steps, tools, &mut set);
    set
}

fn build_into(id: &str, steps: &[Step], tools: bool, set: &mut Vec<Trace>) -> Trace {
    let mut b = TraceBuilder::new(id, "test");
    b.set_model(Some("gpt-4o".into()));
    if tools {
        b.push_message(
            Message {
                role_name: "tools".into(),
                parts: vec![Part::Other {
                    kind: memlens_core::model::TOOL_DEFINITIONS_KIND.into(),
                    text: r#"[{"name":"lookup","parameters":{"id":"string"}}]"#.into(),
                }],
                unframed: true,
                ..Message::default()
            },
            None,
        );
    }
    b.push_message(
        Message::text("system", "You are a test agent. Policy text."),
        None,
    );
    let mut n = 0;
    for (k, s) in steps.iter().enumerate() {
        match s {
            Step::User(len) => {
                b.push_message(Message::text("user", words(*len, k)), None);
            }
            Step::Assistant(len) => {
                b.push_message(Message::text("assistant", words(*len, k + 1)), None);
            }
            Step::Reasoning(len) => {
                let parts = vec![
                    Part::Reasoning(words(*len, k + 3)),
                    Part::Text(words(*len / 2 + 1, k + 4)),
                ];
                b.push_message(message("assistant", parts), None);
            }
            Step::Image(len) => {
                let parts = vec![
                    Part::Text(words(*len, k + 5)),
                    Part::Other {
                        kind: "image".into(),
                        text: format!("[image: screenshot-{k}.png]"),
                    },
                ];
                b.push_message(message("user", parts), None);
            }
            Step::Tools(sizes) => {
                let calls = sizes
                    .iter()
                    .map(|_| {
                        n += 1;
                        Part::ToolCall {
                            id: format!("call_{n}"),
                            name: "lookup".into(),
                            arguments: format!("{{\"id\": \"ID{n}X\"}}"),
                        }
                    })
                    .collect::<Vec<_>>();
                let ids: Vec<String> = calls
                    .iter()
                    .filter_map(|p| match p {
                        Part::ToolCall { id, .. } => Some(id.clone()),
                        _ => None,
                    })
                    .collect();
                b.push_message(message("assistant", calls), None);
                for (id, size) in ids.iter().zip(sizes) {
                    let result = Part::ToolResult {
                        id: id.clone(),
                        name: Some("lookup".into()),
                        content: format!("{{\"data\": \"{}\"}}", words(*size, k + 2)),
                    };
                    b.push_message(message("tool", vec![result]), None);
                }
            }
            Step::Subagent(inner) => {
                n += 1;
                let call_id = format!("call_{n}");
                let child_id = format!("{id}/agent-{n}");
                let mut child = build_into(&child_id, inner, tools, set);
                child.parent = Some(memlens_core::TraceLink {
                    trace: id.to_string(),
                    call: None,
                    tool_call_id: Some(call_id.clone()),
                });
                set.push(child);
                let call = Part::ToolCall {
                    id: call_id.clone(),
                    name: "Task".into(),
                    arguments: format!("{{\"prompt\": \"{}\"}}", words(8, k)),
                };
                b.push_message(message("assistant", vec![call]), None);
                let result = Part::ToolResult {
                    id: call_id,
                    name: Some("Task".into()),
                    content: words(20, k + 6),
                };
                b.push_message(message("tool", vec![result]), None);
            }
        }
    }
    b.reconstruct_calls();
    let (mut trace, _) = b.finish();
    count_trace(&mut trace, &TokenCounter::for_model(Some("gpt-4o")));
    trace
}

/// LangChain's `trim_messages(start_on="human")` drops the leading messages of a history that
/// does not open on a human message at any budget, all of them fitting or not (langchain-core's
/// `_first_max_tokens` applies `end_on` to a list that fits): the one way `langchain-trim`
/// saves without a squeeze, faithfully.
pub fn langchain_drops_at_any_budget(policy: &str, trace: &Trace) -> bool {
    policy == "langchain-trim"
        && trace.calls.iter().any(|call| {
            call.input
                .iter()
                .map(|&id| trace.chunk(id))
                .find(|c| !c.is_preamble())
                .is_some_and(|c| {
                    c.category != Category::User && c.meta.role.as_deref() != Some("user")
                })
        })
}

/// MemLens' own built-in policies (those whose strategy repairs invariants), from the one list
/// of built-ins: a policy added there is property-tested without editing this file.
pub(crate) fn memlens_policies() -> Vec<&'static str> {
    memlens_core::policy::BUILTIN
        .iter()
        .copied()
        .filter(|n| {
            PolicyConfig::builtin(n)
                .expect("a listed built-in")
                .strategy
                .repairs_invariants()
        })
        .collect()
}

#[test]
fn every_builtin_is_registered_named_and_documented() {
    let docs =
        std::fs::read_to_string(crate::root().join("docs/policies.md")).expect("docs/policies.md");
    for name in memlens_core::policy::BUILTIN {
        let policy = PolicyConfig::builtin(name).expect("a listed built-in");
        assert_eq!(policy.name, *name);
        assert!(PolicyStrategy::ALL.contains(&policy.strategy), "{name}");
        assert!(
            docs.contains(&format!("`{name}`")),
            "docs/policies.md does not list `{name}`"
        );
    }
    for st in PolicyStrategy::ALL {
        // The name lists show is the name policy files use.
        assert_eq!(
            serde_json::to_value(st).expect("json"),
            serde_json::Value::from(st.name())
        );
    }
    let ours = memlens_policies();
    assert!(
        ours.contains(&"recall") && ours.contains(&"oracle"),
        "{ours:?}"
    );
    assert!(!ours.contains(&"langchain-trim"), "{ours:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn memlens_policies_never_break_an_invariant(
        steps in prop::collection::vec(step(), 1..40),
        budget in 20u32..3000,
        which in 0usize..64,
        threshold in prop::option::of(0.0f32..0.8),
        cleanup in prop::option::of((0.3f32..1.0, 0.1f32..1.0)),
        rules in (0u8..3, prop::option::of(0u32..4), any::<bool>(), prop::option::of(0.0f32..0.6), prop::option::of(1u32..6), any::<bool>()),
        echoed in prop::option::of(prop::sample::select(vec![RunKind::Any, RunKind::Agent, RunKind::Conversation])),
        tools in any::<bool>(),
    ) {
        let traces = build_set(&steps, tools);
        let names = memlens_policies();
        let mut policy = PolicyConfig::builtin(names[which % names.len()]).expect("built-in");
        // The value threshold and the cleanup threshold, on or off, over every policy.
        policy.value_threshold = threshold;
        policy.cleanup = cleanup.map(|(trigger, target)| memlens_core::policy::Cleanup { trigger, target });
        // The per-tool rules, quotas by value, max age with its exemption, on or off.
        // Fields: none, only `id` kept, or `id` dropped.
        let (fields, clear_after_calls, compress, exempt, max_age, by_value) = rules;
        policy.tools.insert("lookup".into(), memlens_core::policy::ToolRule {
            keep_fields: if fields == 1 { vec!["id".into()] } else { Vec::new() },
            drop_fields: if fields == 2 { vec!["id".into()] } else { Vec::new() },
            clear_after_calls,
            compress,
        });
        policy.age_exempt_value = exempt;
        policy.max_age_calls = max_age;
        if by_value {
            policy.quota_order = memlens_core::policy::QuotaOrder::Value;
            policy.quotas.insert(Category::ToolResult, 0.3);
        }
        // The assistant's echoed replies evicted, in some kind of run or none.
        policy.evict_echoed_replies = echoed;
        let report = simulate(&traces, &policy, budget, &PriceTable::builtin())
            .expect("simulates");
        for call in report.traces.iter().flat_map(|t| &t.calls) {
            prop_assert!(call.violations.is_empty(), "{:?} at call {} under {}", call.violations, call.index, policy.name);
            prop_assert!(call.over_budget || call.input_tokens <= u64::from(budget));
        }
    }

    /// At a budget the largest call fits in there is nothing to give up: every built-in
    /// policy, the incumbents too, sends what keeping everything sends and breaks nothing.
    #[test]
    fn a_budget_above_the_largest_call_saves_nothing(
        steps in prop::collection::vec(step(), 1..30),
        tools in any::<bool>(),
        extra in 0u32..2000,
    ) {
        let traces = build_set(&steps, tools);
        let largest = traces
            .iter()
            .flat_map(memlens_core::tokens::call_tokens)
            .map(|c| c.input)
            .max()
            .unwrap_or(0);
        for name in memlens_core::policy::BUILTIN {
            let policy = PolicyConfig::builtin(name).expect("built-in");
            let Some(share) = policy.untouched_below() else {
                continue;
            };
            let traces: Vec<Trace> = traces
                .iter()
                .filter(|t| !langchain_drops_at_any_budget(name, t))
                .cloned()
                .collect();
            let budget = (largest as f64 / share).ceil() as u32 + extra;
            let report = simulate(&traces, &policy, budget, &PriceTable::builtin())
                .expect("simulates");
            prop_assert_eq!(report.totals.saved_tokens, 0, "{} at {}", name, budget);
            prop_assert_eq!(report.totals.violations, 0, "{} at {}", name, budget);
        }
    }

    #[test]
    fn over_budget_only_when_protected_content_alone_exceeds_it(
        steps in prop::collection::vec(step(), 1..30),
        budget in 20u32..1500,
        value in any::<bool>(),
        tools in any::<bool>(),
    ) {
        let trace = build_set(&steps, tools).remove(0);
        let mut policy = PolicyConfig::builtin(if value { "value" } else { "window" }).expect("built-in");
        policy.protect.patterns.clear();
        policy.protect.recent_messages = 0;
        let mut engine = Engine::new(policy, EngineOptions { budget, input_usd_per_mtok: None }, TokenCounter::for_model(Some("gpt-4o")))
            .expect("engine");
        for call in &trace.calls {
            for &id in &call.input {
                engine.add(trace.chunk(id));
            }
            let d = engine.context(None);
            prop_assert!(check(|id| trace.chunk(id), &call.input, &d).is_empty());
            if d.over_budget {
                // Only the system prompt and the newest user message (with the tool pairs that
                // must come along) may remain.
                let newest_user = call.input.iter().rev().find(|&&id| trace.chunk(id).category == Category::User);
                for id in d.chunk_ids() {
                    let c = trace.chunk(id);
                    prop_assert!(
                        c.is_preamble() || Some(&id) == newest_user,
                        "over budget yet {} ({}) was kept", c.key, c.category
                    );
                }
            }
        }
    }

    #[test]
    fn replays_are_deterministic(steps in prop::collection::vec(step(), 1..25), budget in 50u32..2000, which in 0usize..64) {
        let trace = build(&steps);
        let names = memlens_policies();
        let policy = PolicyConfig::builtin(names[which % names.len()]).expect("built-in");
        let a = serde_json::to_string(&simulate(std::slice::from_ref(&trace), &policy, budget, &PriceTable::builtin()).expect("sim")).expect("json");
        let b = serde_json::to_string(&simulate(std::slice::from_ref(&trace), &policy, budget, &PriceTable::builtin()).expect("sim")).expect("json");
        prop_assert_eq!(a, b);
    }
}

/// Random traces per registered policy: `MEMLENS_INVARIANT_CASES` (64 unless set; the long run in
/// RELIABILITY.md sets 10,000).
fn invariant_cases() -> u32 {
    std::env::var("MEMLENS_INVARIANT_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(64)
}

/// Every registered policy (the registry, not a hand list) on random traces at random budgets:
/// MemLens' own policies never break an invariant and stay within the budget unless they say
/// otherwise; the incumbents replay their libraries, so their violations are counted and printed
/// (`cargo test -p memlens-tests invariants_over_every -- --nocapture`), not failed.
#[test]
fn invariants_over_every_registered_policy() {
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let cases = invariant_cases();
    let mut table = vec![String::from(
        "| policy | kind | cases | calls | calls with a violation | calls over budget |\n|---|---|---|---|---|---|",
    )];
    for name in memlens_core::policy::BUILTIN {
        let policy = PolicyConfig::builtin(name).expect("a listed built-in");
        let ours = policy.strategy.repairs_invariants();
        let tally = std::cell::Cell::new((0u64, 0u64, 0u64));
        // The same traces for every policy and every run: a failure reproduces, and the
        // incumbents' counts compare on equal terms.
        let config = Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        };
        let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
        let mut runner = TestRunner::new_with_rng(config, rng);
        let strategy = (
            prop::collection::vec(step(), 1..40),
            20u32..3000,
            any::<bool>(),
        );
        let result = runner.run(&strategy, |(steps, budget, tools)| {
            let traces = build_set(&steps, tools);
            let report = simulate(&traces, &policy, budget, &PriceTable::builtin())
                .map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
            let (mut calls, mut broken, mut over) = tally.get();
            for call in report.traces.iter().flat_map(|t| &t.calls) {
                calls += 1;
                broken += u64::from(!call.violations.is_empty());
                over += u64::from(call.over_budget);
                prop_assert!(
                    call.over_budget || call.input_tokens <= u64::from(budget),
                    "{name}: over budget unannounced"
                );
                if ours {
                    prop_assert!(
                        call.violations.is_empty(),
                        "{name}: {:?} at call {}",
                        call.violations,
                        call.index
                    );
                }
            }
            tally.set((calls, broken, over));
            Ok(())
        });
        if let Err(e) = result {
            panic!("{name}: {e}");
        }
        let (calls, broken, over) = tally.get();
        let kind = if ours { "MemLens" } else { "incumbent" };
        table.push(format!(
            "| `{name}` | {kind} | {cases} | {calls} | {broken} | {over} |"
        ));
    }
    println!("{}", table.join("\n"));
}

#[test]
fn policies_parse_from_json_and_toml() {
    let json = r#"{"name": "mine", "strategy": "window", "budget": 4000, "max_messages": 12,
        "protect": {"patterns": ["(?i)remember"]}, "quotas": {"tool_result": 0.5},
        "compress": {"json": {"max_array": 3}}, "offload": {"reserve": 0.2}}"#;
    let p = PolicyConfig::from_json(json).expect("json policy");
    assert_eq!(p.budget, Some(4000));
    assert_eq!(p.quotas.get(&Category::ToolResult), Some(&0.5));
    let toml = "name = \"mine\"\nstrategy = \"value\"\nbudget = 2000\n[protect]\nrecent_messages = 4\n[value.weights]\nrecency = 2.0\n";
    let q = PolicyConfig::from_toml(toml).expect("toml policy");
    assert_eq!(q.protect.recent_messages, 4);
    assert_eq!(q.value.weights.recency, 2.0);
    // Round trip: export then import gives the same policy.
    assert_eq!(
        PolicyConfig::from_json(&p.to_json()).expect("round trip"),
        p
    );
    let err = PolicyConfig::from_json(r#"{"strategy": "nope"}"#).expect_err("bad strategy");
    assert!(err.to_string().contains("invalid policy (json)"));
    assert!(PolicyConfig::builtin("nope")
        .expect_err("unknown")
        .to_string()
        .contains("langchain-trim"));
    let bad = PolicyConfig {
        protect: memlens_core::policy::config::Protect {
            patterns: vec!["(".into()],
            ..Default::default()
        },
        ..PolicyConfig::default()
    };
    assert!(Engine::new(
        bad,
        EngineOptions {
            budget: 10,
            input_usd_per_mtok: None
        },
        TokenCounter::for_model(None)
    )
    .is_err());
}

fn shared(rel: &str) -> Vec<Trace> {
    let path = crate::root().join("../shared/data").join(rel);
    let mut r = crate::import_path(&path).expect("real data imports");
    for t in &mut r.traces {
        // tau-bench does not name its model; it is gpt-4o.
        if t.model.is_none() && rel.contains("tau-bench") {
            t.model = Some("gpt-4o".into());
        }
    }
    r.traces
}

/// FNV-1a: a hash that is the same on every platform and Rust version.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[test]
fn tau_bench_replays_are_deterministic_and_memlens_policies_keep_every_invariant() {
    let traces = shared("traces/tau-bench-gpt-4o-airline.json");
    let prices = PriceTable::builtin();
    let mut table = String::from(
        "policy                           budget    sent     saved%  misses violations over\n",
    );
    for name in memlens_core::policy::BUILTIN {
        let policy = PolicyConfig::builtin(name).expect("built-in");
        let a = simulate(&traces, &policy, 4000, &prices).expect("simulates");
        let b = simulate(&traces, &policy, 4000, &prices).expect("simulates");
        let (ja, jb) = (
            serde_json::to_vec(&a).expect("json"),
            serde_json::to_vec(&b).expect("json"),
        );
        assert_eq!(fnv1a(&ja), fnv1a(&jb), "{name}: two replays differ");
        let t = &a.totals;
        assert_eq!(t.calls, 2454);
        // Observation masking never drops anything: a masked result stays with its call.
        if memlens_policies().contains(name) || name.starts_with("swe-agent-observation-masking") {
            assert_eq!(t.violations, 0, "{name}");
        }
        if *name == "keep-all" {
            assert_eq!(t.saved_tokens, 0);
            assert_eq!(t.misses, 0);
        }
        table.push_str(&format!(
            "{:<32} {:>6} {:>9} {:>6.1} {:>7} {:>10} {:>5}\n",
            name,
            a.budget,
            t.input_tokens,
            t.saved_tokens as f64 * 100.0 / t.full_input_tokens as f64,
            t.misses,
            t.violations,
            t.over_budget_calls
        ));
    }
    // What each policy does on the real file: a change in any of them shows here.
    insta::assert_snapshot!(table);
}

#[test]
fn locomo_replays_under_memlens_policies_keep_every_invariant() {
    let traces = shared("locomo/locomo10.json");
    for name in ["window", "value", "value-offload", "oracle"] {
        let policy = PolicyConfig::builtin(name).expect("built-in");
        let r = simulate(&traces, &policy, 2000, &PriceTable::builtin()).expect("simulates");
        assert_eq!(r.totals.calls, 2931);
        assert_eq!(r.totals.violations, 0, "{name}");
        assert!(r.totals.saved_tokens > 0, "{name}");
    }
}

#[test]
fn a_live_engine_fed_message_by_message_decides_like_the_replay() {
    let traces = shared("traces/tau-bench-gpt-4o-airline.json");
    let prices = PriceTable::builtin();
    for name in ["window", "value", "value-compress", "value-offload"] {
        let policy = PolicyConfig::builtin(name).expect("built-in");
        let replay = simulate(&traces[..20], &policy, 3000, &prices).expect("simulates");
        for (trace, sim) in traces[..20].iter().zip(&replay.traces) {
            // A live agent: messages arrive one by one; before each assistant message it asks
            // for the context.
            let mut engine = Engine::new(
                policy.clone(),
                EngineOptions {
                    budget: 3000,
                    input_usd_per_mtok: Some(2.5),
                },
                TokenCounter::for_model(Some("gpt-4o")),
            )
            .expect("engine");
            let mut sent = Vec::new();
            let mut next_call = 0;
            for chunk in &trace.chunks {
                let is_output = trace
                    .calls
                    .get(next_call)
                    .is_some_and(|c| c.output.first() == Some(&chunk.id));
                if is_output {
                    sent.push(engine.context(None).tokens);
                    next_call += 1;
                }
                engine.add(chunk);
            }
            let replayed: Vec<u64> = sim.calls.iter().map(|c| c.input_tokens).collect();
            assert_eq!(sent, replayed, "{name} on {}", trace.id);
        }
    }
}

/// Feeds a trace to a live engine as an agent would and returns, per call, the keys of the
/// chunks sent (in order).
fn contexts(trace: &Trace, policy: &PolicyConfig, budget: u32) -> Vec<Vec<String>> {
    let mut engine = Engine::new(
        policy.clone(),
        EngineOptions {
            budget,
            input_usd_per_mtok: None,
        },
        TokenCounter::for_model(Some("gpt-4o")),
    )
    .expect("engine");
    let mut out = Vec::new();
    let mut next_call = 0;
    for chunk in &trace.chunks {
        if trace
            .calls
            .get(next_call)
            .is_some_and(|c| c.output.first() == Some(&chunk.id))
        {
            let d = engine.context(None);
            out.push(
                d.chunk_ids()
                    .map(|id| trace.chunk(id).key.clone())
                    .collect(),
            );
            next_call += 1;
        }
        engine.add(chunk);
    }
    out
}

/// Values that depend on the category alone (every other weight 0), so expected contexts follow
/// by hand: user 0.9, assistant 0.5, tool calls and results 0.1, system 1.
fn category_only(mut policy: PolicyConfig) -> PolicyConfig {
    let w = &mut policy.value.weights;
    (w.recency, w.popularity, w.density, w.redundancy) = (0.0, 0.0, 0.0, 0.0);
    (w.relevance, w.generation_cost, w.pinned, w.category) = (0.0, 0.0, 0.0, 1.0);
    policy.value.category_weights = [
        (Category::System, 1.0),
        (Category::User, 0.9),
        (Category::Assistant, 0.5),
        (Category::ToolCall, 0.1),
        (Category::ToolResult, 0.1),
    ]
    .into_iter()
    .collect();
    policy
}

#[test]
fn value_threshold_drops_low_value_units_under_budget_but_not_unseen_ones() {
    // system m0, user m1, tool call m2 + result m3 (call 0 -> call 1), assistant m4 (call 1),
    // user m5, assistant m6 (call 2).
    let trace = build(&[
        Step::User(5),
        Step::Tools(vec![8]),
        Step::Assistant(5),
        Step::User(5),
        Step::Assistant(5),
    ]);
    let keys: Vec<&str> = trace.chunks.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, ["m0", "m1", "m2", "m3", "m4", "m5", "m6"]);
    let mut policy = category_only(PolicyConfig::builtin("window").expect("built-in"));
    policy.value_threshold = Some(0.3);
    // A budget nothing comes near: only the threshold acts.
    let got = contexts(&trace, &policy, 100_000);
    assert_eq!(
        got,
        [
            vec!["m0", "m1"],
            // The tool pair (0.1) arrived for this call: the model has not seen it, it stays.
            vec!["m0", "m1", "m2", "m3"],
            // Seen once, value 0.1 < 0.3: the call and its result go together; the user turn
            // (0.9) and the assistant text (0.5) stay.
            vec!["m0", "m1", "m4", "m5"],
        ]
    );
    // Without the threshold, the same budget keeps everything.
    policy.value_threshold = None;
    assert_eq!(
        contexts(&trace, &policy, 100_000)[2],
        ["m0", "m1", "m2", "m3", "m4", "m5"]
    );
}

#[test]
fn value_threshold_runs_limits_the_threshold_to_one_kind_of_run() {
    // A conversation (m1-m4), then a tool call m5 + result m6 (call 2 -> call 3), assistant m7
    // (call 3), user m8, assistant m9 (call 4).
    let trace = build(&[
        Step::User(5),
        Step::Assistant(5),
        Step::User(5),
        Step::Assistant(5),
        Step::Tools(vec![8]),
        Step::Assistant(5),
        Step::User(5),
        Step::Assistant(5),
    ]);
    let mut policy = category_only(PolicyConfig::builtin("window").expect("built-in"));
    policy.value_threshold = Some(0.95);
    let mut runs = |kind| {
        policy.value_threshold_runs = kind;
        contexts(&trace, &policy, 100_000)
    };
    // Every run: at call 1 the turns before the newest user message are worth 0.9 (in a
    // conversation both parties weigh as users) < 0.95 and go; the newest user turn is
    // protected; from call 3 the run has used a tool, the assistant's text weighs 0.5 and
    // the tool pair 0.1 once seen.
    let any = [
        vec!["m0", "m1"],
        vec!["m0", "m3"],
        vec!["m0", "m3", "m4"],
        vec!["m0", "m3", "m5", "m6"],
        vec!["m0", "m8"],
    ];
    assert_eq!(runs(RunKind::Any), any);
    // Agent runs only: nothing goes while it is a conversation; from the tool call's arrival
    // (call 3) it acts as above.
    assert_eq!(
        runs(RunKind::Agent),
        [
            vec!["m0", "m1"],
            vec!["m0", "m1", "m2", "m3"],
            vec!["m0", "m1", "m2", "m3", "m4"],
            any[3].clone(),
            any[4].clone(),
        ]
    );
    // Conversations only: as every run until the tool call, then nothing more goes.
    assert_eq!(
        runs(RunKind::Conversation),
        [
            any[0].clone(),
            any[1].clone(),
            any[2].clone(),
            vec!["m0", "m3", "m4", "m5", "m6"],
            vec!["m0", "m3", "m4", "m5", "m6", "m7", "m8"],
        ]
    );
    // The key reads from JSON and TOML, and `any` is left out when written.
    let json =
        PolicyConfig::from_json(r#"{"value_threshold": 0.3, "value_threshold_runs": "agent"}"#)
            .expect("reads");
    assert_eq!(json.value_threshold_runs, RunKind::Agent);
    let toml = PolicyConfig::from_toml("value_threshold_runs = \"conversation\"").expect("reads");
    assert_eq!(toml.value_threshold_runs, RunKind::Conversation);
    let written = serde_json::to_string(&PolicyConfig::default()).expect("writes");
    assert!(!written.contains("value_threshold_runs"), "{written}");
    assert!(PolicyConfig::from_json(r#"{"value_threshold_runs": "chat"}"#).is_err());
}

#[test]
fn size_exponent_cleanup_and_quotas_runs_limit_them_to_one_kind_of_run() {
    // A conversation of short and long turns, over the budget from its middle on; and an agent
    // run with tool results between the same turns.
    let turns: Vec<Step> = (0..8)
        .flat_map(|k| {
            [
                Step::User(8 + 40 * (k % 2)),
                Step::Assistant(50 - 40 * (k % 2)),
            ]
        })
        .collect();
    let conversation = build(&turns);
    let mut with_tools = Vec::new();
    for (k, t) in turns.into_iter().enumerate() {
        with_tools.push(t);
        if k % 4 == 1 {
            with_tools.push(Step::Tools(vec![60]));
        }
    }
    let agent = build(&with_tools);
    let budget = 300;
    let run = |trace: &Trace, f: &dyn Fn(&mut PolicyConfig)| {
        let mut p = PolicyConfig::builtin("value").expect("built-in");
        // The agent run's replies echo its tool results: evicting them would leave the
        // assistant's quota nothing to do.
        p.evict_echoed_replies = None;
        f(&mut p);
        contexts(trace, &p, budget)
    };
    let cleanup = Some(memlens_core::policy::Cleanup {
        trigger: 0.9,
        target: 0.5,
    });
    for (trace, is_agent) in [(&conversation, false), (&agent, true)] {
        let unset = run(trace, &|_| {});
        // The exponent: per token gives up the long turns first, value alone (a conversation's
        // default) the least valuable whatever its size.
        let exponent = run(trace, &|p| {
            p.size_exponent = Some(if is_agent { 0.0 } else { 1.0 })
        });
        assert_ne!(
            unset, exponent,
            "the exponent matters here (agent run: {is_agent})"
        );
        let scoped = |runs| {
            run(trace, &|p| {
                p.size_exponent = Some(if is_agent { 0.0 } else { 1.0 });
                p.size_exponent_runs = runs;
            })
        };
        let (own, other) = if is_agent {
            (RunKind::Agent, RunKind::Conversation)
        } else {
            (RunKind::Conversation, RunKind::Agent)
        };
        assert_eq!(scoped(own), exponent);
        assert_eq!(scoped(other), unset);
        // The cleanup: cut to half the budget past 90% of it, or evicted to the budget.
        let cleaned = run(trace, &|p| p.cleanup = cleanup);
        assert_ne!(
            unset, cleaned,
            "the cleanup matters here (agent run: {is_agent})"
        );
        let scoped = |runs| {
            run(trace, &|p| {
                p.cleanup = cleanup;
                p.cleanup_runs = runs;
            })
        };
        assert_eq!(scoped(own), cleaned);
        assert_eq!(scoped(other), unset);
        // Quotas: the assistant's turns held to a tenth of the budget, least valuable first.
        let quota = |p: &mut PolicyConfig| {
            p.quotas.insert(Category::Assistant, 0.1);
            p.quota_order = memlens_core::policy::QuotaOrder::Value;
        };
        let quoted = run(trace, &quota);
        assert_ne!(
            unset, quoted,
            "the quota matters here (agent run: {is_agent})"
        );
        let scoped = |runs| {
            run(trace, &|p| {
                quota(p);
                p.quotas_runs = runs;
            })
        };
        assert_eq!(scoped(own), quoted);
        assert_eq!(scoped(other), unset);
    }
    // The keys read from JSON and TOML, and `any` is left out when written.
    let json = PolicyConfig::from_json(
        r#"{"size_exponent": 0.5, "size_exponent_runs": "agent", "cleanup_runs": "conversation", "quotas_runs": "agent"}"#,
    )
    .expect("reads");
    assert_eq!(
        (json.size_exponent_runs, json.cleanup_runs, json.quotas_runs),
        (RunKind::Agent, RunKind::Conversation, RunKind::Agent)
    );
    let toml = PolicyConfig::from_toml("cleanup_runs = \"agent\"").expect("reads");
    assert_eq!(toml.cleanup_runs, RunKind::Agent);
    let written = serde_json::to_string(&PolicyConfig::default()).expect("writes");
    assert!(!written.contains("_runs"), "{written}");
}

#[test]
fn cleanup_lets_the_context_grow_to_the_trigger_then_cuts_to_the_target() {
    // Eight user/assistant exchanges of equal size, under a window policy.
    let steps: Vec<Step> = (0..8)
        .flat_map(|_| [Step::User(40), Step::Assistant(40)])
        .collect();
    let trace = build(&steps);
    let mut policy = PolicyConfig::builtin("window").expect("built-in");
    policy.protect.recent_messages = 0;
    let budget = 400;
    let plain = contexts(&trace, &policy, budget);
    policy.cleanup = Some(memlens_core::policy::Cleanup {
        trigger: 0.9,
        target: 0.5,
    });
    let cleaned = contexts(&trace, &policy, budget);
    let tokens = |keys: &[String]| -> u64 {
        keys.iter()
            .map(|k| {
                u64::from(
                    trace
                        .chunks
                        .iter()
                        .find(|c| &c.key == k)
                        .expect("chunk")
                        .tokens,
                )
            })
            .sum::<u64>()
    };
    let mut cuts = 0;
    for (i, ctx) in cleaned.iter().enumerate() {
        let t = tokens(ctx);
        assert!(t <= u64::from(budget), "call {i}: {t} tokens");
        if i > 0 {
            let before = &cleaned[i - 1];
            // Either the previous context is still the prefix (it grew, the cache holds) ...
            let grew = ctx.starts_with(before);
            // ... or it was cut back to at most half the budget (plus the newest message).
            if !grew {
                cuts += 1;
                let newest = tokens(&ctx[ctx.len() - 1..]);
                assert!(t <= u64::from(budget) / 2 + newest, "call {i}: cut to {t}");
            }
        }
    }
    assert!(cuts >= 1, "{cleaned:?}");
    // The plain window evicts at every call once full; cleanup keeps more calls' prefixes.
    let changed = |cs: &[Vec<String>]| cs.windows(2).filter(|w| !w[1].starts_with(&w[0])).count();
    assert!(
        changed(&cleaned) < changed(&plain),
        "{} vs {}",
        changed(&cleaned),
        changed(&plain)
    );
}

/// Found by the `policy` fuzz target (fuzz/artifacts/policy/crash-5f188671…): a TOML number too
/// large for an f32 read as infinity, and the exported JSON (`null`) did not read back. Numbers
/// that are not finite are now refused where the policy is read, naming the field.
#[test]
fn fuzz_regression_policies_with_numbers_that_are_not_finite_are_refused() {
    let big = format!(
        "name = \"p\"\n[cleanup]\ntrigger = 2.8\ntarget = 2{}1.6\n",
        "2".repeat(200)
    );
    let err = PolicyConfig::from_toml(&big).expect_err("an infinite target");
    assert!(
        err.to_string()
            .contains("cleanup.target is not a finite number"),
        "{err}"
    );
    for text in [
        "name = \"p\"\nvalue_threshold = inf\n",
        "name = \"p\"\nvalue_threshold = nan\n",
    ] {
        let err = PolicyConfig::from_toml(text).expect_err("not finite");
        assert!(
            err.to_string()
                .contains("value_threshold is not a finite number"),
            "{err}"
        );
    }
    // Finite numbers still read, and export and read back as themselves.
    let ok = PolicyConfig::from_toml(
        "name = \"p\"\nvalue_threshold = 0.25\n[cleanup]\ntrigger = 0.8\ntarget = 0.6\n",
    )
    .expect("finite");
    assert_eq!(
        PolicyConfig::from_json(&ok.to_json()).expect("reads back"),
        ok
    );
}

/// Found by the `import` fuzz target (fuzz/artifacts/import/crash-e7079f74…, kept as
/// `tests/fixtures/fuzz/regressions/gemini-token-overflow.json`): a Gemini CLI session whose token
/// counts add up past `u64::MAX` overflowed in the importer and in the summary's totals (a panic
/// with overflow checks, a wrong total without). Reported counts now add up saturating, in every
/// importer that adds them (Gemini, Anthropic, Claude Code, Langfuse) and in the summary.
#[test]
fn fuzz_regression_reported_token_counts_past_u64_max_saturate() {
    let path = crate::root().join("tests/fixtures/fuzz/regressions/gemini-token-overflow.json");
    let bytes = std::fs::read(&path).expect("the fixture");
    let result = memlens_import::import("overflow.json", &bytes, &Default::default())
        .expect("the session imports");
    let trace = &result.traces[0];
    let summary = memlens_core::report::summarize(trace, &PriceTable::builtin(), 5);
    let json = serde_json::to_value(&summary).expect("summary JSON");
    assert!(
        json["reported_input_tokens"].as_u64().is_some(),
        "{}",
        json["reported_input_tokens"]
    );
    let saturated = trace
        .calls
        .iter()
        .filter_map(|c| c.usage.as_ref()?.input_tokens)
        .any(|n| n == u64::MAX);
    assert!(saturated, "the fixture's counts add up past u64::MAX");
}

/// A memo shared by a trace's replays ([`TraceMemo`]: the fit's candidates) changes nothing:
/// every built-in policy, replayed with a memo that earlier policies' replays filled, gives the
/// replay without one, at two budgets.
#[test]
fn replays_sharing_a_memo_decide_as_replays_without_one() {
    use memlens_core::policy::TraceMemo;
    use memlens_core::references::detect;
    use memlens_core::simulate::{simulate_trace, simulate_trace_with_memo};
    let traces = shared("traces/tau-bench-gpt-4o-airline.json");
    let prices = PriceTable::builtin();
    for trace in traces.iter().step_by(10) {
        let graph = detect(trace);
        let memo = TraceMemo::new(trace.chunks.len());
        for name in memlens_core::policy::BUILTIN {
            let policy = PolicyConfig::builtin(name).expect("built-in");
            for budget in [2000, 4000] {
                let plain = simulate_trace(trace, &graph, &policy, budget, &prices).expect("sim");
                let memo = Some(&memo);
                let with = simulate_trace_with_memo(trace, &graph, &policy, budget, &prices, memo)
                    .expect("sim");
                assert_eq!(
                    serde_json::to_string(&plain).expect("json"),
                    serde_json::to_string(&with).expect("json"),
                    "{name} at {budget} on {}",
                    trace.id
                );
            }
        }
    }
}
