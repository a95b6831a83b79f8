//! The Overview view (what a loaded trace shows first, in the page's first module): key
//! numbers, the growth chart, the projection, the compactions and the category shares.

use super::calls::open_call;
use super::chart::{colour, legend};
use super::compactions::compactions;
use super::fmt::{int, pct, usd};
use super::projection::Projection;
use super::state::Data;
use leptos::prelude::*;
use std::sync::Arc;

fn card(label: &'static str, value: String, id: &'static str) -> impl IntoView {
    view! { <div class="card"><div class="label">{label}</div><div class="value" id=id>{value}</div></div> }
}

/// The overview of `data`.
pub fn overview(data: Arc<Data>) -> impl IntoView {
    let a = &data.analysis;
    let s = &a.summary;
    let window = s
        .figures
        .context_window
        .map(|w| {
            format!(
                " of {} ({})",
                int(w),
                pct(s.figures.peak_input_tokens as f64, w as f64)
            )
        })
        .unwrap_or_else(|| " (context window unknown)".into());
    let reported = match (
        s.figures.reported_input_tokens,
        s.figures.counted_input_tokens_where_reported,
    ) {
        (Some(r), Some(c)) => {
            // Over the calls that report usage: the log's part, the unrecorded item and the
            // counting difference add up to what was billed.
            let unrecorded: u64 = a
                .calls
                .iter()
                .filter(|c| c.reported_input.is_some())
                .map(|c| c.unrecorded_tokens)
                .sum();
            format!(
                "reported {} = {} in the log + {} not in the log (unrecorded) {:+}",
                int(r),
                int(c.saturating_sub(unrecorded)),
                int(unrecorded),
                r as i64 - c as i64
            )
        }
        _ => "no usage in the trace".into(),
    };
    view! {
        <section class="overview">
            <h2>{s.figures.id.clone()}<span class="muted">{format!(" · {} · {}{}", s.figures.model.clone().unwrap_or_else(|| "model unknown".into()), s.figures.encoding, if s.figures.tokens_estimated { " (estimated)" } else { "" })}</span></h2>
            <div class="cards">
                {card("LLM calls", int(s.figures.calls as u64), "k-calls")}
                {card("chunks", int(s.figures.chunks as u64), "k-chunks")}
                {card("memory tokens (each chunk once)", int(s.total_tokens), "k-total")}
                {card("input tokens sent (all calls)", int(s.figures.counted_input_tokens), "k-input")}
                {card("peak context", format!("{}{}", int(s.figures.peak_input_tokens), window), "k-peak")}
                {card("estimated cost", usd(s.figures.cost_usd), "k-cost")}
                {card("mean value", format!("{:.3}", s.mean_value), "k-value")}
                {card("input tokens: provider vs MemLens", reported, "k-reported")}
                {card("tool pairs", format!("{} orphaned results, {} unanswered calls", s.figures.orphan_tool_results, s.figures.unanswered_tool_calls), "k-tools")}
            </div>
            {parent_line(&data)}
            {notes(&data)}
            <h3>"Input tokens per call, by category — who is growing"</h3>
            {growth_chart(&data)}
            <Projection data=data.clone()/>
            {compactions(&data)}
            <h3>"Category share of the memory (each chunk once)"</h3>
            {share_ring(&data)}
        </section>
    }
}

fn growth_chart(data: &Data) -> impl IntoView {
    let a = &data.analysis;
    let (w, h, left, bottom) = (900.0f64, 260.0f64, 60.0f64, 24.0f64);
    let max = a
        .calls
        .iter()
        .map(|c| c.input_tokens.max(c.reported_input.unwrap_or(0)))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let n = a.calls.len().max(1) as f64;
    let bw = (w - left) / n;
    let top = 14.0;
    let y = |v: f64| top + (h - bottom - top) * (1.0 - v / max);
    let mut rects = Vec::new();
    for (i, c) in a.calls.iter().enumerate() {
        let mut acc = 0.0;
        for (k, &t) in c.by_category.iter().enumerate() {
            if t == 0 {
                continue;
            }
            let cat = a.categories[k];
            let (y0, y1) = (y(acc), y(acc + t as f64));
            acc += t as f64;
            let tip = format!("call {}: {} {} tokens", c.index, cat.as_str(), int(t));
            rects.push(view! {
                <rect x=left + i as f64 * bw y=y1 width=(bw - 0.5).max(0.5) height=(y0 - y1).max(0.0) fill=colour(cat)>
                    <title>{tip}</title>
                </rect>
            }.into_any());
        }
        let tip = format!(
            "call {}: {} input tokens{}",
            c.index,
            int(c.input_tokens),
            c.reported_input
                .map(|r| format!(" (reported {})", int(r)))
                .unwrap_or_default()
        );
        // The whole column is the click target: it opens the call in the Calls view.
        let (trace, index) = (data.trace, c.index);
        rects.push(view! {
            <rect x=left + i as f64 * bw y=top width=bw.max(0.5) height=h - bottom - top fill="transparent"
                class="call-column" data-call=index.to_string()
                on:click=move |_| open_call(trace, index)><title>{tip + " (click: open the call)"}</title></rect>
        }.into_any());
    }
    let reported = a
        .calls
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let r = c.reported_input?;
            let tip = format!(
                "call {}: provider reported {} input tokens, MemLens counted {}",
                c.index,
                int(r),
                int(c.input_tokens)
            );
            Some(view! {
                <circle cx=left + (i as f64 + 0.5) * bw cy=y(r as f64) r=3.5 class="reported"><title>{tip}</title></circle>
            })
        })
        .collect::<Vec<_>>();
    let has_reported = !reported.is_empty();
    // Where a compaction replaced part of the context: before its first call.
    let markers = a
        .compactions
        .iter()
        .map(|c| {
            let x = left + f64::from(c.first_call) * bw;
            let tip = format!(
                "compaction #{} before call {}: {} chunks ({} tokens) replaced by {}",
                c.index + 1,
                c.first_call,
                c.replaced_chunks,
                int(c.replaced_tokens),
                c.summary_key
                    .as_ref()
                    .map_or_else(|| "nothing recorded".to_string(), |k| format!("summary {k} ({} tokens)", int(u64::from(c.summary_tokens))))
            );
            view! {
                <g class="compaction-marker">
                    <line x1=x x2=x y1=top y2=h - bottom class="compaction"/>
                    <text x=x + 3.0 y=top + 10.0 class="axis">{format!("⇣ compaction #{}", c.index + 1)}</text>
                    <rect x=x - 4.0 y=top width=8 height=h - bottom - top fill="transparent"><title>{tip}</title></rect>
                </g>
            }
        })
        .collect::<Vec<_>>();
    let ticks = (0..=4)
        .map(|k| {
            let v = max * k as f64 / 4.0;
            view! {
                <line x1=left x2=w y1=y(v) y2=y(v) class="grid"/>
                <text x=left - 6.0 y=y(v) + 4.0 text-anchor="end" class="axis">{int(v.round() as u64)}</text>
            }
        })
        .collect_view();
    view! {
        <svg class="chart" id="growth-chart" viewBox=format!("0 0 {w} {h}") preserveAspectRatio="none">
            {ticks}
            {rects}
            {reported}
            {markers}
            <text x=left y=h - 6.0 class="axis">"call 0"</text>
            <text x=w y=h - 6.0 text-anchor="end" class="axis">{format!("call {}", a.calls.len().saturating_sub(1))}</text>
        </svg>
        {legend(&a.categories)}
        {has_reported.then(|| view! { <div class="legend"><span><i class="reported"></i>"input tokens the provider reported (usage), per call"</span></div> })}
    }
}

/// A subagent's trace names the session and call that started it.
fn parent_line(data: &Data) -> Option<impl IntoView> {
    let parent = data.analysis.summary.parent.as_ref()?;
    let call = parent.call.map_or_else(
        || " (its call is not in the files loaded)".to_string(),
        |c| format!(", call {c}"),
    );
    Some(view! {
        <p class="muted" id="parent-trace">{format!("subagent of {}{call}", parent.trace)}</p>
    })
}

/// Why counted and reported figures may differ (the notes of `memlens inspect`).
fn notes(data: &Data) -> Option<impl IntoView> {
    let notes = &data.analysis.summary.notes;
    (!notes.is_empty()).then(|| {
        view! {
            <ul class="notes muted" id="trace-notes">
                {notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()}
            </ul>
        }
    })
}

fn share_ring(data: &Data) -> impl IntoView {
    let a = &data.analysis;
    let r = 70.0f64;
    let circ = 2.0 * std::f64::consts::PI * r;
    let mut offset = 0.0;
    let arcs = a
        .by_category
        .iter()
        .zip(&a.categories)
        .map(|(g, &c)| {
            let len = g.share * circ;
            let dash = format!("{len} {}", circ - len);
            let o = -offset;
            offset += len;
            view! {
                <circle cx=100 cy=100 r=r fill="none" stroke=colour(c) stroke-width=36
                    stroke-dasharray=dash stroke-dashoffset=o transform="rotate(-90 100 100)">
                    <title>{format!("{}: {} tokens ({:.1}%)", g.name, int(g.tokens), g.share * 100.0)}</title>
                </circle>
            }
        })
        .collect_view();
    let rows = a
        .by_category
        .iter()
        .zip(&a.categories)
        .map(|(g, &c)| {
            view! {
                <tr><td><i class="swatch" style:background=colour(c)></i>{g.name.clone()}</td>
                <td class="num">{g.chunks}</td><td class="num">{int(g.tokens)}</td>
                <td class="num">{format!("{:.1}%", g.share * 100.0)}</td><td class="num">{usd(g.cost_usd)}</td></tr>
            }
        })
        .collect_view();
    view! {
        <div class="ring-row">
            <svg class="ring" viewBox="0 0 200 200" width=200 height=200 id="share-ring">{arcs}</svg>
            <table class="compact"><thead><tr><th>"category"</th><th>"chunks"</th><th>"tokens"</th><th>"share"</th><th>"attributed cost"</th></tr></thead>
            <tbody>{rows}</tbody></table>
        </div>
    }
}
