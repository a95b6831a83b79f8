//! The trace picker: a file's traces, searchable by id, with their calls, tokens and cost.

use crate::app::fmt;
use crate::app::state::ctx;
use leptos::prelude::*;

/// The trace picker.
#[component]
pub fn Picker() -> impl IntoView {
    let ctx = ctx();
    let query = RwSignal::new(String::new());
    let rows = move || {
        let q = query.get().to_lowercase();
        ctx.loaded.get().map(|l| {
            l.traces
                .iter()
                .filter(|t| q.is_empty() || t.id.to_lowercase().contains(&q))
                .take(500)
                .map(|t| {
                    let i = t.index;
                    view! {
                        <tr class="pick" on:click=move |_| ctx.select_trace(i)>
                            <td>{t.id.clone()}</td>
                            <td class="num">{t.calls}</td>
                            <td class="num">{fmt::int(t.counted_input_tokens)}</td>
                            <td class="num">{fmt::usd(t.cost_usd)}</td>
                        </tr>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <div class="modal" id="picker">
            <div class="panel">
                <h2>"Choose a trace"</h2>
                <input id="picker-search" type="search" placeholder="Search trace ids"
                    prop:value=move || query.get() on:input=move |ev| query.set(event_target_value(&ev))/>
                {move || {
                    let q = query.get().to_lowercase();
                    ctx.loaded.get().map(|l| {
                        let n = l.traces.iter().filter(|t| q.is_empty() || t.id.to_lowercase().contains(&q)).count();
                        let shown = n.min(500);
                        view! { <p class="muted" id="picker-count">{if shown < n { format!("showing {shown} of {n} matching traces: search to narrow") } else { format!("{n} trace(s)") }}</p> }
                    })
                }}
                <div class="scroll">
                    <table>
                        <thead><tr><th>"trace"</th><th>"calls"</th><th>"input tokens sent"</th><th>"cost"</th></tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
                <button on:click=move |_| ctx.picker.set(false)>"Close"</button>
            </div>
        </div>
    }
}
