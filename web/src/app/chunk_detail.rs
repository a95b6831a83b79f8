//! The chunk detail panel (Chunks view): a chunk's figures, label buttons, value factors, the
//! later steps that used it, and its content.

use super::fmt::{int, usd};
use super::label_store;
use super::state::{ctx, Data};
use leptos::prelude::*;
use memlens_core::value::{Factors, Label};
use std::sync::Arc;

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

/// The detail panel of chunk `id`.
#[component]
pub fn Detail(data: Arc<Data>, id: u32) -> impl IntoView {
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
            label_store::save(&ctx);
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
