//! The static report (`memlens_report`) on the cache-breaks fixture: a snapshot of the page with
//! each inline SVG reduced to its element counts (plotters' exact coordinates are not the point;
//! the structure and every figure are), and the cache breaks it lists equal `diff`'s.

use crate::{import_path, root};
use memlens_core::analysis::{analyze, AnalysisOptions};
use memlens_core::cost::PriceTable;
use memlens_core::diff::{call_changes, PrefixCause};
use memlens_core::policy::PolicyConfig;
use memlens_core::simulate::simulate;
use memlens_core::tokens::{count_trace, TokenCounter};
use memlens_report::{render, PolicyResult, ReportInput};

/// Each `<svg …>…</svg>` as `<svg rect=N text=M path=K/>`.
fn collapse_svgs(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find("</svg>")
            .map_or(rest.len(), |e| start + e + 6);
        let svg = &rest[start..end];
        let count = |tag: &str| svg.matches(tag).count();
        out.push_str(&format!(
            "<svg rect={} text={} path={}/>",
            count("<rect"),
            count("<text"),
            count("<polyline") + count("<path")
        ));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn cache_breaks_report() {
    let path = root().join("tests/fixtures/openai/cache-breaks.jsonl");
    let mut traces = import_path(&path).expect("imports").traces;
    for t in &mut traces {
        let counter = TokenCounter::for_model(t.main_model());
        count_trace(t, &counter);
    }
    let prices = PriceTable::builtin();
    let analyses: Vec<_> = traces
        .iter()
        .map(|t| analyze(t, &prices, &AnalysisOptions::default()))
        .collect();
    let mut comparison = Vec::new();
    for name in ["window", "value"] {
        let policy = PolicyConfig::builtin(name).expect("built in");
        for budget in [300, 600] {
            let r = simulate(&traces, &policy, budget, &prices).expect("replays");
            comparison.push(PolicyResult {
                policy: name.into(),
                budget,
                totals: r.totals,
            });
        }
    }
    let html = render(&ReportInput {
        source: "cache-breaks.jsonl",
        traces: &analyses,
        detail: &[0],
        comparison: &comparison,
        generator: "memlens (test)",
    });

    // The breaks table lists the calls `diff` says broke, in order.
    let breaks: Vec<u32> = call_changes(&traces[0], &prices)
        .iter()
        .filter(|c| !matches!(c.cause, PrefixCause::FirstCall | PrefixCause::Intact))
        .map(|c| c.call)
        .collect();
    assert_eq!(breaks, vec![3, 5, 8]);
    let table = &html[html.find("id=\"breaks\"").expect("a breaks table")..];
    let table = &table[..table.find("</table>").expect("closed")];
    let listed: Vec<u32> = table
        .split("<tr><td class=\"n\">")
        .skip(1)
        .filter_map(|row| row.split('<').next()?.parse().ok())
        .collect();
    assert_eq!(listed, breaks);

    insta::assert_snapshot!(collapse_svgs(&html));
}
