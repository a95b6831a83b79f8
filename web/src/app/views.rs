//! Overview, chunks table and detail, value heatmap, cost attribution, access graph.

use super::fmt::{int, pct, usd};
use super::{ctx, labels, split, Data, View};
use leptos::prelude::*;
use memlens_core::analysis::ChunkRow;
use memlens_core::value::{Factors, Label};
use memlens_core::Category;
use std::sync::Arc;
use wasm_bindgen::JsCast;

/// The colour of a category (CSS custom property set per theme).
pub fn colour(c: Category) -> String {
    format!("var(--cat-{})", c.as_str())
}

/// The current view, or a placeholder while the trace is analyzed.
pub fn current(view: View) -> AnyView {
    let ctx = ctx();
    let Some(data) = ctx.data.get() else {
        return view! { <p class="muted" id="waiting">"Choose a trace to analyze."</p> }.into_any();
    };
    match view {
        // The first paint's module holds the overview; the others load their own.
        View::Overview => overview(data).into_any(),
        other => split::view(other, data),
    }
}

fn card(label: &'static str, value: String, id: &'static str) -> impl IntoView {
    view! { <div class="card"><div class="label">{label}</div><div class="value" id=id>{value}</div></div> }
}

pub(super) fn overview(data: Arc<Data>) -> impl IntoView {
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
            <super::projection::Projection data=data.clone()/>
            {compactions(&data)}
            <h3>"Category share of the memory (each chunk once)"</h3>
            {share_ring(&data)}
        </section>
    }
}

fn legend(categories: &[Category]) -> impl IntoView {
    view! {
        <div class="legend">
            {categories.iter().map(|&c| view! {
                <span><i style:background=colour(c)></i>{c.as_str()}</span>
            }).collect_view()}
        </div>
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
                on:click=move |_| super::calls::open_call(trace, index)><title>{tip + " (click: open the call)"}</title></rect>
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

fn tally_cell(t: memlens_core::compaction::ItemTally) -> String {
    match t.share() {
        Some(share) => format!("{}/{} ({:.0}%)", t.kept, t.replaced, share * 100.0),
        None => "–".into(),
    }
}

fn item_list(items: &[memlens_core::compaction::Item], id: String) -> impl IntoView {
    view! {
        <ul class="items" id=id>
            {items.iter().map(|i| view! {
                <li><span class="muted">{format!("{:?}", i.kind).to_lowercase()}" "</span><code>{i.text.clone()}</code></li>
            }).collect_view()}
        </ul>
    }
}

/// Each compaction: what it replaced, what its summary kept and lost, and later calls that
/// needed lost content (`memlens inspect`'s figures).
fn compactions(data: &Data) -> Option<impl IntoView> {
    let a = &data.analysis;
    if a.compactions.is_empty() {
        return None;
    }
    let summary_chunk = |key: &str| a.chunks.iter().position(|r| r.key == key);
    Some(view! {
        <section id="compactions">
            <h3>{format!("Compactions ({}) — what each summary kept of what it replaced", a.compactions.len())}</h3>
            {compaction_details(&a.compactions, "compaction", &summary_chunk)}
        </section>
    })
}

/// One `<details>` per compaction report (recorded, or a replay's summaries): ids
/// `{prefix}-{n}`, `{prefix}-{n}-kept`, `{prefix}-{n}-lost`. `summary_chunk` finds a recorded
/// summary's row in the chunk table.
pub fn compaction_details(
    reports: &[memlens_core::compaction::CompactionReport],
    prefix: &str,
    summary_chunk: &dyn Fn(&str) -> Option<usize>,
) -> impl IntoView {
    reports
        .iter()
        .map(|c| {
            let reported = match (c.reported_tokens_before, c.reported_tokens_after) {
                (Some(b), Some(after)) => format!(" · reported {} → {} tokens", int(b), int(after)),
                (Some(b), None) => format!(" · reported {} tokens before", int(b)),
                _ => String::new(),
            };
            let summary = match &c.summary_key {
                Some(k) => format!("summary {k} ({} tokens)", int(u64::from(c.summary_tokens))),
                None if c.summary_tokens > 0 => {
                    format!("a summary of {} tokens", int(u64::from(c.summary_tokens)))
                }
                None => "no summary recorded".to_string(),
            };
            let head = format!(
                "#{} before call {}{}{reported}: replaced {} chunks ({} tokens) with {summary}",
                c.index + 1,
                c.first_call,
                c.trigger.as_ref().map(|t| format!(" ({t})")).unwrap_or_default(),
                c.replaced_chunks,
                int(c.replaced_tokens),
            );
            let misses = if c.later_miss_count == 0 {
                "No later call used content it lost.".to_string()
            } else {
                format!(
                    "{} later use(s) of lost content in {} call(s):",
                    c.later_miss_count, c.calls_with_misses
                )
            };
            let chunk = c.summary_key.as_deref().and_then(summary_chunk);
            let id = format!("{prefix}-{}", c.index + 1);
            view! {
                <details class="compaction" id=id.clone() open=c.index == 0
                    data-replaced=c.replaced_chunks data-kept=c.kept.len() data-lost=c.lost.len() data-misses=c.later_miss_count>
                    <summary>{head}</summary>
                    <table class="tally">
                        <tr><th>"identifiers"</th><th>"file paths"</th><th>"commands"</th><th>"numbers"</th><th>"URLs"</th></tr>
                        <tr>
                            <td>{tally_cell(c.identifiers)}</td><td>{tally_cell(c.paths)}</td><td>{tally_cell(c.commands)}</td>
                            <td>{tally_cell(c.numbers)}</td><td>{tally_cell(c.urls)}</td>
                        </tr>
                    </table>
                    <div class="kept-lost">
                        <div><h4>{format!("kept ({} listed)", c.kept.len())}</h4>{item_list(&c.kept, format!("{id}-kept"))}</div>
                        <div><h4>{format!("lost ({} listed)", c.lost.len())}</h4>{item_list(&c.lost, format!("{id}-lost"))}</div>
                    </div>
                    <p class="misses">{misses}</p>
                    <ul class="items">
                        {c.later_misses.iter().map(|m| view! {
                            <li>{format!("call {} used ", m.call)}<code>{m.evidence.text.clone()}</code>{format!(" (from {})", m.chunks.join(", "))}</li>
                        }).collect_view()}
                    </ul>
                    {chunk.map(|i| {
                        let ctx = ctx();
                        view! {
                            <button class="link" on:click=move |_| { ctx.chunk.set(Some(i as u32)); ctx.view.set(View::Chunks); }>"Open the summary chunk"</button>
                        }
                    })}
                </details>
            }
        })
        .collect_view()
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

/// Sortable columns of the chunk table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Col {
    Id,
    Category,
    Tool,
    Tokens,
    Value,
    ValuePerK,
    Cost,
    Carried,
    First,
    Last,
    Refs,
}

const COLS: [(Col, &str); 11] = [
    (Col::Id, "#"),
    (Col::Category, "category"),
    (Col::Tool, "tool"),
    (Col::Tokens, "tokens"),
    (Col::Value, "value"),
    (Col::ValuePerK, "value/1k tok"),
    (Col::Cost, "cost"),
    (Col::Carried, "calls carried"),
    (Col::First, "first call"),
    (Col::Last, "last call"),
    (Col::Refs, "refs"),
];

fn compare(col: Col, a: &ChunkRow, b: &ChunkRow) -> std::cmp::Ordering {
    match col {
        Col::Id => a.id.cmp(&b.id),
        Col::Category => a.category.as_str().cmp(b.category.as_str()),
        Col::Tool => a.tool_name.cmp(&b.tool_name),
        Col::Tokens => a.tokens.cmp(&b.tokens),
        Col::Value => a.value.total_cmp(&b.value),
        Col::ValuePerK => a.value_per_1k_tokens.total_cmp(&b.value_per_1k_tokens),
        Col::Cost => a
            .cost_usd
            .unwrap_or(0.0)
            .total_cmp(&b.cost_usd.unwrap_or(0.0))
            .then(a.token_calls.cmp(&b.token_calls)),
        Col::Carried => a.calls_carried.cmp(&b.calls_carried),
        Col::First => a.first_call.cmp(&b.first_call),
        Col::Last => a.last_call.cmp(&b.last_call),
        Col::Refs => a.references.cmp(&b.references),
    }
}

const ROW_H: f64 = 28.0;
const VISIBLE: usize = 40;

#[component]
pub(super) fn Chunks(data: Arc<Data>) -> impl IntoView {
    let ctx = ctx();
    let sort = RwSignal::new((Col::Id, false));
    let category = RwSignal::new(String::new());
    let tool = RwSignal::new(String::new());
    let text = RwSignal::new(String::new());
    let min_value = RwSignal::new(0.0f32);
    let max_value = RwSignal::new(1.0f32);
    let scroll = RwSignal::new(0.0f64);
    let tools: Vec<String> = data
        .analysis
        .by_tool
        .iter()
        .map(|g| g.name.clone())
        .collect();
    let categories = data.analysis.categories.clone();
    let lower: Arc<Vec<String>> =
        Arc::new(data.contents.iter().map(|c| c.to_lowercase()).collect());
    let d = data.clone();
    let order = Memo::new(move |_| {
        let (col, desc) = sort.get();
        let (cat, tl, q) = (category.get(), tool.get(), text.get().to_lowercase());
        let (lo, hi) = (min_value.get(), max_value.get());
        let rows = &d.analysis.chunks;
        let idx: Vec<u32> = rows
            .iter()
            .filter(|r| cat.is_empty() || r.category.as_str() == cat)
            .filter(|r| tl.is_empty() || r.tool_name.as_deref() == Some(tl.as_str()))
            .filter(|r| r.value >= lo && r.value <= hi)
            .filter(|r| {
                q.is_empty()
                    || r.key.to_lowercase().contains(&q)
                    || lower.get(r.id as usize).is_some_and(|c| c.contains(&q))
            })
            .map(|r| r.id)
            .collect();
        super::order::sorted(idx, &|&x, &y| {
            let o = compare(col, &rows[x as usize], &rows[y as usize]).then(x.cmp(&y));
            if desc {
                o.reverse()
            } else {
                o
            }
        })
    });
    let d = data.clone();
    let visible = move || {
        let ids = order.get();
        let start = ((scroll.get() / ROW_H) as usize).saturating_sub(5);
        let end = (start + VISIBLE + 10).min(ids.len());
        let rows = &d.analysis.chunks;
        ids.get(start..end)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(k, &id)| {
                let r = &rows[id as usize];
                let top = (start + k) as f64 * ROW_H;
                let label = ctx.labels.with(|l| l.get(&r.key).copied());
                view! {
                    <div class="row" class:selected=move || ctx.chunk.get() == Some(id)
                        style:top=format!("{top}px") data-id=id on:click=move |_| ctx.chunk.set(Some(id))>
                        <span>{r.key.clone()}{label.map(|l| if l == Label::Important { " ★" } else { " ✗" })}</span>
                        <span><i class="swatch" style:background=colour(r.category)></i>{r.category.as_str()}</span>
                        <span>{r.tool_name.clone().unwrap_or_default()}</span>
                        <span class="num">{int(r.tokens)}</span>
                        <span class="num">{format!("{:.3}", r.value)}</span>
                        <span class="num">{format!("{:.2}", r.value_per_1k_tokens)}</span>
                        <span class="num">{usd(r.cost_usd)}</span>
                        <span class="num">{r.calls_carried}</span>
                        <span class="num">{r.first_call.map(|c| c.to_string()).unwrap_or_default()}</span>
                        <span class="num">{r.last_call.map(|c| c.to_string()).unwrap_or_default()}</span>
                        <span class="num">{r.references}</span>
                        <span class="preview">{r.preview.clone()}</span>
                    </div>
                }
            })
            .collect_view()
    };
    let header = COLS
        .iter()
        .map(|&(col, name)| {
            view! {
                <span class="sortable" id=format!("sort-{}", name.replace(['/', ' ', '#'], "")) on:click=move |_| {
                    sort.update(|s| { if s.0 == col { s.1 = !s.1 } else { *s = (col, !matches!(col, Col::Id | Col::Category | Col::Tool | Col::First)) } })
                }>
                    {name}{move || { let (c, desc) = sort.get(); if c == col { if desc { " ▼" } else { " ▲" } } else { "" } }}
                </span>
            }
        })
        .collect_view();
    let d = data.clone();
    view! {
        <section class="chunks">
            <div class="filters">
                <select id="filter-category" on:change=move |ev| category.set(event_target_value(&ev))>
                    <option value="">"all categories"</option>
                    {categories.iter().map(|c| view! { <option value=c.as_str()>{c.as_str()}</option> }).collect_view()}
                </select>
                <select id="filter-tool" on:change=move |ev| tool.set(event_target_value(&ev))>
                    <option value="">"all tools"</option>
                    {tools.into_iter().map(|t| view! { <option value=t.clone()>{t.clone()}</option> }).collect_view()}
                </select>
                <input id="filter-text" type="search" placeholder="search content"
                    on:input=move |ev| text.set(event_target_value(&ev))/>
                <label>"value ≥ "<input id="filter-min" type="number" step="0.05" min="0" max="1" value="0"
                    on:input=move |ev| min_value.set(event_target_value(&ev).parse().unwrap_or(0.0))/></label>
                <label>"≤ "<input id="filter-max" type="number" step="0.05" min="0" max="1" value="1"
                    on:input=move |ev| max_value.set(event_target_value(&ev).parse().unwrap_or(1.0))/></label>
                <span class="muted" id="row-count">{move || format!("{} of {} chunks", order.with(Vec::len), d.analysis.chunks.len())}</span>
            </div>
            <div class="table-wrap">
                <div class="grid-table">
                    <div class="head">{header}<span>"preview"</span></div>
                    <div class="body" id="chunk-rows" on:scroll=move |ev| {
                        if let Some(el) = ev.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()) {
                            scroll.set(f64::from(el.scroll_top()));
                        }
                    }>
                        <div class="spacer" style:height=move || format!("{}px", order.with(Vec::len) as f64 * ROW_H)>
                            {visible}
                        </div>
                    </div>
                </div>
                {move || ctx.chunk.get().map(|id| view! { <Detail data=data.clone() id=id/> })}
            </div>
        </section>
    }
}

fn factor_rows(f: &Factors, weights: [f32; 8]) -> impl IntoView {
    Factors::NAMES
        .iter()
        .zip(f.to_array())
        .zip(weights)
        .map(|((name, x), w)| {
            view! {
                <tr><td>{*name}</td><td class="num">{format!("{x:.3}")}</td>
                <td><div class="mini"><div style:width=format!("{}%", (x * 100.0).clamp(0.0, 100.0))></div></div></td>
                <td class="num">{format!("{w:.2}")}</td></tr>
            }
        })
        .collect_view()
}

#[component]
fn Detail(data: Arc<Data>, id: u32) -> impl IntoView {
    let ctx = ctx();
    let Some(r) = data.analysis.chunks.get(id as usize).cloned() else {
        return view! { <aside class="detail">"no such chunk"</aside> }.into_any();
    };
    let content = data.contents.get(id as usize).cloned().unwrap_or_default();
    let uses: Vec<_> = data
        .analysis
        .edges
        .iter()
        .filter(|e| e.used == id)
        .map(|e| {
            let by = data
                .analysis
                .chunks
                .get(e.by as usize)
                .map(|c| c.key.clone())
                .unwrap_or_default();
            view! { <li>{format!("call {} · {} used {:?}: ", e.call, by, e.kind)}<code>{e.evidence.clone()}</code></li> }
        })
        .collect();
    let key = r.key.clone();
    let set_label = move |label: Option<Label>| {
        let key = key.clone();
        move |_| {
            ctx.labels.update(|l| {
                match label {
                    Some(x) => l.insert(key.clone(), x),
                    None => l.remove(&key),
                };
            });
            labels::save(&ctx);
        }
    };
    let key2 = r.key.clone();
    let current = Signal::derive(move || ctx.labels.with(|l| l.get(&key2).copied()));
    view! {
        <aside class="detail" id="chunk-detail">
            <div class="detail-head">
                <h3>{r.key.clone()}" · "{r.category.as_str()}{r.tool_name.clone().map(|t| format!(" · {t}"))}</h3>
                <button on:click=move |_| ctx.chunk.set(None)>"✕"</button>
            </div>
            <p>{format!("{} tokens ({} content) · value {:.3} · {:.2} per 1k tokens", int(r.tokens), int(r.content_tokens), r.value, r.value_per_1k_tokens)}</p>
            <p>{format!("carried by {} calls ({}–{}) · {} token-calls · attributed cost {}",
                r.calls_carried, r.first_call.map(|c| c.to_string()).unwrap_or("–".into()),
                r.last_call.map(|c| c.to_string()).unwrap_or("–".into()), int(r.token_calls), usd(r.cost_usd))}</p>
            <div class="label-buttons">
                <span>"Label: "</span>
                <button id="label-important" class:active=move || current.get() == Some(Label::Important) on:click=set_label(Some(Label::Important))>"★ important"</button>
                <button id="label-useless" class:active=move || current.get() == Some(Label::Useless) on:click=set_label(Some(Label::Useless))>"✗ useless"</button>
                <button on:click=set_label(None)>"clear"</button>
            </div>
            <h4>"Value factors"</h4>
            <table class="compact"><thead><tr><th>"factor"</th><th>"score"</th><th></th><th>"weight"</th></tr></thead>
                <tbody>{factor_rows(&r.factors, data.analysis.weights.to_array())}</tbody></table>
            <ul class="why">{r.explanation.iter().map(|s| view! { <li>{s.clone()}</li> }).collect_view()}</ul>
            <h4>{format!("Used by later steps ({})", r.references)}</h4>
            {if uses.is_empty() { view! { <p class="muted">"No later output used it (no literal evidence found)."</p> }.into_any() } else { view! { <ul class="uses">{uses}</ul> }.into_any() }}
            <h4>"Content"</h4>
            <pre class="content" id="chunk-content">{content}</pre>
        </aside>
    }
    .into_any()
}

fn bars(
    rows: Vec<(String, Option<f64>, u64, String)>,
    priced: bool,
    id: &'static str,
) -> impl IntoView {
    let max = rows
        .iter()
        .map(|r| {
            if priced {
                r.1.unwrap_or(0.0)
            } else {
                r.2 as f64
            }
        })
        .fold(0.0f64, f64::max)
        .max(1e-12);
    view! {
        <table class="compact bars" id=id>
            <tbody>
            {rows.into_iter().map(|(name, cost, token_calls, extra)| {
                let v = if priced { cost.unwrap_or(0.0) } else { token_calls as f64 };
                view! {
                    <tr><td class="name">{name}</td>
                    <td class="barcell"><div class="bar" style:width=format!("{}%", v / max * 100.0)></div></td>
                    <td class="num">{usd(cost)}</td><td class="num">{int(token_calls)}</td><td class="muted">{extra}</td></tr>
                }
            }).collect_view()}
            </tbody>
        </table>
    }
}

pub(super) fn cost(data: Arc<Data>) -> impl IntoView {
    let ctx = ctx();
    let a = &data.analysis;
    let priced = a.summary.figures.priced_as.is_some();
    let top = super::order::sorted(
        a.chunks.iter().collect(),
        &|x: &&ChunkRow, y: &&ChunkRow| compare(Col::Cost, y, x).then(x.id.cmp(&y.id)),
    );
    let top_rows = top
        .into_iter()
        .take(30)
        .map(|r| {
            let id = r.id;
            view! {
                <tr class="pick" on:click=move |_| { ctx.chunk.set(Some(id)); ctx.view.set(View::Chunks); }>
                    <td>{r.key.clone()}</td>
                    <td><i class="swatch" style:background=colour(r.category)></i>{r.category.as_str()}</td>
                    <td>{r.tool_name.clone().unwrap_or_default()}</td>
                    <td class="num">{int(r.tokens)}</td><td class="num">{r.calls_carried}</td>
                    <td class="num">{int(r.token_calls)}</td><td class="num">{usd(r.cost_usd)}</td>
                    <td class="preview">{r.preview.clone()}</td>
                </tr>
            }
        })
        .collect_view();
    let cats = a
        .by_category
        .iter()
        .map(|g| {
            (
                g.name.clone(),
                g.cost_usd,
                g.token_calls,
                format!("{} chunks", g.chunks),
            )
        })
        .collect();
    let tools = a
        .by_tool
        .iter()
        .map(|g| {
            (
                g.name.clone(),
                g.cost_usd,
                g.token_calls,
                format!("{} chunks", g.chunks),
            )
        })
        .collect();
    view! {
        <section class="cost">
            <p class="muted">{format!("Attributed input cost = tokens × calls carried × price, prompt-cache aware (cached prefix at the cache-read price). Priced as {}.", a.summary.figures.priced_as.clone().unwrap_or_else(|| "— unpriced: ranked by token-calls".into()))}</p>
            <div class="two">
                <div><h3>"By category"</h3>{bars(cats, priced, "cost-by-category")}</div>
                <div><h3>"By tool"</h3>{if a.by_tool.is_empty() { view! { <p class="muted">"No tool calls."</p> }.into_any() } else { bars(tools, priced, "cost-by-tool").into_any() }}</div>
            </div>
            <h3>"The chunks that cost the most"</h3>
            <table class="compact" id="cost-top">
                <thead><tr><th>"chunk"</th><th>"category"</th><th>"tool"</th><th>"tokens"</th><th>"calls carried"</th><th>"token-calls"</th><th>"cost"</th><th>"preview"</th></tr></thead>
                <tbody>{top_rows}</tbody>
            </table>
        </section>
    }
}

const GRAPH_MAX_EDGES: usize = 3000;

pub(super) fn graph(data: Arc<Data>) -> impl IntoView {
    let ctx = ctx();
    let a = &data.analysis;
    let (w, h, base) = (1000.0f64, 360.0f64, 320.0f64);
    let n = a.calls.len().max(2) as f64;
    let x = |call: f64| 20.0 + (w - 40.0) * call / (n - 1.0);
    let arcs = a
        .edges
        .iter()
        .take(GRAPH_MAX_EDGES)
        .filter_map(|e| {
            let used = a.chunks.get(e.used as usize)?;
            let from = used.first_call.unwrap_or(e.call) as f64;
            let (x0, x1) = (x(from), x(e.call as f64));
            let lift = ((x1 - x0).abs() / 2.0).min(base - 10.0);
            let path = format!(
                "M {x0:.1} {base} C {x0:.1} {:.1}, {x1:.1} {:.1}, {x1:.1} {base}",
                base - lift * 1.3,
                base - lift * 1.3
            );
            let tip = format!(
                "call {} used {} ({}) from call {}: {:?} {}",
                e.call,
                used.key,
                used.category.as_str(),
                from,
                e.kind,
                e.evidence
            );
            let id = e.used;
            Some(view! {
                <path d=path class=format!("arc kind-{:?}", e.kind) stroke=colour(used.category)
                    on:click=move |_| { ctx.chunk.set(Some(id)); ctx.view.set(View::Chunks); }>
                    <title>{tip}</title>
                </path>
            })
        })
        .collect_view();
    let ticks = (0..a.calls.len())
        .step_by((a.calls.len() / 20).max(1))
        .map(|c| view! { <text x=x(c as f64) y=base + 18.0 text-anchor="middle" class="axis">{c}</text> })
        .collect_view();
    view! {
        <section class="graph">
            <p class="muted">{format!("{} links: each arc goes from the call where a chunk first entered the context to the later call whose output used it (literal evidence: ids, numbers, quotes, rare terms). Colour: the used chunk's category. Click an arc to open the chunk.", a.edges.len())}
                {(a.edges.len() > GRAPH_MAX_EDGES).then(|| format!(" Showing the first {GRAPH_MAX_EDGES}."))}</p>
            <svg class="chart" id="access-graph" viewBox=format!("0 0 {w} {h}")>
                <line x1=20 x2=w - 20.0 y1=base y2=base class="grid"/>
                {ticks}
                {arcs}
            </svg>
            {legend(&a.categories)}
        </section>
    }
}
