//! The loaded file's badge in the top bar: its name, format, trace count and warnings, the trace
//! picker's button, and the exports (traces, redacted or not, and the report).

use crate::app::state::ctx;
use leptos::prelude::*;

/// The loaded file's badge and exports.
#[component]
pub fn FileBadge() -> impl IntoView {
    let ctx = ctx();
    move || {
        ctx.loaded.get().map(|l| {
            let trace = ctx.trace.get().and_then(|i| l.traces.get(i)).map(|t| t.id.clone());
            let many = l.traces.len() > 1;
            view! {
                <span class="file" id="file-badge">
                    <b>{l.name.clone()}</b>" · "{l.format.clone()}" · "
                    <span id="trace-count">{l.traces.len()}</span>{if many { " traces" } else { " trace" }}
                    {l.warning_count.gt(&0).then(|| view! {
                        <details class="warnings" id="warnings">
                            <summary>{format!("{} warning(s)", l.warning_count)}</summary>
                            <ul>{l.warnings.iter().map(|w| view! { <li>{w.clone()}</li> }).collect_view()}</ul>
                            {(l.warning_count > l.warnings.len()).then(|| view! {
                                <p>{format!("… and {} more", l.warning_count - l.warnings.len())}</p>
                            })}
                        </details>
                    })}
                </span>
                {many.then(|| view! {
                    <button id="pick-trace" on:click=move |_| ctx.picker.set(true)>
                        {trace.unwrap_or_else(|| "Choose a trace".into())}" ▾"
                    </button>
                })}
                <span class="export">
                    <label title="Replace API keys, bearer tokens, URL passwords, e-mail addresses and high-entropy secrets with stable placeholders in the exported file (what memlens convert --redact does)">
                        <input type="checkbox" id="redact" prop:checked=move || ctx.redact.get()
                            on:change=move |ev| ctx.redact.set(event_target_checked(&ev))/>
                        " redact secrets"
                    </label>
                    <button id="export-trace" on:click=move |_| ctx.export_traces()
                        title="Download the loaded traces in the native MemLens format, to share or to open again">"Export traces"</button>
                    {move || ctx.redaction.get().map(|r| view! { <span class="muted" id="redaction">{r}</span> })}
                    <button id="export-report" on:click=move |_| ctx.export_report()
                        prop:disabled=move || ctx.data.with(Option::is_none)
                        title="Download this trace's report: one self-contained HTML page (what memlens report writes)">"Report"</button>
                </span>
            }
        })
    }
}
