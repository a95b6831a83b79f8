//! One self-contained HTML page about a set of traces, for CI artifacts and sharing: what
//! `memlens report trace.json -o report.html` writes.
//!
//! The page needs no script and loads nothing: styles are inline, charts are inline SVG drawn by
//! `plotters` (growth by category, cost by tool, the value heatmap, the policy comparison), and
//! every piece of trace content (previews, tool names, ids) is escaped, shown as text.
//!
//! Pure, like the core: the host analyzes the traces ([`memlens_core::analysis::analyze`]),
//! replays the policies ([`memlens_core::simulate::simulate`]) and writes the string wherever it
//! wants. Text is measured with plotters' native estimate on every host (`text.rs`: plotters'
//! wasm32 font backend measures through the DOM, which a Web Worker has not), so the page is the
//! same bytes from the CLI and from the web app's worker.
//!
//! ```
//! use memlens_core::analysis::{analyze, AnalysisOptions};
//! use memlens_core::builder::{Message, TraceBuilder};
//! use memlens_core::{cost::PriceTable, tokens};
//! use memlens_report::{render, ReportInput};
//!
//! let mut b = TraceBuilder::new("demo", "example");
//! b.set_model(Some("gpt-4o".into()));
//! b.push_message(Message::text("system", "You book flights."), None);
//! b.push_message(Message::text("user", "Rebook <ZFA04Y> to Friday."), None);
//! b.push_message(Message::text("assistant", "Done."), None);
//! b.reconstruct_calls();
//! let (mut trace, _) = b.finish();
//! tokens::count_trace(&mut trace, &tokens::TokenCounter::for_model(Some("gpt-4o")));
//! let analysis = analyze(&trace, &PriceTable::builtin(), &AnalysisOptions::default());
//!
//! let html = render(&ReportInput {
//!     source: "demo.json",
//!     traces: std::slice::from_ref(&analysis),
//!     detail: &[0],
//!     comparison: &[],
//!     generator: "memlens",
//! });
//! assert!(html.starts_with("<!DOCTYPE html>"));
//! assert!(!html.contains("<script"));
//! assert!(html.contains("&lt;ZFA04Y&gt;")); // content is text, never markup
//! ```

mod charts;
pub mod fmt;
mod text;

use charts::Svg;
use fmt::{escape, int, pct, truncate, usd};
use memlens_core::analysis::Analysis;
use memlens_core::diff::PrefixCause;
use memlens_core::simulate::Totals;
use std::fmt::Write;

/// One policy replayed at one budget over every trace of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyResult {
    /// Policy name.
    pub policy: String,
    /// Token budget.
    pub budget: u32,
    /// The replay's totals over every trace.
    pub totals: Totals,
}

/// What a report is made of.
#[derive(Debug, Clone, Copy)]
pub struct ReportInput<'a> {
    /// What the report is about (the file names), shown as its title.
    pub source: &'a str,
    /// Every trace, analyzed.
    pub traces: &'a [Analysis],
    /// The traces (indices into `traces`) shown in detail, with charts; the others are rows of
    /// the traces table.
    pub detail: &'a [usize],
    /// Policy replays over every trace, one per policy and budget (may be empty).
    pub comparison: &'a [PolicyResult],
    /// Who wrote the report (`memlens 0.1.0`), in the footer.
    pub generator: &'a str,
}

/// The policies a report compares unless told otherwise: MemLens' own, a plain window, and the
/// hindsight oracle as the bound (`memlens report` and the web app's Report button).
pub const DEFAULT_POLICIES: [&str; 5] = ["window", "value", "value-compress", "recall", "oracle"];

/// The budgets a report compares the policies at unless told otherwise.
pub const DEFAULT_BUDGETS: [u32; 3] = [2000, 4000, 8000];

/// Rows of the traces table; longer sets say how many were left out.
pub const TRACE_ROWS: usize = 500;

/// The `n` costliest traces (by cost, or counted input when unpriced), costliest first: the
/// default detail of a report.
pub fn costliest(traces: &[Analysis], n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..traces.len()).collect();
    let key = |i: usize| {
        let f = &traces[i].summary.figures;
        (f.cost_usd.unwrap_or(0.0), f.counted_input_tokens)
    };
    order.sort_by(|&a, &b| {
        let (ca, ta) = key(a);
        let (cb, tb) = key(b);
        cb.total_cmp(&ca).then(tb.cmp(&ta)).then(a.cmp(&b))
    });
    order.truncate(n);
    order
}

/// The report page.
pub fn render(input: &ReportInput<'_>) -> String {
    let mut page = String::with_capacity(64 * 1024);
    let title = format!("MemLens report — {}", input.source);
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    overview(&mut page, input);
    comparison(&mut page, input.comparison);
    for &i in input.detail {
        if let Some(a) = input.traces.get(i) {
            trace_detail(&mut page, a);
        }
    }
    let _ = write!(
        page,
        "<footer>Written by {}. Counted tokens are exact for the trace's model encoding; \
         costs use MemLens' dated price table.</footer>\n</main>\n</body>\n</html>\n",
        escape(input.generator)
    );
    page
}

const STYLE: &str = "
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;background:#f6f7f9;color:#1d2127}
main{max-width:920px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:22px;margin:8px 0 16px;overflow-wrap:anywhere}
h2{font-size:18px;margin:4px 0 8px;overflow-wrap:anywhere}
h3{font-size:15px;margin:18px 0 6px}
section,details{background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:12px 16px;margin:12px 0}
summary{cursor:pointer;font-weight:600;overflow-wrap:anywhere}
details.list{padding:0;border:0;margin:8px 0}
details.list>summary{font-size:15px}
table{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eceff2;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.text{overflow-wrap:anywhere;font-family:ui-monospace,monospace;font-size:12px}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:8px;margin:8px 0}
.figure{background:#f3f5f8;border-radius:6px;padding:6px 10px}
.figure b{display:block;font-size:17px;font-variant-numeric:tabular-nums}
.figure span{color:#5b6470;font-size:12px}
.chart svg{width:100%;height:auto;display:block}
.note{color:#5b6470;font-size:12px}
.legend{display:flex;flex-wrap:wrap;gap:4px 12px;font-size:12px;color:#5b6470}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}
footer{color:#5b6470;font-size:12px;margin-top:24px}
@media (prefers-color-scheme: dark){
 body{background:#15181c;color:#e3e6ea}
 section,details{background:#1d2126;border-color:#343a42}
 th,td{border-bottom-color:#2b3037}
 .figure{background:#252a31}
 .figure span,.note,.legend,footer{color:#9aa3ad}
 .chart svg{border-radius:6px}
}
";

fn figure(page: &mut String, value: &str, label: &str) {
    let _ = write!(
        page,
        "<div class=\"figure\"><b>{}</b><span>{}</span></div>",
        escape(value),
        escape(label)
    );
}

fn chart(page: &mut String, id: &str, svg: &Svg) {
    match svg {
        Ok(svg) => {
            let _ = write!(
                page,
                "<div class=\"chart\" id=\"{}\">{svg}</div>",
                escape(id)
            );
        }
        Err(e) => {
            let _ = write!(
                page,
                "<p class=\"note\">The chart could not be drawn: {}</p>",
                escape(e)
            );
        }
    }
}

/// Totals over every trace, and one row per trace.
fn overview(page: &mut String, input: &ReportInput<'_>) {
    let traces = input.traces;
    let sum = |f: &dyn Fn(&Analysis) -> u64| traces.iter().map(f).sum::<u64>();
    let calls = sum(&|a| a.summary.figures.calls as u64);
    let counted = sum(&|a| a.summary.figures.counted_input_tokens);
    let output = sum(&|a| a.summary.figures.counted_output_tokens);
    let reported: Option<u64> = traces
        .iter()
        .map(|a| a.summary.figures.reported_input_tokens)
        .try_fold(0u64, |acc, r| r.map(|r| acc + r));
    let cost: Option<f64> = traces
        .iter()
        .map(|a| a.summary.figures.cost_usd)
        .try_fold(0.0, |acc, c| c.map(|c| acc + c));
    let peak = traces
        .iter()
        .map(|a| a.summary.figures.peak_input_tokens)
        .max()
        .unwrap_or(0);
    page.push_str("<section id=\"overview\"><h2>Overview</h2><div class=\"figures\">");
    figure(page, &int(traces.len() as u64), "traces");
    figure(page, &int(calls), "LLM calls");
    figure(page, &int(counted), "input tokens sent (counted)");
    let unrecorded = sum(&|a| a.summary.figures.unrecorded_input_tokens);
    if unrecorded > 0 {
        figure(
            page,
            &int(unrecorded),
            "of which not in the log (unrecorded, estimated from reported usage)",
        );
    }
    figure(
        page,
        &reported.map_or_else(|| "not reported".into(), int),
        "input tokens reported",
    );
    figure(page, &int(output), "output tokens (counted)");
    figure(page, &int(peak), "largest input of any call");
    figure(page, &usd(cost), "cost");
    page.push_str("</div>");
    if traces.len() > 1 {
        let _ = write!(
            page,
            "<details class=\"list\"{}><summary>Traces ({})</summary>",
            if traces.len() <= 20 { " open" } else { "" },
            int(traces.len() as u64)
        );
        page.push_str(
            "<table id=\"traces\"><thead><tr><th>trace</th><th>model</th>\
             <th class=\"n\">calls</th><th class=\"n\">chunks</th><th class=\"n\">input sent</th>\
             <th class=\"n\">reported</th><th class=\"n\">peak</th><th class=\"n\">cost</th></tr></thead><tbody>",
        );
        for a in traces.iter().take(TRACE_ROWS) {
            let f = &a.summary.figures;
            let _ = write!(
                page,
                "<tr><td class=\"text\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                escape(&truncate(&f.id, 60)),
                escape(f.model.as_deref().unwrap_or("unknown")),
                int(f.calls as u64),
                int(f.chunks as u64),
                int(f.counted_input_tokens),
                f.reported_input_tokens.map_or_else(|| "–".into(), int),
                int(f.peak_input_tokens),
                usd(f.cost_usd)
            );
        }
        page.push_str("</tbody></table>");
        if traces.len() > TRACE_ROWS {
            let _ = write!(
                page,
                "<p class=\"note\">The first {TRACE_ROWS} of {} traces are listed.</p>",
                int(traces.len() as u64)
            );
        }
        page.push_str("</details>");
    }
    page.push_str("</section>\n");
}

/// The policies side by side at each budget.
fn comparison(page: &mut String, results: &[PolicyResult]) {
    let Some(svg) = charts::policies(results) else {
        return;
    };
    page.push_str(
        "<section id=\"policies\"><h2>Policies replayed on these traces</h2>\
         <p class=\"note\">Each policy decides every call's context within the budget; a miss is a \
         later output that used content the policy had left out.</p>",
    );
    chart(page, "policy-chart", &svg);
    page.push_str(
        "<table id=\"policy-table\"><thead><tr><th>policy</th><th class=\"n\">budget</th>\
         <th class=\"n\">input sent</th><th class=\"n\">saved</th><th class=\"n\">cost</th>\
         <th class=\"n\">saved $</th><th class=\"n\">calls with misses</th>\
         <th class=\"n\">violations</th><th class=\"n\">over budget</th></tr></thead><tbody>",
    );
    for r in results {
        let t = &r.totals;
        let _ = write!(
            page,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{} ({})</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            escape(&r.policy),
            int(r.budget),
            int(t.input_tokens),
            pct(t.saved_tokens as f64, t.full_input_tokens as f64),
            usd(t.cost_usd),
            usd(t.saved_usd),
            int(t.calls_with_misses),
            pct(t.calls_with_misses as f64, t.calls as f64),
            int(t.violations),
            int(t.over_budget_calls)
        );
    }
    page.push_str("</tbody></table></section>\n");
}

/// One trace: its figures, the charts, the costliest chunks, cache breaks and compactions.
fn trace_detail(page: &mut String, a: &Analysis) {
    let f = &a.summary.figures;
    let _ = write!(
        page,
        "<details class=\"trace\" open><summary>{} — {} calls, {} input tokens, {}</summary>",
        escape(&f.id),
        int(f.calls as u64),
        int(f.counted_input_tokens),
        usd(f.cost_usd)
    );
    page.push_str("<div class=\"figures\">");
    figure(page, f.model.as_deref().unwrap_or("unknown"), "model");
    figure(page, &f.encoding.to_string(), "encoding");
    figure(page, &int(f.chunks as u64), "chunks");
    figure(page, &int(f.peak_input_tokens), "largest input");
    if let Some(w) = f.context_window {
        figure(
            page,
            &pct(f.peak_input_tokens as f64, w as f64),
            "of the context window",
        );
    }
    figure(
        page,
        &format!("{:.2}", a.summary.mean_value),
        "mean chunk value",
    );
    page.push_str("</div>");
    for note in &a.summary.notes {
        let _ = write!(page, "<p class=\"note\">{}</p>", escape(note));
    }

    page.push_str("<h3>Growth by category</h3>");
    chart(page, "growth", &charts::growth(a));
    legend(page, a);
    if !a.compactions.is_empty() {
        page.push_str("<p class=\"note\">Red lines: compactions, before their first call.</p>");
    }

    page.push_str("<h3>By category</h3>");
    groups(page, "categories", &a.by_category);
    if let Some(svg) = charts::tools(a) {
        page.push_str("<h3>Cost by tool</h3>");
        chart(page, "tools", &svg);
        groups(page, "tool-table", &a.by_tool);
    }

    if !a.heatmap.is_empty() {
        let (svg, rows, per_column) = charts::heatmap(a);
        page.push_str("<h3>Value heatmap</h3><p class=\"note\">Each row a chunk (stripe: its category), each column a call; colour is the chunk's value at that call, blue (low) to yellow (high); blank where the call did not carry it.");
        if a.heatmap_total_rows > rows {
            let _ = write!(
                page,
                " The first {} of {} rows are drawn.",
                int(rows as u64),
                int(a.heatmap_total_rows as u64)
            );
        }
        if per_column > 1 {
            let _ = write!(
                page,
                " Each column is {per_column} calls, coloured by the highest value among them."
            );
        }
        page.push_str("</p>");
        chart(page, "heatmap", &svg);
    }

    costliest_chunks(page, a);
    cache_breaks(page, a);
    compactions(page, a);
    page.push_str("</details>\n");
}

fn legend(page: &mut String, a: &Analysis) {
    page.push_str("<div class=\"legend\">");
    for &c in &a.categories {
        let color = charts::category_color(c);
        let _ = write!(
            page,
            "<span><i class=\"swatch\" style=\"background:rgb({},{},{})\"></i>{}</span>",
            color.0,
            color.1,
            color.2,
            c.as_str()
        );
    }
    page.push_str("</div>");
}

fn groups(page: &mut String, id: &str, groups: &[memlens_core::analysis::Group]) {
    let _ = write!(
        page,
        "<table id=\"{id}\"><thead><tr><th>name</th><th class=\"n\">chunks</th><th class=\"n\">tokens</th>\
         <th class=\"n\">share</th><th class=\"n\">tokens × calls</th><th class=\"n\">cost</th></tr></thead><tbody>"
    );
    for g in groups {
        let _ = write!(
            page,
            "<tr><td class=\"text\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1}%</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            escape(&g.name),
            int(g.chunks as u64),
            int(g.tokens),
            g.share * 100.0,
            int(g.token_calls),
            usd(g.cost_usd)
        );
    }
    page.push_str("</tbody></table>");
}

/// Chunks listed by attributed cost.
const TOP_CHUNKS: usize = 10;

fn costliest_chunks(page: &mut String, a: &Analysis) {
    let mut order: Vec<_> = a.chunks.iter().collect();
    order.sort_by(|x, y| {
        y.cost_usd
            .unwrap_or(0.0)
            .total_cmp(&x.cost_usd.unwrap_or(0.0))
            .then(y.token_calls.cmp(&x.token_calls))
            .then(x.id.cmp(&y.id))
    });
    page.push_str(
        "<h3>Costliest chunks</h3><table id=\"chunks\"><thead><tr><th class=\"n\">#</th><th>category</th>\
         <th class=\"n\">tokens</th><th class=\"n\">calls</th><th class=\"n\">cost</th>\
         <th class=\"n\">value</th><th>content</th></tr></thead><tbody>",
    );
    for c in order.into_iter().take(TOP_CHUNKS) {
        let category = match &c.tool_name {
            Some(tool) => format!("{} ({tool})", c.category.as_str()),
            None => c.category.as_str().to_string(),
        };
        let _ = write!(
            page,
            "<tr><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{:.2}</td><td class=\"text\">{}</td></tr>",
            c.id,
            escape(&category),
            int(c.tokens),
            int(c.calls_carried),
            usd(c.cost_usd),
            c.value,
            escape(&c.preview)
        );
    }
    page.push_str("</tbody></table>");
}

fn cause_text(c: PrefixCause) -> &'static str {
    match c {
        PrefixCause::FirstCall => "first call",
        PrefixCause::Intact => "prefix intact",
        PrefixCause::IdleGap => "idle past the cache TTL",
        PrefixCause::Compaction => "a compaction",
        PrefixCause::SystemPrompt => "the system prompt changed",
        PrefixCause::ToolDefinitions => "the tool list changed",
        PrefixCause::Unrecorded => "the context the log does not record changed",
        PrefixCause::Edited => "a message was edited",
        PrefixCause::Removed => "a message was removed",
        PrefixCause::Inserted => "a message was inserted",
        PrefixCause::Reordered => "messages were reordered",
    }
}

/// Calls whose cacheable prefix broke, and what re-sending cost.
fn cache_breaks(page: &mut String, a: &Analysis) {
    let breaks: Vec<_> = a
        .calls
        .iter()
        .filter(|c| !matches!(c.cause, PrefixCause::FirstCall | PrefixCause::Intact))
        .collect();
    if breaks.is_empty() {
        return;
    }
    page.push_str(
        "<h3>Where the prompt cache broke</h3><table id=\"breaks\"><thead><tr><th class=\"n\">call</th>\
         <th>why</th><th class=\"n\">at chunk</th><th class=\"n\">tokens re-sent</th><th class=\"n\">miss cost</th></tr></thead><tbody>",
    );
    for c in breaks {
        let _ = write!(
            page,
            "<tr><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            c.index,
            cause_text(c.cause),
            c.break_at.map_or_else(|| "–".into(), |b| b.to_string()),
            int(c.resent_tokens),
            usd(c.miss_usd)
        );
    }
    page.push_str("</tbody></table>");
}

/// What each compaction's summary kept of what it replaced.
fn compactions(page: &mut String, a: &Analysis) {
    if a.compactions.is_empty() {
        return;
    }
    page.push_str(
        "<h3>Compactions</h3><table id=\"compactions\"><thead><tr><th class=\"n\">#</th><th class=\"n\">before call</th>\
         <th class=\"n\">replaced</th><th class=\"n\">summary</th><th class=\"n\">identifiers kept</th>\
         <th class=\"n\">paths kept</th><th class=\"n\">numbers kept</th><th class=\"n\">later calls missing</th><th>lost (first)</th></tr></thead><tbody>",
    );
    for c in &a.compactions {
        let tally =
            |t: memlens_core::compaction::ItemTally| format!("{} of {}", t.kept, t.replaced);
        let lost: Vec<String> = c.lost.iter().take(8).map(|i| i.text.clone()).collect();
        let _ = write!(
            page,
            "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{} chunks, {} tokens</td>\
             <td class=\"n\">{} tokens</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"text\">{}</td></tr>",
            c.index + 1,
            c.first_call,
            int(c.replaced_chunks as u64),
            int(c.replaced_tokens),
            int(c.summary_tokens),
            tally(c.identifiers),
            tally(c.paths),
            tally(c.numbers),
            int(c.calls_with_misses as u64),
            escape(&lost.join(", "))
        );
    }
    page.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests;
