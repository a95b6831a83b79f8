//! Tests of the analysis: figures against the core's own results.

use super::*;
use crate::builder::{Message, Part, TraceBuilder};
use crate::policy::PolicyConfig;
use crate::simulate::simulate;
use crate::tokens::{count_trace, TokenCounter};

fn tool_trace() -> Trace {
    let mut b = TraceBuilder::new("t", "example");
    b.set_model(Some("gpt-4o".into()));
    b.push_message(Message::text("system", "You are an airline agent."), None);
    b.push_message(
        Message::text("user", "Please cancel my reservation ZFA04Y today."),
        None,
    );
    for turn in 0..6 {
        let mut call = Message::text("assistant", "");
        call.parts = vec![Part::ToolCall {
            id: format!("call_{turn}"),
            name: "get_reservation_details".into(),
            arguments: format!("{{\"reservation_id\": \"ZFA04Y\", \"turn\": {turn}}}"),
        }];
        b.push_message(call, None);
        let mut result = Message::text("tool", "");
        result.parts = vec![Part::ToolResult {
            id: format!("call_{turn}"),
            name: Some("get_reservation_details".into()),
            content: format!(
                "{{\"reservation_id\": \"ZFA04Y\", \"flight\": \"HAT{}36\", \"price\": {}, \"notes\": \"{}\"}}",
                turn,
                400 + turn * 111,
                "lorem ipsum dolor sit amet ".repeat(20)
            ),
        }];
        b.push_message(result, None);
        b.push_message(
            Message::text(
                "assistant",
                format!("Flight HAT{turn}36 costs {}.", 400 + turn * 111),
            ),
            None,
        );
        b.push_message(Message::text("user", format!("ok, next {turn}")), None);
    }
    b.push_message(Message::text("assistant", "Cancelled ZFA04Y."), None);
    b.reconstruct_calls();
    let (mut trace, warnings) = b.finish();
    assert!(warnings.is_empty(), "{warnings:?}");
    count_trace(&mut trace, &TokenCounter::for_model(Some("gpt-4o")));
    trace
}

#[test]
fn numbers_come_from_the_summary_and_add_up() {
    let trace = tool_trace();
    let prices = PriceTable::builtin();
    let a = analyze(&trace, &prices, &AnalysisOptions::default());
    let s = summarize(&trace, &prices, 0);
    // One computation of the shared figures, so they cannot drift apart.
    assert_eq!(a.summary.figures, s.figures);
    // The web app's worker sends the analysis as JSON: the flattened figures come back whole.
    let json = serde_json::to_string(&a).expect("an analysis serializes");
    let back: Analysis = serde_json::from_str(&json).expect("and deserializes");
    assert_eq!(back.summary, a.summary);
    let value: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(value["summary"]["encoding"], "o200k_base");
    assert_eq!(
        a.summary.figures.counted_input_tokens,
        s.figures.counted_input_tokens
    );
    assert_eq!(a.summary.figures.cost_usd, s.figures.cost_usd);
    assert_eq!(a.calls.len(), trace.calls.len());
    for c in &a.calls {
        assert_eq!(
            c.by_category.iter().sum::<u64>() + c.framing,
            c.input_tokens
        );
    }
    let sum_in: u64 = a.calls.iter().map(|c| c.input_tokens).sum();
    assert_eq!(sum_in, s.figures.counted_input_tokens);
    let share: f64 = a.by_category.iter().map(|g| g.share).sum();
    assert!((share - 1.0).abs() < 1e-9, "{share}");
    let tokens: u64 = a.by_category.iter().map(|g| g.tokens).sum();
    assert_eq!(tokens, a.summary.total_tokens);
    assert_eq!(a.by_tool.len(), 1);
    assert_eq!(a.by_tool[0].name, "get_reservation_details");
    // Attributed cost of the chunks adds up to the categories'.
    let chunk_cost: f64 = a.chunks.iter().filter_map(|c| c.cost_usd).sum();
    let cat_cost: f64 = a.by_category.iter().filter_map(|g| g.cost_usd).sum();
    assert!((chunk_cost - cat_cost).abs() < 1e-12);
}

#[test]
fn rows_carry_calls_references_and_values() {
    let trace = tool_trace();
    let a = analyze(&trace, &PriceTable::builtin(), &AnalysisOptions::default());
    let system = &a.chunks[0];
    assert_eq!(system.category, Category::System);
    assert_eq!(system.first_call, Some(0));
    assert_eq!(system.last_call, Some(trace.calls.len() as u32 - 1));
    assert_eq!(system.calls_carried, trace.calls.len() as u32);
    // The user message with the reservation code is used by later tool calls.
    let user = &a.chunks[1];
    assert!(user.references > 0);
    assert_eq!(user.references as usize, user.used_at.len());
    assert!(a.edges.iter().any(|e| e.used == user.id));
    for c in &a.chunks {
        assert!((0.0..=1.0).contains(&c.value), "{c:?}");
        assert!(!c.explanation.is_empty());
    }
    // Every chunk the calls carry has a heatmap row covering its span; cells in range.
    for row in &a.heatmap {
        let c = &a.chunks[row.chunk as usize];
        assert_eq!(Some(row.first_call), c.first_call);
        let span = c.last_call.unwrap_or(0) - row.first_call + 1;
        assert_eq!(row.cells.len() as u32, span);
        // The chunk is in context at its first and last call.
        assert!(row.cells[0] > 0 && row.cells[row.cells.len() - 1] > 0);
    }
    // A tool result's value at its first call has no uses yet, later it does: the user's
    // message popularity grows over the run.
    let urow = a.heatmap.iter().find(|r| r.chunk == 1).expect("a row");
    assert_eq!(urow.cells.len(), trace.calls.len());
    assert_eq!(a.heatmap_total_rows, a.heatmap.len());
    // The row limit keeps the first rows and says how many there were.
    let limited = analyze(
        &trace,
        &PriceTable::builtin(),
        &AnalysisOptions {
            max_heatmap_rows: 3,
            ..AnalysisOptions::default()
        },
    );
    assert_eq!(limited.heatmap, a.heatmap[..3].to_vec());
    assert_eq!(limited.heatmap_total_rows, a.heatmap.len());
    // No rows wanted: none made, the count still right, the rest of the analysis unchanged.
    let none = analyze(
        &trace,
        &PriceTable::builtin(),
        &AnalysisOptions {
            max_heatmap_rows: 0,
            ..AnalysisOptions::default()
        },
    );
    assert!(none.heatmap.is_empty());
    assert_eq!(none.heatmap_total_rows, a.heatmap.len());
    assert_eq!((&none.summary, &none.chunks), (&a.summary, &a.chunks));
}

#[test]
fn simulation_matches_the_simulator_and_the_diff_adds_up() {
    let trace = tool_trace();
    let prices = PriceTable::builtin();
    let graph = detect(&trace);
    let policy = PolicyConfig::builtin("window").expect("builtin");
    let view = simulate_view(&trace, &graph, &policy, 300, &prices).expect("runs");
    let report = simulate(std::slice::from_ref(&trace), &policy, 300, &prices).expect("runs");
    assert_eq!(view.totals.input_tokens, report.totals.input_tokens);
    assert_eq!(view.totals.misses, report.totals.misses);
    assert_eq!(view.totals.cost_usd, report.traces[0].totals.cost_usd);
    assert!(view.totals.saved_tokens > 0);
    let last = trace.calls.len() as u32 - 1;
    let diff = context_at(&trace, &graph, &policy, 300, &prices, last)
        .expect("runs")
        .expect("a call");
    assert_eq!(diff.tokens, view.calls[last as usize].input_tokens);
    assert!(diff.lines.iter().any(|l| l.fate == Fate::Dropped));
    assert!(diff.lines.iter().any(|l| l.fate == Fate::Kept));
    let sent: u64 = diff.lines.iter().map(|l| u64::from(l.sent_tokens)).sum();
    // The context's tokens are its entries plus the reply priming.
    assert_eq!(sent + 3, diff.tokens);
    assert!(context_at(&trace, &graph, &policy, 300, &prices, last + 1)
        .expect("runs")
        .is_none());
}

#[test]
fn empty_trace_is_fine() {
    let b = TraceBuilder::new("empty", "example");
    let (trace, _) = b.finish();
    let a = analyze(&trace, &PriceTable::builtin(), &AnalysisOptions::default());
    assert_eq!(a.summary.figures.calls, 0);
    assert!(a.chunks.is_empty() && a.heatmap.is_empty() && a.edges.is_empty());
    assert_eq!(a.summary.mean_value, 0.0);
    let round: Analysis =
        serde_json::from_str(&serde_json::to_string(&a).expect("json")).expect("back");
    assert_eq!(round, a);
    assert!(trace_entries(&[trace], &PriceTable::builtin())[0].calls == 0);
}

#[test]
fn a_policys_summaries_are_reported_as_compactions_of_the_replay() {
    let trace = tool_trace();
    let prices = PriceTable::builtin();
    let graph = detect(&trace);
    let mut policy = PolicyConfig::builtin("window").expect("builtin");
    policy.compress.summary = Some(Default::default());
    let view = simulate_view(&trace, &graph, &policy, 300, &prices).expect("runs");
    let summaries =
        super::simulated_compactions(&trace, &graph, &policy, 300, &prices).expect("runs");
    assert!(
        !summaries.is_empty(),
        "the window summarizes what it evicts at 300 tokens"
    );
    let diff_at = |call: u32| {
        context_at(&trace, &graph, &policy, 300, &prices, call)
            .expect("runs")
            .expect("a call")
    };
    for (n, s) in summaries.iter().enumerate() {
        assert_eq!(s.index, n);
        assert_eq!(s.trigger.as_deref(), Some("policy"));
        assert!(s.replaced_chunks > 0 && s.replaced_tokens > 0);
        // The summary is in the context the policy sends at its first call.
        let diff = diff_at(s.first_call);
        assert!(diff
            .lines
            .iter()
            .any(|l| l.chunk.is_none() && l.sent_tokens == s.summary_tokens));
        // Kept and lost partition what the covered chunks held, by kind.
        let tallied: u32 = [s.identifiers, s.paths, s.commands, s.numbers, s.urls]
            .iter()
            .map(|t| t.replaced)
            .sum();
        assert_eq!(tallied as usize, s.kept.len() + s.lost.len());
        // Every later miss it caused is a miss of the replay at that call.
        for m in &s.later_misses {
            assert!(m.call >= s.first_call);
            assert!(
                !view.calls[m.call as usize].misses.is_empty(),
                "call {} misses {:?} in the summary's report but not in the replay",
                m.call,
                m.evidence
            );
        }
    }
    // The tool results' flight numbers (HAT036...) are items of the covered chunks.
    assert!(summaries
        .iter()
        .flat_map(|s| s.kept.iter().chain(&s.lost))
        .any(|i| i.text.starts_with("HAT")));
}
