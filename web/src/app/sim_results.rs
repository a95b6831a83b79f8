//! The simulator's results: a replay's totals and per-call chart, the budget sweep, the policies
//! side by side, the frontier (every policy at every budget) and the context at one call.

use super::compactions::compaction_details;
use super::fmt::{int, pct, usd};
use super::state::Data;
use leptos::prelude::*;
use memlens_core::analysis::{ContextDiff, Fate, SimView};

fn totals_row(v: &SimView) -> impl IntoView {
    let t = &v.totals;
    view! {
        <tr>
            <td>{v.policy.clone()}</td><td class="num">{int(v.budget)}</td>
            <td class="num">{int(t.input_tokens)}</td>
            <td class="num">{pct(t.saved_tokens as f64, t.full_input_tokens as f64)}</td>
            <td class="num">{usd(t.cost_usd)}</td><td class="num">{usd(t.saved_usd)}</td>
            <td class="num">{t.misses}</td><td class="num">{t.compressions}</td>
            <td class="num">{t.violations}</td><td class="num">{t.over_budget_calls}</td>
        </tr>
    }
}

fn totals_head() -> impl IntoView {
    view! {
        <thead><tr><th>"policy"</th><th>"budget"</th><th>"tokens sent"</th><th>"saved"</th><th>"cost"</th>
        <th>"saved $"</th><th>"misses"</th><th>"compressions"</th><th>"violations"</th><th>"over budget"</th></tr></thead>
    }
}

fn per_call_chart(v: &SimView, budget: u32) -> impl IntoView {
    let (w, h, left) = (900.0f64, 220.0f64, 60.0f64);
    let max = v
        .calls
        .iter()
        .map(|c| c.full_input_tokens.max(c.input_tokens))
        .max()
        .unwrap_or(0)
        .max(u64::from(budget))
        .max(1) as f64;
    let n = v.calls.len().max(2) as f64;
    let x = |i: usize| left + (w - left - 10.0) * i as f64 / (n - 1.0);
    let y = |t: f64| (h - 20.0) * (1.0 - t / max) + 5.0;
    let line = |f: &dyn Fn(&memlens_core::analysis::SimCall) -> u64| {
        v.calls
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{:.1},{:.1}", x(i), y(f(c) as f64)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let misses = v
        .calls
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.misses.is_empty())
        .map(|(i, c)| {
            view! { <circle cx=x(i) cy=y(c.input_tokens as f64) r=4 class="miss"><title>{format!("call {}: {} miss(es): {}", c.index, c.misses.len(), c.misses.join("; "))}</title></circle> }
        })
        .collect_view();
    // Where the policy summarized: a marker before the call that first sends the summary.
    let summaries = v
        .summaries
        .iter()
        .filter_map(|s| {
            let i = v.calls.iter().position(|c| c.index == s.first_call)?;
            let x = x(i);
            Some(view! {
                <line x1=x x2=x y1=5.0 y2=h - 15.0 class="compaction sim-summary-marker">
                    <title>{format!("summary #{} at call {}: {} chunks ({} tokens) in {} tokens", s.index + 1, s.first_call, s.replaced_chunks, int(s.replaced_tokens), int(u64::from(s.summary_tokens)))}</title>
                </line>
            })
        })
        .collect_view();
    // The budget's label sits above its line, or below it when the line is at the top (the
    // budget is the chart's maximum) and there is no room above.
    let budget_y = y(f64::from(budget));
    let label_y = if budget_y < 16.0 {
        budget_y + 12.0
    } else {
        budget_y - 4.0
    };
    view! {
        <svg class="chart" id="sim-chart" viewBox=format!("0 0 {w} {h}")>
            <line x1=left x2=w y1=budget_y y2=budget_y class="budget"/>
            <text x=w - 4.0 y=label_y text-anchor="end" class="axis" id="sim-budget-label">{format!("budget {}", int(budget))}</text>
            <text x=left - 6.0 y=y(max) + 8.0 text-anchor="end" class="axis">{int(max as u64)}</text>
            <text x=left - 6.0 y=y(0.0) text-anchor="end" class="axis">"0"</text>
            {summaries}
            <polyline points=line(&|c| c.full_input_tokens) class="full"/>
            <polyline points=line(&|c| c.input_tokens) class="managed"/>
            {misses}
        </svg>
        <div class="legend"><span><i class="full"></i>"keep everything"</span><span><i class="managed"></i>"under the policy"</span><span><i class="miss"></i>"call with misses"</span>
            {(!v.summaries.is_empty()).then(|| view! { <span><i class="compaction"></i>"the policy summarized"</span> })}</div>
    }
}

/// Budget sweep: tokens sent and misses against the budget (log scale).
fn sweep_chart(views: &[SimView]) -> impl IntoView {
    let (w, h, left, right) = (900.0f64, 220.0f64, 60.0f64, 50.0f64);
    let lo = views.iter().map(|v| v.budget).min().unwrap_or(1).max(1) as f64;
    let hi = views.iter().map(|v| v.budget).max().unwrap_or(1).max(2) as f64;
    let span = (hi.ln() - lo.ln()).max(1e-9);
    let x = |b: u32| left + (w - left - right) * ((f64::from(b.max(1))).ln() - lo.ln()) / span;
    let full = views
        .iter()
        .map(|v| v.totals.full_input_tokens)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let max_miss = views
        .iter()
        .map(|v| v.totals.misses)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let y = |t: f64, max: f64| 10.0 + (h - 40.0) * (1.0 - t / max);
    let sent = views
        .iter()
        .map(|v| {
            format!(
                "{:.1},{:.1}",
                x(v.budget),
                y(v.totals.input_tokens as f64, full)
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    let misses = views
        .iter()
        .map(|v| {
            format!(
                "{:.1},{:.1}",
                x(v.budget),
                y(v.totals.misses as f64, max_miss)
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    let points = views
        .iter()
        .map(|v| {
            let tip = format!(
                "budget {}: {} tokens sent ({} saved), {} misses, cost {}",
                int(v.budget),
                int(v.totals.input_tokens),
                pct(v.totals.saved_tokens as f64, v.totals.full_input_tokens as f64),
                v.totals.misses,
                usd(v.totals.cost_usd)
            );
            view! {
                <circle cx=x(v.budget) cy=y(v.totals.input_tokens as f64, full) r=4 class="sent"><title>{tip.clone()}</title></circle>
                <circle cx=x(v.budget) cy=y(v.totals.misses as f64, max_miss) r=4 class="miss"><title>{tip}</title></circle>
                <text x=x(v.budget) y=h - 8.0 text-anchor="middle" class="axis">{int(v.budget)}</text>
            }
        })
        .collect_view();
    view! {
        <svg class="chart" id="sweep-chart" viewBox=format!("0 0 {w} {h}")>
            <text x=left - 6.0 y=y(full, full) + 4.0 text-anchor="end" class="axis">{int(full as u64)}</text>
            <text x=left - 6.0 y=y(0.0, full) text-anchor="end" class="axis">"0"</text>
            <text x=w - right + 6.0 y=y(max_miss, max_miss) + 4.0 class="axis">{format!("{} misses", max_miss as u64)}</text>
            <polyline points=sent class="managed"/>
            <polyline points=misses class="misses"/>
            {points}
        </svg>
        <div class="legend"><span><i class="managed"></i>"tokens sent (left axis)"</span><span><i class="miss"></i>"misses (right axis)"</span><span>"x: budget, log scale"</span></div>
    }
}

/// One replay on the frontier chart: `(policy, budget, totals)`.
pub type Replay = (String, u32, memlens_core::simulate::Totals);

/// Tokens saved (y) against calls with a miss (x), every policy at every budget; the replays on
/// the frontier (no other saves as much with as few misses) filled, named and joined.
fn frontier_chart(rows: &[Replay], on: &[bool]) -> impl IntoView {
    let (w, h, left, right, top, bottom) = (900.0f64, 320.0f64, 60.0f64, 40.0f64, 14.0f64, 34.0f64);
    let saved = |t: &memlens_core::simulate::Totals| t.saved_share() * 100.0;
    let missed = |t: &memlens_core::simulate::Totals| t.miss_share() * 100.0;
    let x_max = rows.iter().map(|r| missed(&r.2)).fold(1.0f64, f64::max) * 1.05;
    let y_max = rows.iter().map(|r| saved(&r.2)).fold(1.0f64, f64::max) * 1.05;
    let y_min = rows.iter().map(|r| saved(&r.2)).fold(0.0f64, f64::min);
    let x = |m: f64| left + (w - left - right) * m / x_max;
    let y = |s: f64| top + (h - top - bottom) * (1.0 - (s - y_min) / (y_max - y_min).max(1e-9));
    let mut budgets: Vec<u32> = rows.iter().map(|r| r.1).collect();
    budgets.sort_unstable();
    budgets.dedup();
    let class_of = |b: u32| format!("b{}", budgets.iter().position(|&x| x == b).unwrap_or(0) % 4);
    let line: Vec<&Replay> = rows
        .iter()
        .zip(on)
        .filter(|(_, &f)| f)
        .map(|(r, _)| r)
        .collect();
    let line = super::order::sorted(line, &|a, b| missed(&a.2).total_cmp(&missed(&b.2)));
    let line = line
        .iter()
        .map(|r| format!("{:.1},{:.1}", x(missed(&r.2)), y(saved(&r.2))))
        .collect::<Vec<_>>()
        .join(" ");
    // Replays that land on the same spot (two policies deciding alike, or a budget the trace
    // never reaches) share one label: the first of them is named with the others.
    let spot = |r: &Replay| {
        (
            (missed(&r.2) * 1e6).round() as i64,
            (saved(&r.2) * 1e6).round() as i64,
        )
    };
    let mut names: Vec<((i64, i64), Vec<String>)> = Vec::new();
    for (r, _) in rows.iter().zip(on).filter(|(_, &f)| f) {
        let name = format!("{} @{}", r.0, int(r.1));
        match names.iter_mut().find(|(s, _)| *s == spot(r)) {
            Some((_, n)) => n.push(name),
            None => names.push((spot(r), vec![name])),
        }
    }
    let label_of = move |r: &Replay| -> Option<String> {
        let (_, n) = names.iter().find(|(s, _)| *s == spot(r))?;
        (n.first()? == &format!("{} @{}", r.0, int(r.1))).then(|| match n.len() {
            1 => n[0].clone(),
            2 => format!("{}, {}", n[0], n[1]),
            k => format!("{}, {} +{}", n[0], n[1], k - 2),
        })
    };
    let points = rows
        .iter()
        .zip(on)
        .map(|(r, &front)| {
            let (cx, cy) = (x(missed(&r.2)), y(saved(&r.2)));
            let label = if front { label_of(r) } else { None };
            let tip = format!(
                "{} at {}: {:.1}% saved, misses in {:.1}% of calls{}",
                r.0,
                int(r.1),
                saved(&r.2),
                missed(&r.2),
                if front { " (on the frontier)" } else { "" }
            );
            let class = format!("point {}{}", class_of(r.1), if front { " on" } else { "" });
            view! {
                <circle cx=cx cy=cy r=if front { 5.0 } else { 3.5 } class=class><title>{tip}</title></circle>
                // Named on the side with room: left of a point in the right half.
                {label.map(|l| { let right_half = cx > (left + w - right) / 2.0; view! {
                    <text x=if right_half { cx - 8.0 } else { cx + 8.0 } y=cy - 6.0 class="axis"
                        text-anchor=if right_half { "end" } else { "start" }>{l}</text>
                }})}
            }
        })
        .collect_view();
    let ticks = |max: f64| (0..=4).map(move |i| max * f64::from(i) / 4.0);
    view! {
        <svg class="chart" id="frontier-chart" viewBox=format!("0 0 {w} {h}")>
            {ticks(x_max).map(|m| view! {
                <line x1=x(m) x2=x(m) y1=top y2=h - bottom class="grid"/>
                <text x=x(m) y=h - bottom + 14.0 text-anchor="middle" class="axis">{format!("{m:.1}%")}</text>
            }).collect_view()}
            {ticks(y_max - y_min).map(|d| { let s = y_min + d; view! {
                <line x1=left x2=w - right y1=y(s) y2=y(s) class="grid"/>
                <text x=left - 6.0 y=y(s) + 4.0 text-anchor="end" class="axis">{format!("{s:.0}%")}</text>
            }}).collect_view()}
            <text x=(left + w - right) / 2.0 y=h - 4.0 text-anchor="middle" class="axis">"calls with a miss"</text>
            <text x=12.0 y=(top + h - bottom) / 2.0 text-anchor="middle" class="axis" transform=format!("rotate(-90 12 {})", (top + h - bottom) / 2.0)>"tokens saved"</text>
            <polyline points=line class="frontier-line"/>
            {points}
        </svg>
        <div class="legend">
            {budgets.iter().map(|&b| view! { <span><i class=format!("point {}", class_of(b))></i>{format!("budget {}", int(b))}</span> }).collect_view()}
            <span>"filled and named: on the frontier (no other policy and budget saves as much with as few misses)"</span>
        </div>
    }
}

fn frontier_table(rows: &[Replay], on: &[bool]) -> impl IntoView {
    // Best savings first: the frontier reads top to bottom, as `memlens compare --frontier` prints it.
    let order = super::order::sorted_order(rows.len(), &|a, b| {
        rows[b].2.saved_share().total_cmp(&rows[a].2.saved_share())
    });
    view! {
        <table class="compact" id="frontier-table">
            <thead><tr><th>"policy"</th><th>"budget"</th><th>"saved"</th><th>"calls with a miss"</th><th>"misses"</th><th>"frontier"</th></tr></thead>
            <tbody>{order.into_iter().map(|i| { let (p, b, t) = &rows[i]; view! {
                <tr class:on-frontier=on[i]>
                    <td>{p.clone()}</td><td class="num">{int(*b)}</td>
                    <td class="num">{format!("{:.1}%", t.saved_share() * 100.0)}</td>
                    <td class="num">{format!("{:.1}%", t.miss_share() * 100.0)}</td>
                    <td class="num">{t.misses}</td>
                    <td>{if on[i] { "yes" } else { "" }}</td>
                </tr>
            }}).collect_view()}</tbody>
        </table>
    }
}
/// A replay: its totals, its per-call chart and the summaries it made.
pub fn replay_view(v: &SimView) -> impl IntoView {
    let t = v.totals.clone();
    view! {
        <div class="cards" id="sim-totals">
            <div class="card"><div class="label">"tokens sent"</div><div class="value" id="sim-input">{int(t.input_tokens)}</div><div class="muted">{format!("of {} keeping everything", int(t.full_input_tokens))}</div></div>
            <div class="card"><div class="label">"tokens saved"</div><div class="value" id="sim-saved">{int(t.saved_tokens)}</div><div class="muted">{pct(t.saved_tokens as f64, t.full_input_tokens as f64)}</div></div>
            <div class="card"><div class="label">"cost"</div><div class="value" id="sim-cost">{usd(t.cost_usd)}</div><div class="muted">{format!("saved {}", usd(t.saved_usd))}</div></div>
            <div class="card"><div class="label">"misses"</div><div class="value" id="sim-misses">{t.misses}</div><div class="muted">{format!("in {} calls", t.calls_with_misses)}</div></div>
            <div class="card"><div class="label">"compressions / retrievals"</div><div class="value">{format!("{} / {}", t.compressions, t.retrievals)}</div></div>
            <div class="card"><div class="label">"over budget / violations"</div><div class="value" id="sim-over">{format!("{} / {}", t.over_budget_calls, t.violations)}</div></div>
        </div>
        <h3>{format!("Per call: {} at budget {}", v.policy, int(v.budget))}</h3>
        {per_call_chart(v, v.budget)}
        {(!v.summaries.is_empty()).then(|| view! {
            <section id="sim-summaries">
                <h3>{format!("Summaries the policy made ({}) — what each kept of what it replaced", v.summaries.len())}</h3>
                {compaction_details(&v.summaries, "sim-summary", &|_| None)}
            </section>
        })}
    }
}

/// The context the policy sends at one call: each chunk's fate.
pub fn diff_table(data: &Data, diff: &ContextDiff) -> impl IntoView {
    let rows = diff
        .lines
        .iter()
        .map(|l| {
            let row = l.chunk.and_then(|c| data.analysis.chunks.get(c as usize));
            let fate = match l.fate {
                Fate::Kept => "kept",
                Fate::Compressed => "compressed",
                Fate::Retrieved => "retrieved",
                Fate::Dropped => "dropped",
            };
            view! {
                <tr class=format!("fate-{fate}")>
                    <td>{row.map(|r| r.key.clone()).unwrap_or_else(|| "(summary)".into())}</td>
                    <td>{row.map(|r| r.category.as_str()).unwrap_or("summary")}</td>
                    <td>{fate}{l.compression.clone().map(|c| format!(" ({c})"))}</td>
                    <td class="num">{int(l.tokens)}</td><td class="num">{int(l.sent_tokens)}</td>
                    <td class="preview">{l.text.clone().map(|t| memlens_core::report::preview(&t, 100)).or_else(|| row.map(|r| r.preview.clone())).unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect_view();
    let dropped = diff
        .lines
        .iter()
        .filter(|l| l.fate == Fate::Dropped)
        .count();
    let compressed = diff
        .lines
        .iter()
        .filter(|l| l.fate == Fate::Compressed)
        .count();
    view! {
        <h3>{format!("Context at call {}: {} of {} tokens; {dropped} dropped, {compressed} compressed{}", diff.call, int(diff.tokens), int(diff.full_tokens), if diff.over_budget { " — over budget" } else { "" })}</h3>
        <table class="compact" id="diff-table">
            <thead><tr><th>"chunk"</th><th>"category"</th><th>"fate"</th><th>"tokens"</th><th>"sent"</th><th>"text"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// The budget sweep: its chart and table.
pub fn sweep_view(s: &[SimView]) -> impl IntoView {
    view! {
        <h3>"Budget sweep"</h3>
        {sweep_chart(s)}
        <table class="compact" id="sweep-table">{totals_head()}<tbody>{s.iter().map(totals_row).collect_view()}</tbody></table>
    }
}

/// Every policy at the chosen budget.
pub fn compare_view(c: &[SimView]) -> impl IntoView {
    view! {
        <h3>"Policies side by side (MemLens, the incumbents' defaults, the hindsight oracle)"</h3>
        <table class="compact" id="compare-table">{totals_head()}<tbody>{c.iter().map(totals_row).collect_view()}</tbody></table>
    }
}

/// The frontier: every policy at every budget, charted and listed.
pub fn frontier_view(f: &[Replay]) -> impl IntoView {
    let on = memlens_core::simulate::on_frontier(f.iter().map(|r| &r.2));
    view! {
        <section id="frontier">
            <h3>"Frontier: tokens saved against calls with a miss, every policy at every budget"</h3>
            {frontier_chart(f, &on)}
            {frontier_table(f, &on)}
        </section>
    }
}
