use super::*;
use memlens_core::analysis::{analyze, AnalysisOptions};
use memlens_core::builder::{Message, Part, TraceBuilder};
use memlens_core::cost::PriceTable;
use memlens_core::{tokens, Trace};

fn trace(id: &str, turns: usize) -> Trace {
    let mut b = TraceBuilder::new(id, "example");
    b.set_model(Some("gpt-4o".into()));
    b.push_message(Message::text("system", "You book flights."), None);
    for i in 0..turns {
        b.push_message(
            Message::text(
                "user",
                format!("Rebook <img src=x onerror=alert({i})> ZFA0{i}Y"),
            ),
            None,
        );
        let mut call = Message::text("assistant", "");
        call.parts = vec![Part::ToolCall {
            id: format!("c{i}"),
            name: "get_<b>reservation</b>".into(),
            arguments: format!("{{\"id\":\"ZFA0{i}Y\"}}"),
        }];
        b.push_message(call, None);
        let mut result = Message::text("tool", "");
        result.parts = vec![Part::ToolResult {
            id: format!("c{i}"),
            name: None,
            content: format!("reservation ZFA0{i}Y: flight HAT{i}01 on Friday"),
        }];
        b.push_message(result, None);
        b.push_message(
            Message::text("assistant", format!("ZFA0{i}Y is on HAT{i}01.")),
            None,
        );
    }
    b.reconstruct_calls();
    let (mut t, _) = b.finish();
    tokens::count_trace(&mut t, &tokens::TokenCounter::for_model(Some("gpt-4o")));
    t
}

fn analyses() -> Vec<Analysis> {
    let prices = PriceTable::builtin();
    [trace("small", 2), trace("large", 6)]
        .iter()
        .map(|t| analyze(t, &prices, &AnalysisOptions::default()))
        .collect()
}

#[test]
fn page_is_self_contained_and_escapes_content() {
    let traces = analyses();
    let html = render(&ReportInput {
        source: "a <b>.json",
        traces: &traces,
        detail: &costliest(&traces, 2),
        comparison: &[],
        generator: "memlens test",
    });
    assert!(!html.contains("<script"), "no script");
    assert!(!html.contains("<img"), "content is never markup");
    assert!(html.contains("&lt;img src=x onerror=alert(0)&gt;"));
    assert!(!html.contains("get_<b>"), "tool names are text");
    assert!(html.contains("<title>MemLens report — a &lt;b&gt;.json</title>"));
    assert!(html.contains("get_&lt;b&gt;reservation&lt;/b&gt;"));
    for needle in ["http://", "https://", "src=\"", "href=\""] {
        let allowed = html.matches("http://www.w3.org").count();
        assert_eq!(
            html.matches(needle).count(),
            if needle == "http://" { allowed } else { 0 },
            "{needle}: nothing is loaded"
        );
    }
    // Each detailed trace: growth, tools and heatmap charts.
    assert_eq!(html.matches("<details class=\"trace\"").count(), 2);
    assert_eq!(html.matches("<svg").count(), 6);
}

#[test]
fn figures_are_the_analysis_figures() {
    let traces = analyses();
    let html = render(&ReportInput {
        source: "t",
        traces: &traces,
        detail: &[1],
        comparison: &[],
        generator: "memlens test",
    });
    let counted: u64 = traces
        .iter()
        .map(|a| a.summary.figures.counted_input_tokens)
        .sum();
    assert!(html.contains(&format!(
        "<b>{}</b><span>input tokens sent (counted)",
        int(counted)
    )));
    let large = &traces[1].summary.figures;
    assert!(html.contains(&format!(
        "large — {} calls, {} input tokens",
        large.calls,
        int(large.counted_input_tokens)
    )));
    assert!(
        !html.contains("small — "),
        "only the chosen trace is detailed"
    );
}

#[test]
fn costliest_orders_by_cost_then_tokens() {
    let traces = analyses();
    assert_eq!(costliest(&traces, 5), vec![1, 0]);
    assert_eq!(costliest(&traces, 1), vec![1]);
}

#[test]
fn policy_chart_has_a_bar_per_policy_and_budget() {
    let traces = analyses();
    let totals = |saved: i64| Totals {
        calls: 8,
        input_tokens: (1000 - saved) as u64,
        full_input_tokens: 1000,
        saved_tokens: saved,
        ..Totals::default()
    };
    let comparison: Vec<PolicyResult> = ["window", "value"]
        .iter()
        .flat_map(|p| {
            [2000u32, 4000, 8000].map(|budget| PolicyResult {
                policy: p.to_string(),
                budget,
                totals: totals(i64::from(budget / 100)),
            })
        })
        .collect();
    let html = render(&ReportInput {
        source: "t",
        traces: &traces,
        detail: &[],
        comparison: &comparison,
        generator: "memlens test",
    });
    let start = html
        .find("id=\"policy-chart\"")
        .expect("the policy chart is drawn");
    let svg = &html[start
        ..html[start..]
            .find("</svg>")
            .map_or(html.len(), |e| start + e)];
    // Per budget (one series colour each): two bars, one per policy, of equal height, plus the
    // legend's swatch; the bars' heights in proportion to the share saved (2%, 4%, 8%).
    let attr = |rect: &str, name: &str| -> Option<f64> {
        let start = rect.find(&format!(" {name}=\""))? + name.len() + 3;
        rect[start..].split('"').next()?.parse().ok()
    };
    let mut heights = Vec::new();
    for color in &charts::SERIES[..3] {
        let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", color.0, color.1, color.2);
        let mut h: Vec<f64> = svg
            .split("<rect")
            .filter(|r| r.split("/>").next().is_some_and(|r| r.contains(&fill)))
            .filter_map(|r| attr(r, "height"))
            .collect();
        h.sort_by(f64::total_cmp);
        assert_eq!(
            h.len(),
            3,
            "{fill}: two bars and a legend swatch, got {h:?}"
        );
        assert_eq!(h[1], h[2], "{fill}: both policies saved the same");
        heights.push(h[2]);
    }
    for (i, expected) in [(1, 2.0), (2, 4.0)] {
        let ratio = heights[i] / heights[0];
        assert!((ratio - expected).abs() < 0.15, "bar heights {heights:?}");
    }
    assert!(html.contains("<td>window</td><td class=\"n\">2,000</td>"));
    assert!(html.contains("2.0%"), "saved share: 20 of 1,000 tokens");
}
