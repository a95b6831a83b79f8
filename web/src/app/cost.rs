//! The Cost view: attributed input cost by category, by tool, and the chunks that cost the most.

use super::chart::colour;
use super::chunks::{compare, Col};
use super::fmt::{int, usd};
use super::order::sorted;
use super::state::{ctx, Data, View};
use leptos::prelude::*;
use memlens_core::analysis::ChunkRow;
use std::sync::Arc;

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

/// The cost view of `data`.
pub fn cost(data: Arc<Data>) -> impl IntoView {
    let ctx = ctx();
    let a = &data.analysis;
    let priced = a.summary.figures.priced_as.is_some();
    let top = sorted(
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
