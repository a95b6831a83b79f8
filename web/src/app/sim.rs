//! The policy simulator: choose or edit a policy, replay, sweep budgets, compare, diff a call.

use super::fmt::{int, pct, usd};
use super::{ctx, Data};
use crate::protocol::Request;
use leptos::prelude::*;
use memlens_core::analysis::{Fate, SimView};
use memlens_core::policy::{Cleanup, PolicyConfig, QuotaOrder, RunKind, StrategyKind, BUILTIN};
use memlens_core::value::ValueConfig;
use std::sync::Arc;
use wasm_bindgen::JsValue;

/// Budgets of the sweep, besides the chosen one.
const SWEEP: [u32; 6] = [500, 1000, 2000, 4000, 8000, 16000];

/// Budgets of the frontier, besides the chosen one: `memlens compare --frontier`'s.
const FRONTIER: [u32; 3] = [2000, 4000, 8000];

/// Starts a file download of `text` (a blob URL: nothing leaves the browser).
pub fn download(name: &str, text: &str, mime: &str) {
    let parts = js_sys::Array::new();
    parts.push(&JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let anchor = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.create_element("a").ok())
        .and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlAnchorElement>(e).ok());
    if let Some(a) = anchor {
        a.set_href(&url);
        a.set_download(name);
        a.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

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
type Replay = (String, u32, memlens_core::simulate::Totals);

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

/// Every built-in policy with the user's labels (they are about the trace, not one policy:
/// every policy replays with them), and the user's own policy first when it is not one of them.
fn every_policy(custom: PolicyConfig) -> Vec<PolicyConfig> {
    let ctx = ctx();
    let mut policies: Vec<PolicyConfig> = BUILTIN
        .iter()
        .filter_map(|n| PolicyConfig::builtin(n).ok())
        .map(|mut p| {
            ctx.labels
                .with_untracked(|l| p.labels.extend(l.iter().map(|(k, v)| (k.clone(), *v))));
            p
        })
        .collect();
    if !policies.contains(&custom) {
        let mut c = custom;
        c.name = format!("{} (edited)", c.name);
        policies.insert(0, c);
    }
    policies
}

fn opt_u32(text: &str) -> Option<u32> {
    text.trim().parse().ok()
}

/// A share or a value in `(0, 1]` from a form field (empty or out of range: none).
fn opt_f32(text: &str) -> Option<f32> {
    text.trim()
        .parse::<f32>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0 && *v <= 1.0)
}

/// The policy form: the main fields of the policy in the text box, edited in place (the text
/// becomes JSON).
#[component]
fn PolicyForm() -> impl IntoView {
    let ctx = ctx();
    let parsed = Memo::new(move |_| ctx.policy.get().and_then(Result::ok));
    let edit = move |f: &dyn Fn(&mut PolicyConfig)| {
        if let Some(mut p) = parsed.get_untracked() {
            f(&mut p);
            ctx.policy_text.set(p.to_json());
            ctx.policy_name.set("custom".into());
        }
    };
    let get = move |f: fn(&PolicyConfig) -> String| {
        move || parsed.get().map(|p| f(&p)).unwrap_or_default()
    };
    let flag = move |f: fn(&PolicyConfig) -> bool| move || parsed.get().is_some_and(|p| f(&p));
    view! {
        <div class="policy-form" id="policy-form">
            <label>"strategy "<select id="form-strategy" on:change=move |ev| {
                let v = event_target_value(&ev);
                edit(&|p| if let Ok(st) = serde_json::from_value(serde_json::Value::String(v.clone())) { p.strategy = st; });
            }>
                {StrategyKind::ALL.iter().map(|&st| view! {
                    <option value=st.name() selected=move || parsed.get().is_some_and(|p| p.strategy == st)>{st.name()}</option>
                }).collect_view()}
            </select></label>
            <label>"keep newest messages "<input id="form-recent" type="number" min="0" size="4" prop:value=get(|p| p.protect.recent_messages.to_string())
                on:change=move |ev| { let v = opt_u32(&event_target_value(&ev)).unwrap_or(0); edit(&|p| p.protect.recent_messages = v); }/></label>
            <label>"max age (calls) "<input id="form-age" type="number" min="1" size="4" placeholder="none" prop:value=get(|p| p.max_age_calls.map(|v| v.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_u32(&event_target_value(&ev)); edit(&|p| p.max_age_calls = v); }/></label>
            <label>"window: max messages "<input id="form-max-messages" type="number" min="1" size="4" placeholder="by tokens" prop:value=get(|p| p.max_messages.map(|v| v.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_u32(&event_target_value(&ev)); edit(&|p| p.max_messages = v); }/></label>
            <label title="Window/value: JSON tool results sent without the whitespace between their tokens, from their first call (lossless)"><input id="form-minify" type="checkbox" prop:checked=flag(|p| p.compress.minify_json)
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.compress.minify_json = on); }/>" minify JSON results"</label>
            <label title="Window/value: JSON tool results sent as TOON (Token-Oriented Object Notation) where that is fewer tokens, from their first call (lossless: read back and compared)"><input id="form-toon" type="checkbox" prop:checked=flag(|p| p.compress.toon_json)
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.compress.toon_json = on); }/>" TOON for JSON results"</label>
            <label><input id="form-json" type="checkbox" prop:checked=flag(|p| p.compress.json.is_some())
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.compress.json = on.then(Default::default)); }/>" compact JSON results"</label>
            <label><input id="form-strip" type="checkbox" prop:checked=flag(|p| p.compress.strip_markup)
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.compress.strip_markup = on); }/>" strip markup"</label>
            <label><input id="form-dedupe" type="checkbox" prop:checked=flag(|p| p.compress.dedupe)
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.compress.dedupe = on); }/>" dedupe"</label>
            <label>"clear tool results after (calls) "<input id="form-clear" type="number" min="1" size="4" placeholder="never" prop:value=get(|p| p.compress.clear_tool_results_after.map(|v| v.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_u32(&event_target_value(&ev)); edit(&|p| p.compress.clear_tool_results_after = v); }/></label>
            <label><input id="form-summary" type="checkbox" prop:checked=flag(|p| p.compress.summary.is_some())
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.compress.summary = on.then(Default::default)); }/>" summarize evicted spans"</label>
            <label title="Window/value: evict what is worth less than this at every call, also under budget">"value threshold "<input id="form-threshold" type="number" min="0" max="1" step="0.01" size="4" placeholder="none" prop:value=get(|p| p.value_threshold.map(|v| v.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_f32(&event_target_value(&ev)); edit(&|p| p.value_threshold = v); }/>
                " in "<select id="form-threshold-runs" on:change=move |ev| {
                    let v = event_target_value(&ev);
                    edit(&|p| if let Ok(runs) = serde_json::from_value(serde_json::Value::String(v.clone())) { p.value_threshold_runs = runs; });
                }>
                    {[(RunKind::Any, "any", "every run"), (RunKind::Agent, "agent", "agent runs"), (RunKind::Conversation, "conversation", "conversations")].into_iter().map(|(kind, value, name)| view! {
                        <option value=value selected=move || parsed.get().is_some_and(|p| p.value_threshold_runs == kind)>{name}</option>
                    }).collect_view()}
                </select></label>
            <label title="Window/value: no eviction until the context passes this share of the budget, then down to the target share (the cached prefix survives the calls between)">"cleanup at "<input id="form-cleanup-trigger" type="number" min="0.05" max="1" step="0.05" size="4" placeholder="off" prop:value=get(|p| p.cleanup.map(|c| c.trigger.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_f32(&event_target_value(&ev)); edit(&|p| p.cleanup = v.map(|trigger| Cleanup { trigger, target: p.cleanup.map_or(Cleanup::default().target.min(trigger), |c| c.target.min(trigger)) })); }/>
                " of the budget, down to "<input id="form-cleanup-target" type="number" min="0.05" max="1" step="0.05" size="4" placeholder="–" prop:value=get(|p| p.cleanup.map(|c| c.target.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_f32(&event_target_value(&ev)); edit(&|p| if let (Some(c), Some(target)) = (p.cleanup.as_mut(), v) { c.target = target.min(c.trigger); }); }/></label>
            <label title="Evict units older than this by the trace's own timestamps">"max age (seconds) "<input id="form-age-seconds" type="number" min="1" size="6" placeholder="none" prop:value=get(|p| p.max_age_seconds.map(|v| v.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = event_target_value(&ev).trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0); edit(&|p| p.max_age_seconds = v); }/></label>
            <label title="Units worth at least this never age out">"age exempt from value "<input id="form-age-exempt" type="number" min="0" max="1" step="0.05" size="4" placeholder="none" prop:value=get(|p| p.age_exempt_value.map(|v| v.to_string()).unwrap_or_default())
                on:change=move |ev| { let v = opt_f32(&event_target_value(&ev)); edit(&|p| p.age_exempt_value = v); }/></label>
            <label title="A category over its quota gives up its least valuable units first, not its oldest"><input id="form-quota-value" type="checkbox" prop:checked=flag(|p| p.quota_order == QuotaOrder::Value)
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.quota_order = if on { QuotaOrder::Value } else { QuotaOrder::Oldest }); }/>" quotas by value"</label>
            <label title="Window/value, agent runs: an assistant reply goes once the model has seen it and every id, number, date or path it holds is also in another chunk still sent"><input id="form-echoed" type="checkbox" prop:checked=flag(|p| p.evict_echoed_replies.is_some())
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.evict_echoed_replies = on.then_some(RunKind::Agent)); }/>" evict echoed replies"</label>
            <label>"value preset "<select id="form-preset" on:change=move |ev| {
                    let name = event_target_value(&ev);
                    edit(&|p| match ValueConfig::preset(&name) {
                        Some(preset) => { p.value_preset = Some(name.clone()); p.value = preset; }
                        None => p.value_preset = None,
                    });
                }>
                <option value="" selected=move || parsed.get().is_some_and(|p| p.value_preset.is_none())>"(own weights)"</option>
                {ValueConfig::PRESETS.iter().map(|&name| view! {
                    <option value=name selected=move || parsed.get().is_some_and(|p| p.value_preset.as_deref() == Some(name))>{name}</option>
                }).collect_view()}
            </select></label>
            <label><input id="form-offload" type="checkbox" prop:checked=flag(|p| p.offload.is_some())
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|p| p.offload = on.then(Default::default)); }/>" offload + retrieval"</label>
            {move || parsed.get().is_none().then(|| view! { <span class="muted">"(the text does not parse: fix it below)"</span> })}
        </div>
    }
}

/// What the simulator's buttons ask for (one waits while the worker reads a TOML policy).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Action {
    Run,
    Sweep,
    Compare,
    Frontier,
    Diff,
    Export,
}

/// The simulator view.
#[component]
pub fn Simulator(data: Arc<Data>) -> impl IntoView {
    let ctx = ctx();
    let trace = data.trace;
    let calls = data.analysis.calls.len() as u32;
    let at_call = RwSignal::new(calls.saturating_sub(1));
    let parse_error = RwSignal::new(None::<String>);
    // A button pressed while the worker was still reading a TOML text: pressed again for the
    // user when the answer comes (below).
    let waiting = RwSignal::new(None::<Action>);
    let policy = move |action: Action| -> Option<PolicyConfig> {
        match ctx.policy.get_untracked() {
            Some(Ok(mut p)) => {
                parse_error.set(None);
                // The Labels view's labels go into every replay and export (the text's own
                // labels, if any, give way to them).
                ctx.labels
                    .with_untracked(|l| p.labels.extend(l.iter().map(|(k, v)| (k.clone(), *v))));
                Some(p)
            }
            Some(Err(e)) => {
                parse_error.set(Some(e));
                None
            }
            None => {
                waiting.set(Some(action));
                ctx.busy.set(Some("reading the policy…".into()));
                None
            }
        }
    };
    let run = move || {
        if let Some(p) = policy(Action::Run) {
            ctx.busy.set(Some("replaying…".into()));
            ctx.diff.set(None);
            ctx.send(
                &Request::Simulate {
                    trace,
                    policy: p,
                    budget: ctx.budget.get_untracked(),
                },
                JsValue::UNDEFINED,
            );
        }
    };
    let sweep = move || {
        if let Some(p) = policy(Action::Sweep) {
            let mut budgets: Vec<u32> = SWEEP.to_vec();
            budgets.push(ctx.budget.get_untracked());
            budgets.sort_unstable();
            budgets.dedup();
            ctx.busy.set(Some("sweeping budgets…".into()));
            ctx.send(
                &Request::Sweep {
                    trace,
                    policy: p,
                    budgets,
                },
                JsValue::UNDEFINED,
            );
        }
    };
    let compare = move || {
        let Some(custom) = policy(Action::Compare) else {
            return;
        };
        let policies = every_policy(custom);
        ctx.busy.set(Some("comparing policies…".into()));
        ctx.send(
            &Request::Compare {
                trace,
                policies,
                budget: ctx.budget.get_untracked(),
            },
            JsValue::UNDEFINED,
        );
    };
    let frontier = move || {
        let Some(custom) = policy(Action::Frontier) else {
            return;
        };
        let policies = every_policy(custom);
        let mut budgets = FRONTIER.to_vec();
        budgets.push(ctx.budget.get_untracked());
        budgets.sort_unstable();
        budgets.dedup();
        ctx.busy
            .set(Some("replaying every policy at every budget…".into()));
        ctx.send(
            &Request::Replays {
                trace,
                policies,
                budgets,
            },
            JsValue::UNDEFINED,
        );
    };
    let diff = move || {
        if let Some(p) = policy(Action::Diff) {
            ctx.busy.set(Some("replaying to the call…".into()));
            ctx.send(
                &Request::Diff {
                    trace,
                    policy: p,
                    budget: ctx.budget.get_untracked(),
                    call: at_call.get_untracked(),
                },
                JsValue::UNDEFINED,
            );
        }
    };
    let export = move || {
        if let Some(mut p) = policy(Action::Export) {
            p.budget = Some(ctx.budget.get_untracked());
            download(
                &format!("{}.policy.json", p.name),
                &p.to_json(),
                "application/json",
            );
        }
    };
    let act = move |action: Action| match action {
        Action::Run => run(),
        Action::Sweep => sweep(),
        Action::Compare => compare(),
        Action::Frontier => frontier(),
        Action::Diff => diff(),
        Action::Export => export(),
    };
    Effect::new(move |_| {
        if ctx.policy.with(Option::is_some) {
            if let Some(action) = waiting.get_untracked() {
                waiting.set(None);
                ctx.busy.set(None);
                act(action);
            }
        }
    });
    let choose = move |ev: leptos::ev::Event| {
        let name = event_target_value(&ev);
        if let Ok(p) = PolicyConfig::builtin(&name) {
            ctx.policy_text.set(p.to_json());
            ctx.policy_name.set(name);
            parse_error.set(None);
        }
    };
    let d = data.clone();
    let diff_view = move || {
        ctx.diff.get().map(|diff| {
            let rows = diff
                .lines
                .iter()
                .map(|l| {
                    let row = l.chunk.and_then(|c| d.analysis.chunks.get(c as usize));
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
            let dropped = diff.lines.iter().filter(|l| l.fate == Fate::Dropped).count();
            let compressed = diff.lines.iter().filter(|l| l.fate == Fate::Compressed).count();
            view! {
                <h3>{format!("Context at call {}: {} of {} tokens; {dropped} dropped, {compressed} compressed{}", diff.call, int(diff.tokens), int(diff.full_tokens), if diff.over_budget { " — over budget" } else { "" })}</h3>
                <table class="compact" id="diff-table">
                    <thead><tr><th>"chunk"</th><th>"category"</th><th>"fate"</th><th>"tokens"</th><th>"sent"</th><th>"text"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            }
        })
    };
    view! {
        <section class="simulator">
            <div class="sim-form">
                <label>"Policy "<select id="policy-select" on:change=choose>
                    {BUILTIN.iter().map(|n| view! { <option value=*n selected=move || ctx.policy_name.get() == *n>{*n}</option> }).collect_view()}
                    <option value="custom" disabled selected=move || !BUILTIN.contains(&ctx.policy_name.get().as_str())>"custom (edited)"</option>
                </select></label>
                <label>"Budget (tokens) "<input id="budget" type="number" min="1" prop:value=move || ctx.budget.get().to_string()
                    on:change=move |ev| { if let Ok(b) = event_target_value(&ev).parse::<u32>() { if b > 0 { ctx.budget.set(b) } } }/></label>
                <button id="run-sim" on:click=move |_| run()>"Run"</button>
                <button id="run-sweep" on:click=move |_| sweep()>"Sweep budgets"</button>
                <button id="run-compare" on:click=move |_| compare()>"Compare all policies"</button>
                <button id="run-frontier" on:click=move |_| frontier() title="Every policy at 2,000, 4,000, 8,000 tokens and the chosen budget: tokens saved against calls with a miss">"Frontier"</button>
                <button id="export-policy" on:click=move |_| export()>"Export policy"</button>
                <PolicyForm/>
                <details>
                    <summary>"Edit the policy (JSON or TOML)"</summary>
                    <textarea id="policy-text" rows=16 prop:value=move || ctx.policy_text.get()
                        on:input=move |ev| { ctx.policy_text.set(event_target_value(&ev)); ctx.policy_name.set("custom".into()); }></textarea>
                    <p class="muted">"Same format as "<code>"memlens simulate --policy FILE"</code>" and the npm engine. "<code>"memlens policies NAME"</code>" prints a built-in one."</p>
                </details>
                {move || parse_error.get().map(|e| view! { <p class="error" id="policy-error">{e}</p> })}
            </div>
            {move || ctx.sim.get().map(|v| {
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
                    {per_call_chart(&v, v.budget)}
                    {(!v.summaries.is_empty()).then(|| view! {
                        <section id="sim-summaries">
                            <h3>{format!("Summaries the policy made ({}) — what each kept of what it replaced", v.summaries.len())}</h3>
                            {super::views::compaction_details(&v.summaries, "sim-summary", &|_| None)}
                        </section>
                    })}
                }
            })}
            <div class="diff-form">
                <label>"What it drops at call "<input id="diff-call" type="number" min="0" max=calls.saturating_sub(1)
                    prop:value=move || at_call.get().to_string()
                    on:change=move |ev| at_call.set(event_target_value(&ev).parse::<u32>().unwrap_or(0).min(calls.saturating_sub(1)))/></label>
                <button id="run-diff" on:click=move |_| diff()>"Show the context"</button>
            </div>
            {diff_view}
            {move || { let s = ctx.sweep.get(); (!s.is_empty()).then(|| view! {
                <h3>"Budget sweep"</h3>
                {sweep_chart(&s)}
                <table class="compact" id="sweep-table">{totals_head()}<tbody>{s.iter().map(totals_row).collect_view()}</tbody></table>
            })}}
            {move || { let c = ctx.compare.get(); (!c.is_empty()).then(|| view! {
                <h3>"Policies side by side (MemLens, the incumbents' defaults, the hindsight oracle)"</h3>
                <table class="compact" id="compare-table">{totals_head()}<tbody>{c.iter().map(totals_row).collect_view()}</tbody></table>
            })}}
            {move || { let f = ctx.frontier.get(); (!f.is_empty()).then(|| {
                let on = memlens_core::simulate::on_frontier(f.iter().map(|r| &r.2));
                view! {
                    <section id="frontier">
                        <h3>"Frontier: tokens saved against calls with a miss, every policy at every budget"</h3>
                        {frontier_chart(&f, &on)}
                        {frontier_table(&f, &on)}
                    </section>
                }
            })}}
        </section>
    }
}
