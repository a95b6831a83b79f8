//! Each rule's behaviour on a hand-built conversation whose expected context is derived by hand.

use crate::model::Category::{Assistant, System, ToolResult, User};
use crate::policy::strategy::testing::{builtin, engine, Script};
use crate::policy::{PolicyConfig, PolicyError, QuotaOrder, RunKind, ToolRule};
use crate::value::{Label, ValueConfig};

fn with_tool(name: &str, rule: ToolRule) -> PolicyConfig {
    let mut p = builtin("window");
    p.tools.insert(name.into(), rule);
    p
}

fn text_of(s: &Script, d: &crate::policy::Decision, key: &str) -> Option<String> {
    let id = s.id(key);
    d.entries
        .iter()
        .find(|e| e.chunk == Some(id))
        .and_then(|e| e.text.as_deref().map(str::to_string))
}

/// sys, u1, then a `web_search` call whose result has a summary, links and a big raw page,
/// and a `bash` call with its output; then a1, u2.
fn searches() -> Script {
    let mut s = Script::default();
    s.msg("sys", System, 10).msg("u1", User, 10);
    s.call("c1", "web_search", 10, true)
        .result("r1", "c1", "web_search", 400)
        .content(&format!(
            r#"{{"summary":"fares rose","top_3_links":["a","b","c"],"raw":"{}"}}"#,
            "page ".repeat(300)
        ));
    s.call("c2", "bash", 10, true)
        .result("r2", "c2", "bash", 300)
        .content(&"line of output\n".repeat(40));
    s.msg("a1", Assistant, 10).msg("u2", User, 10);
    s
}

#[test]
fn a_tool_rule_keeps_only_the_named_fields_once_the_model_has_seen_the_result() {
    let s = searches();
    let policy = with_tool(
        "web_search",
        ToolRule {
            keep_fields: vec!["summary".into(), "top_3_links".into()],
            ..ToolRule::default()
        },
    );
    let mut e = engine(policy, 100_000);
    // Call 0 right after the result: the model sees it whole. Call 1: only the fields.
    let d = s.run(&mut e, &[4, s.chunks.len()]);
    assert_eq!(text_of(&s, &d[0], "r1"), None);
    assert_eq!(
        text_of(&s, &d[1], "r1").as_deref(),
        Some(r#"{"summary":"fares rose","top_3_links":["a","b","c"]}"#)
    );
    // Under budget, the other tool's result is untouched.
    assert_eq!(text_of(&s, &d[1], "r2"), None);
}

#[test]
fn a_tool_rule_drops_the_named_fields_and_sends_the_rest_in_the_policy_form() {
    // A flight search: three like objects, each with two fields no later step reads.
    let mut s = Script::default();
    s.msg("sys", System, 10).msg("u1", User, 10);
    s.call("c1", "search", 10, true)
        .result("r1", "c1", "search", 400)
        .content(
            r#"[{"flight": "HAT069", "price": 121, "created_at": "2024-05-01T10:00:00", "seats": {"economy": 4, "basic": 9}},
                {"flight": "HAT083", "price": 100, "created_at": "2024-05-02T11:00:00", "seats": {"economy": 7, "basic": 1}},
                {"flight": "HAT110", "price": 95, "created_at": "2024-05-03T12:00:00", "seats": {"economy": 2, "basic": 3}}]"#,
        );
    s.msg("a1", Assistant, 10).msg("u2", User, 10);
    let rule = ToolRule {
        drop_fields: vec!["created_at".into(), "basic".into()],
        ..ToolRule::default()
    };
    let mut policy = builtin("value");
    policy.compress.minify_json = true;
    policy.compress.toon_json = true;
    policy.tools.insert("search".into(), rule.clone());
    let mut e = engine(policy, 100_000);
    // Call 0 right after the result: whole (as TOON, the policy's lossless form). Call 1:
    // without the two fields, still as TOON (fewer tokens than the same data minified).
    let d = s.run(&mut e, &[4, s.chunks.len()]);
    let whole = text_of(&s, &d[0], "r1").expect("sent as TOON");
    assert!(whole.contains("created_at") && whole.contains("basic"));
    assert_eq!(
        text_of(&s, &d[1], "r1").as_deref(),
        Some("[3]{flight,price,seats{economy}}:\n  HAT069,121,4\n  HAT083,100,7\n  HAT110,95,2")
    );
    // Without the lossless forms the rest is minified JSON.
    let mut e = engine(with_tool("search", rule), 100_000);
    let d = s.run(&mut e, &[4, s.chunks.len()]);
    assert_eq!(text_of(&s, &d[0], "r1"), None);
    assert_eq!(
        text_of(&s, &d[1], "r1").as_deref(),
        Some(
            r#"[{"flight":"HAT069","price":121,"seats":{"economy":4}},{"flight":"HAT083","price":100,"seats":{"economy":7}},{"flight":"HAT110","price":95,"seats":{"economy":2}}]"#
        )
    );
}

/// sys, u1, a `get_user` result in spaced JSON, a `read_file` result in spaced JSON, a
/// `bash` result in plain text, then a1.
fn spaced_json() -> Script {
    let mut s = Script::default();
    s.msg("sys", System, 10).msg("u1", User, 10);
    s.call("c1", "get_user", 10, true)
        .result("r1", "c1", "get_user", 60)
        .content(r#"{"user_id": "mia_li_3668", "flights": ["HAT069", "HAT083"], "note": "a b"}"#);
    s.call("c2", "read_file", 10, true)
        .result("r2", "c2", "read_file", 60)
        .content(r#"{"path": "a.txt", "size": 12}"#);
    s.call("c3", "bash", 10, true)
        .result("r3", "c3", "bash", 60)
        .content("total 0\n  a  b  ");
    s.msg("a1", Assistant, 10);
    s
}

#[test]
fn minify_json_sends_json_results_minified_from_their_first_call() {
    let s = spaced_json();
    let mut policy = builtin("value");
    policy.compress.minify_json = true;
    policy.tools.insert(
        "read_file".into(),
        ToolRule {
            compress: false,
            ..ToolRule::default()
        },
    );
    let mut e = engine(policy, 100_000);
    // Call 0 right after r1 (the newest message, protected): minified already, strings and
    // key order as they were. Call 1: the same text, not compressed again.
    let d = s.run(&mut e, &[4, s.chunks.len()]);
    let minified = r#"{"user_id":"mia_li_3668","flights":["HAT069","HAT083"],"note":"a b"}"#;
    assert_eq!(text_of(&s, &d[0], "r1").as_deref(), Some(minified));
    assert_eq!(d[0].compressed, vec![s.id("r1")]);
    assert_eq!(text_of(&s, &d[1], "r1").as_deref(), Some(minified));
    assert!(!d[1].compressed.contains(&s.id("r1")));
    // `compress = false` exempts read_file; bash's output is not JSON.
    assert_eq!(text_of(&s, &d[1], "r2"), None);
    assert_eq!(text_of(&s, &d[1], "r3"), None);
    // Nothing is minified unless the policy asks.
    let d = s.decide(builtin("value"), 100_000);
    assert_eq!(text_of(&s, &d, "r1"), None);
}

#[test]
fn toon_json_sends_the_fewer_tokens_of_minified_and_toon() {
    // r1: like objects, a table in TOON; r2: arrays of arrays, which TOON writes as nested
    // lists with a dash per item (more tokens than minified JSON); r3: not JSON.
    let mut s = Script::default();
    s.msg("sys", System, 10).msg("u1", User, 10);
    s.call("c1", "search", 10, true)
        .result("r1", "c1", "search", 400)
        .content(
            r#"[{"flight": "HAT069", "price": 121}, {"flight": "HAT083", "price": 100}, {"flight": "HAT110", "price": 95}]"#,
        );
    s.call("c2", "pairs", 10, true)
        .result("r2", "c2", "pairs", 400)
        .content(r#"[[1, 2], [3, 4], [5, 6], [7, 8]]"#);
    s.call("c3", "bash", 10, true)
        .result("r3", "c3", "bash", 60)
        .content("total 0\n  a  b  ");
    s.msg("a1", Assistant, 10);
    let counter = crate::tokens::TokenCounter::for_model(Some("gpt-4o"));
    let table = "[3]{flight,price}:\n  HAT069,121\n  HAT083,100\n  HAT110,95";
    let minified_pairs = "[[1,2],[3,4],[5,6],[7,8]]";
    let pairs_as_toon = crate::policy::compress::toon_json(minified_pairs).expect("JSON");
    assert!(counter.count(&pairs_as_toon) > counter.count(minified_pairs));

    let mut policy = builtin("value");
    policy.compress.minify_json = true;
    policy.compress.toon_json = true;
    let d = s.decide(policy.clone(), 100_000);
    assert_eq!(text_of(&s, &d, "r1").as_deref(), Some(table));
    assert_eq!(text_of(&s, &d, "r2").as_deref(), Some(minified_pairs));
    assert_eq!(text_of(&s, &d, "r3"), None);
    // TOON alone: the table still; nothing without the setting.
    policy.compress.minify_json = false;
    let d = s.decide(policy, 100_000);
    assert_eq!(text_of(&s, &d, "r1").as_deref(), Some(table));
    let d = s.decide(builtin("value"), 100_000);
    assert_eq!(text_of(&s, &d, "r1"), None);
}

#[test]
fn a_minified_result_can_still_be_compacted_over_budget() {
    let mut s = Script::default();
    s.msg("sys", System, 10).msg("u1", User, 10);
    let flights: Vec<String> = (0..8)
        .map(|i| format!(r#"{{"flight": "HAT{i:03}"}}"#))
        .collect();
    s.call("c1", "search", 10, true)
        .result("r1", "c1", "search", 400)
        .content(&format!("[{}]", flights.join(", ")));
    s.msg("a1", Assistant, 10)
        .msg("u2", User, 10)
        .msg("a2", Assistant, 10);
    let policy = {
        let mut p = builtin("value-compress");
        p.compress.minify_json = true;
        p.protect.recent_messages = 1;
        p
    };
    let d = s.run(&mut engine(policy.clone(), 100_000), &[4, s.chunks.len()]);
    assert!(text_of(&s, &d[1], "r1").is_some_and(|t| t.contains(r#"{"flight":"HAT007"}"#)));
    // One token over budget: `compress.json` cuts the array (the first 5 and a count of the
    // rest), from the original, instead of evicting anything.
    let budget = u32::try_from(d[1].tokens).expect("a small context") - 1;
    let d = s.run(&mut engine(policy, budget), &[4, s.chunks.len()]);
    assert_eq!(s.keys(&d[1]), ["sys", "u1", "c1", "r1", "a1", "u2", "a2"]);
    let cut = text_of(&s, &d[1], "r1").expect("r1 compacted, not evicted");
    assert!(cut.contains(r#""... 3 more""#), "{cut}");
}

#[test]
fn a_tool_rule_clears_its_results_after_n_calls() {
    let s = searches();
    let rule = ToolRule {
        clear_after_calls: Some(1),
        ..ToolRule::default()
    };
    let mut e = engine(with_tool("bash", rule), 100_000);
    // r2 arrives for call 0; at call 1 it is 1 call old (kept), at call 2 older: cleared.
    let d = s.run(&mut e, &[6, 7, s.chunks.len()]);
    assert_eq!(text_of(&s, &d[1], "r2"), None);
    assert_eq!(
        text_of(&s, &d[2], "r2").as_deref(),
        Some("[tool result cleared: bash (300 tokens)]")
    );
}

#[test]
fn never_compress_a_tool_spares_it_from_clearing_and_compression() {
    let s = searches();
    let mut policy = with_tool(
        "web_search",
        ToolRule {
            compress: false,
            ..ToolRule::default()
        },
    );
    policy.compress.clear_tool_results_after = Some(0);
    let mut e = engine(policy, 100_000);
    let d = s.run(&mut e, &[6, s.chunks.len()]);
    assert_eq!(
        text_of(&s, &d[1], "r1"),
        None,
        "web_search results are never compressed"
    );
    assert!(
        text_of(&s, &d[1], "r2").is_some(),
        "bash results are cleared as usual"
    );
}

#[test]
fn quotas_by_value_give_up_the_least_valuable_unit_not_the_oldest() {
    let s = searches();
    let mut policy = builtin("window");
    // Tool results may hold 500 of 100,000 tokens: one of r1 (400) and r2 (300) must go.
    policy.quotas.insert(ToolResult, 0.005);
    let oldest = s.decide(policy.clone(), 100_000);
    assert!(
        !s.keys(&oldest).contains(&"r1".to_string()),
        "oldest first: r1 goes"
    );
    policy.quota_order = QuotaOrder::Value;
    let mut e = engine(policy, 100_000);
    for c in &s.chunks {
        e.add(c);
    }
    // The bash call and its output are labelled useless (value 0): that unit goes first.
    e.label(s.id("c2"), Some(Label::Useless));
    e.label(s.id("r2"), Some(Label::Useless));
    let keys = s.keys(&e.context(None));
    assert!(
        keys.contains(&"r1".to_string()) && !keys.contains(&"r2".to_string()),
        "{keys:?}"
    );
}

#[test]
fn size_exponent_zero_gives_up_small_chatter_before_a_large_valuable_result() {
    let mut s = Script::default();
    s.msg("sys", System, 10)
        .msg("u1", User, 10)
        .msg("a0", Assistant, 10)
        .msg("a1", Assistant, 10);
    s.call("c1", "search", 10, true)
        .result("r1", "c1", "search", 400);
    s.msg("a2", Assistant, 10).msg("u2", User, 10);
    let run = |exponent: Option<f32>| {
        let mut policy = builtin("value");
        policy.size_exponent = exponent;
        let mut e = engine(policy, 455);
        for c in &s.chunks {
            e.add(c);
        }
        // The host's values: the result and its call are worth much, the chatter little.
        for (key, value) in [
            ("u1", 0.9),
            ("a0", 0.1),
            ("a1", 0.1),
            ("c1", 0.9),
            ("r1", 0.9),
        ] {
            e.set_value(s.id(key), Some(value));
        }
        s.keys(&e.context(None))
    };
    // Per token (the default): the 410-token pair is worth less per token than the chatter.
    let per_token = run(None);
    assert!(!per_token.contains(&"r1".to_string()), "{per_token:?}");
    assert_eq!(run(Some(1.0)), per_token);
    // Value alone: the chatter goes and the result stays.
    let by_value = run(Some(0.0));
    assert!(by_value.contains(&"r1".to_string()), "{by_value:?}");
    assert!(!by_value.contains(&"a0".to_string()), "{by_value:?}");
}

/// u1 and a1 100 and 90 seconds before u2.
fn timed() -> Script {
    let mut s = Script::default();
    s.msg("sys", System, 10)
        .msg("u1", User, 10)
        .at("2026-12-01T10:00:00Z")
        .msg("a1", Assistant, 10)
        .at("2026-12-01T10:00:10Z")
        .msg("u2", User, 10)
        .at("2026-12-01T10:01:40Z");
    s
}

#[test]
fn max_age_in_seconds_reads_the_traces_own_clock() {
    let mut s = Script::default();
    s.msg("sys", System, 10)
        .msg("u1", User, 10)
        .at("2026-12-01T10:00:00Z")
        .msg("a1", Assistant, 10)
        .at("2026-12-01T10:00:10Z")
        .msg("u2", User, 10)
        .at("2026-12-01T10:00:20Z")
        .msg("a2", Assistant, 10)
        .at("2026-12-01T10:00:30Z")
        .msg("u3", User, 10)
        .at("2026-12-01T10:01:40Z");
    let mut policy = builtin("window");
    policy.max_age_seconds = Some(95.0);
    // u1 is 100 s old: out; a1 (90 s) may stay, but the context would start on it, so it
    // goes too. The system prompt has no time: it never ages.
    assert_eq!(
        s.keys(&s.decide(policy.clone(), 10_000)),
        ["sys", "u2", "a2", "u3"]
    );
    policy.max_age_seconds = Some(50.0);
    // Everything but u3 (0 s) is older than 50 s.
    assert_eq!(s.keys(&s.decide(policy, 10_000)), ["sys", "u3"]);
}

#[test]
fn units_worth_enough_are_exempt_from_max_age() {
    let s = timed();
    let mut policy = builtin("window");
    policy.max_age_seconds = Some(50.0);
    policy.age_exempt_value = Some(0.01);
    let mut e = engine(policy, 10_000);
    for c in &s.chunks {
        e.add(c);
    }
    e.label(s.id("a1"), Some(Label::Useless));
    let u1 = e.value_engine().values(&[s.id("u1")], 0, None, None)[0];
    assert!(
        u1 >= 0.01,
        "premise: an unlabelled user turn is worth more than 0.01 ({u1})"
    );
    // a1 (value 0) ages out; u1 is exempt.
    assert_eq!(s.keys(&e.context(None)), ["sys", "u1", "u2"]);
}

#[test]
fn a_value_preset_is_selected_by_key() {
    let p = PolicyConfig::parse(r#"{"strategy": "value", "value_preset": "coding-agent"}"#)
        .expect("a known preset");
    assert_eq!(
        p.value,
        ValueConfig::preset("coding-agent").expect("listed")
    );
    let toml = "strategy = \"value\"\nvalue_preset = \"support-bot\"\n";
    assert_eq!(
        PolicyConfig::parse(toml).expect("toml").value,
        ValueConfig::preset("support-bot").expect("listed")
    );
    let err = PolicyConfig::parse(r#"{"value_preset": "lawyer"}"#).expect_err("unknown");
    assert!(
        err.to_string().contains("support-bot, coding-agent"),
        "{err}"
    );
    let both = r#"{"value_preset": "research", "value": {"popularity_scale": 99}}"#;
    assert!(matches!(
        PolicyConfig::parse(both),
        Err(PolicyError::Parse { .. })
    ));
    // The exported policy replays the same.
    assert_eq!(PolicyConfig::parse(&p.to_json()).expect("round trip"), p);
}

#[test]
fn a_host_scorers_values_replace_the_engines_and_protection_still_holds() {
    let s = searches();
    let mut policy = builtin("window");
    policy.value_threshold = Some(0.5);
    let mut e = engine(policy, 100_000);
    let _ = s.run(&mut e, &[6]);
    for c in &s.chunks[..6] {
        e.set_value(c.id, Some(1.0));
    }
    // The host says the web search is worthless, and so is the system prompt: the search
    // (call and result together) goes; the system prompt is protected whatever its value.
    for key in ["sys", "c1", "r1"] {
        e.set_value(s.id(key), Some(0.0));
    }
    for c in &s.chunks[6..] {
        e.add(c);
    }
    let keys = s.keys(&e.context(None));
    assert_eq!(keys, ["sys", "u1", "c2", "r2", "a1", "u2"]);
}

#[test]
fn a_policys_own_labels_apply_as_their_chunks_arrive_and_round_trip() {
    let s = searches();
    // Without labels, window at 500 drops u1 and the web search, then the bash pair and a1
    // to start on a user message.
    assert_eq!(s.keys(&s.decide(builtin("window"), 500)), ["sys", "u2"]);
    // Labelled important, the web search call (and so its result) stays; the bash pair
    // goes instead, and the context may start on the kept, pinned pair.
    let mut policy = builtin("window");
    policy.labels.insert("c1".into(), Label::Important);
    assert_eq!(
        s.keys(&s.decide(policy.clone(), 500)),
        ["sys", "c1", "r1", "a1", "u2"]
    );
    let json = policy.to_json();
    assert!(json.contains(r#""c1": "important""#), "{json}");
    assert_eq!(PolicyConfig::parse(&json).expect("round trip"), policy);
}

/// An airline agent's run: a reservation looked up, then replies that restate it, add a fact of
/// their own, hold no fact at all, and echo only each other.
fn replies() -> Script {
    let mut s = Script::default();
    s.msg("sys", System, 10).msg("u1", User, 10);
    s.content("Please cancel my reservation ABC123.");
    s.call("c1", "get_reservation", 10, true)
        .result("r1", "c1", "get_reservation", 40)
        .content(r#"{"reservation_id": "ABC123", "flight": "HAT069", "date": "2024-05-15"}"#);
    s.msg("a1", Assistant, 10)
        .content("Reservation ABC123 is on flight HAT069 on 2024-05-15.");
    s.msg("u2", User, 10).content("Yes, cancel it.");
    s.msg("a2", Assistant, 10)
        .content("Done. Your refund number is RF98765.");
    s.msg("a3", Assistant, 10)
        .content("Is there anything else?");
    s.msg("a4", Assistant, 10)
        .content("Your voucher is VX4411.");
    s.msg("a5", Assistant, 10)
        .content("To repeat: voucher VX4411.");
    s.msg("u3", User, 10).content("No, thanks.");
    s
}

fn echoing(runs: RunKind) -> PolicyConfig {
    let mut p = builtin("window");
    p.evict_echoed_replies = Some(runs);
    p
}

#[test]
fn echoed_replies_go_once_seen_and_replies_with_a_fact_of_their_own_stay() {
    let s = replies();
    let all = s.chunks.len();
    let mut e = engine(echoing(RunKind::Agent), 100_000);
    let d = s.run(&mut e, &[all - 1, all]);
    // Call 0: the model has not seen any reply as input yet: all are sent.
    assert_eq!(s.keys(&d[0]).len(), all - 1);
    // Call 1: a1 restates r1, a3 holds no fact, a4 is echoed by a5 (a5 is then the only one
    // holding VX4411, so it stays); a2's refund number is nowhere else.
    assert_eq!(
        s.keys(&d[1]),
        ["sys", "u1", "c1", "r1", "u2", "a2", "a5", "u3"]
    );
    // Off, or for conversations only, nothing goes under budget.
    for runs in [None, Some(RunKind::Conversation)] {
        let mut p = builtin("window");
        p.evict_echoed_replies = runs;
        assert_eq!(s.decide(p, 100_000).entries.len(), all);
    }
}

#[test]
fn act_from_holds_echoed_replies_and_the_threshold_until_the_context_fills_that_share() {
    let s = replies();
    let all = s.chunks.len();
    let total: u32 = s.chunks.iter().map(|c| c.tokens).sum();
    let waiting = |mut p: PolicyConfig| {
        p.act_from = Some(0.5);
        p
    };
    let threshold = |p: &mut PolicyConfig| {
        p.value_threshold = Some(0.99);
        p.protect.recent_messages = 0;
    };
    // The whole run (its chunks and their framing) fits in half the budget: neither rule gives
    // anything up.
    let mut p = waiting(echoing(RunKind::Agent));
    assert_eq!(
        s.run(&mut engine(p.clone(), 4 * total), &[all - 1, all])[1]
            .entries
            .len(),
        all
    );
    threshold(&mut p);
    assert_eq!(
        s.run(&mut engine(p, 4 * total), &[all - 1, all])[1]
            .entries
            .len(),
        all
    );
    // Past half of it, under it, both act as without it.
    let budget = total * 3 / 2;
    let d = s.run(
        &mut engine(waiting(echoing(RunKind::Agent)), budget),
        &[all - 1, all],
    );
    assert_eq!(
        s.keys(&d[1]),
        ["sys", "u1", "c1", "r1", "u2", "a2", "a5", "u3"]
    );
    let mut p = waiting(builtin("window"));
    threshold(&mut p);
    let d = s.run(&mut engine(p, budget), &[all - 1, all]);
    assert!(d[1].entries.len() < all - 1, "{:?}", s.keys(&d[1]));
    // Neither waits without it, and a budget-bound policy says so.
    assert_eq!(echoing(RunKind::Agent).untouched_below(), None);
    assert_eq!(
        waiting(echoing(RunKind::Agent)).untouched_below(),
        Some(0.5)
    );
}

#[test]
fn a_reply_is_matched_against_the_text_its_sources_are_sent_as() {
    // The lookup's result cleared: the facts a1 restated are no longer sent, so a1 stays.
    let s = replies();
    let all = s.chunks.len();
    let mut p = echoing(RunKind::Any);
    p.compress.clear_tool_results_after = Some(0);
    let d = s.run(&mut engine(p, 100_000), &[all - 1, all]);
    assert_eq!(
        s.keys(&d[1]),
        ["sys", "u1", "c1", "r1", "a1", "u2", "a2", "a5", "u3"]
    );
}

/// sys, u1 (large), then `units` agent units (replies, and tool calls with their results), u2.
fn agent_units_after_a_large_question(units: usize) -> Script {
    let mut s = Script::default();
    s.msg("sys", System, 10).msg("u1", User, 200);
    for k in 0..units {
        if k % 2 == 0 {
            s.msg(&format!("a{k}"), Assistant, 10);
        } else {
            s.call(&format!("c{k}"), "bash", 10, true).result(
                &format!("r{k}"),
                &format!("c{k}"),
                "bash",
                10,
            );
        }
    }
    s.msg("u2", User, 10);
    s
}

#[test]
fn the_context_starts_on_a_user_message_however_many_agent_units_lead_it() {
    // The window gives up u1 alone; the agent units it leaves in front of u2 go too. From one
    // to seven units: the first few are found one by one, more are listed together.
    for units in 1..=7 {
        let s = agent_units_after_a_large_question(units);
        let d = s.decide(builtin("window"), 150);
        assert_eq!(s.keys(&d), ["sys", "u2"], "{units} leading units");
    }
    // A pinned unit stops it: what follows stays.
    let s = agent_units_after_a_large_question(7);
    let mut policy = builtin("window");
    policy.labels.insert("c3".into(), Label::Important);
    let d = s.decide(policy, 150);
    assert_eq!(
        s.keys(&d),
        ["sys", "c3", "r3", "a4", "c5", "r5", "a6", "u2"],
        "stops at the pinned unit"
    );
}
