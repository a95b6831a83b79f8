//! The Chunks view: the chunk table, filtered and sorted, drawn a window of rows at a time,
//! with the detail panel of the chunk chosen.

use super::chart::colour;
use super::chunk_detail::Detail;
use super::fmt::{int, usd};
use super::order::sorted;
use super::state::{ctx, Data};
use leptos::prelude::*;
use memlens_core::analysis::ChunkRow;
use memlens_core::value::Label;
use std::sync::Arc;
use wasm_bindgen::JsCast;

/// Sortable columns of the chunk table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Col {
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

/// How two rows compare on `col`.
pub fn compare(col: Col, a: &ChunkRow, b: &ChunkRow) -> std::cmp::Ordering {
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

/// The table's sort and filters.
#[derive(Clone, Copy)]
struct Filters {
    /// Column, descending.
    sort: RwSignal<(Col, bool)>,
    category: RwSignal<String>,
    tool: RwSignal<String>,
    text: RwSignal<String>,
    min_value: RwSignal<f32>,
    max_value: RwSignal<f32>,
}

impl Filters {
    fn new() -> Filters {
        Filters {
            sort: RwSignal::new((Col::Id, false)),
            category: RwSignal::new(String::new()),
            tool: RwSignal::new(String::new()),
            text: RwSignal::new(String::new()),
            min_value: RwSignal::new(0.0f32),
            max_value: RwSignal::new(1.0f32),
        }
    }

    /// The ids of the rows that pass the filters, in the chosen order; `lower`: the chunks'
    /// contents in lower case.
    fn order(self, data: &Data, lower: &[String]) -> Vec<u32> {
        let (col, desc) = self.sort.get();
        let (cat, tl, q) = (
            self.category.get(),
            self.tool.get(),
            self.text.get().to_lowercase(),
        );
        let (lo, hi) = (self.min_value.get(), self.max_value.get());
        let rows = &data.analysis.chunks;
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
        sorted(idx, &|&x, &y| {
            let o = compare(col, &rows[x as usize], &rows[y as usize]).then(x.cmp(&y));
            if desc {
                o.reverse()
            } else {
                o
            }
        })
    }
}

/// The chunks view.
#[component]
pub fn Chunks(data: Arc<Data>) -> impl IntoView {
    let ctx = ctx();
    let filters = Filters::new();
    let scroll = RwSignal::new(0.0f64);
    let lower: Arc<Vec<String>> =
        Arc::new(data.contents.iter().map(|c| c.to_lowercase()).collect());
    let d = data.clone();
    let order = Memo::new(move |_| filters.order(&d, &lower));
    let d = data.clone();
    let visible = move || visible_rows(&d, &order.get(), scroll.get());
    view! {
        <section class="chunks">
            {filter_bar(&data, filters, order)}
            <div class="table-wrap">
                <div class="grid-table">
                    <div class="head">{header(filters.sort)}<span>"preview"</span></div>
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

/// The filters: category, tool, content search, value range, and the count of rows shown.
fn filter_bar(data: &Arc<Data>, f: Filters, order: Memo<Vec<u32>>) -> impl IntoView {
    let tools: Vec<String> = data
        .analysis
        .by_tool
        .iter()
        .map(|g| g.name.clone())
        .collect();
    let categories = data.analysis.categories.clone();
    let d = data.clone();
    view! {
        <div class="filters">
            <select id="filter-category" on:change=move |ev| f.category.set(event_target_value(&ev))>
                <option value="">"all categories"</option>
                {categories.iter().map(|c| view! { <option value=c.as_str()>{c.as_str()}</option> }).collect_view()}
            </select>
            <select id="filter-tool" on:change=move |ev| f.tool.set(event_target_value(&ev))>
                <option value="">"all tools"</option>
                {tools.into_iter().map(|t| view! { <option value=t.clone()>{t.clone()}</option> }).collect_view()}
            </select>
            <input id="filter-text" type="search" placeholder="search content"
                on:input=move |ev| f.text.set(event_target_value(&ev))/>
            <label>"value ≥ "<input id="filter-min" type="number" step="0.05" min="0" max="1" value="0"
                on:input=move |ev| f.min_value.set(event_target_value(&ev).parse().unwrap_or(0.0))/></label>
            <label>"≤ "<input id="filter-max" type="number" step="0.05" min="0" max="1" value="1"
                on:input=move |ev| f.max_value.set(event_target_value(&ev).parse().unwrap_or(1.0))/></label>
            <span class="muted" id="row-count">{move || format!("{} of {} chunks", order.with(Vec::len), d.analysis.chunks.len())}</span>
        </div>
    }
}

/// The column headers: a click sorts by the column (again: the other way).
fn header(sort: RwSignal<(Col, bool)>) -> impl IntoView {
    COLS.iter()
        .map(|&(col, name)| {
            view! {
                <span class="sortable" id=format!("sort-{}", name.replace(['/', ' ', '#'], "")) on:click=move |_| {
                    sort.update(|s| { if s.0 == col { s.1 = !s.1 } else { *s = (col, !matches!(col, Col::Id | Col::Category | Col::Tool | Col::First)) } })
                }>
                    {name}{move || { let (c, desc) = sort.get(); if c == col { if desc { " ▼" } else { " ▲" } } else { "" } }}
                </span>
            }
        })
        .collect_view()
}

/// The rows of `ids` around the scroll position (the others are not drawn).
fn visible_rows(data: &Data, ids: &[u32], scroll: f64) -> impl IntoView {
    let ctx = ctx();
    let start = ((scroll / ROW_H) as usize).saturating_sub(5);
    let end = (start + VISIBLE + 10).min(ids.len());
    let rows = &data.analysis.chunks;
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
}
