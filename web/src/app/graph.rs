//! The Access graph view: arcs from the call where a chunk entered the context to the later
//! calls whose output used it.

use super::chart::{colour, legend};
use super::state::{ctx, Data, View};
use leptos::prelude::*;
use std::sync::Arc;

const GRAPH_MAX_EDGES: usize = 3000;

/// The access graph of `data`.
pub fn graph(data: Arc<Data>) -> impl IntoView {
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
