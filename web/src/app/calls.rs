//! The Calls view: every call with why its cached prefix ended, and one call's input broken down
//! by component and by chunk, with what changed since the previous call.

use super::fmt::{int, usd};
use super::state::{ctx, Data, View};
use crate::protocol::Request;
use leptos::prelude::*;
use memlens_core::analysis::{CallRow, CallView};
use memlens_core::diff::{CallChange, PrefixCause};
use std::sync::Arc;
use wasm_bindgen::JsValue;

/// Rows rendered at most in each table (the rest is summarized in a line).
const MAX_ROWS: usize = 2000;

/// Opens call `call` of the current trace in the Calls view (asks the worker for its breakdown).
pub fn open_call(trace: usize, call: u32) {
    let ctx = ctx();
    ctx.call.set(Some(call));
    ctx.call_view.set(None);
    ctx.view.set(View::Calls);
    ctx.busy.set(Some("breaking the call down…".into()));
    ctx.send(&Request::CallView { trace, call }, JsValue::UNDEFINED);
}

fn reason(cause: PrefixCause) -> &'static str {
    match cause {
        PrefixCause::FirstCall => "the first call",
        PrefixCause::Intact => "the prefix held",
        PrefixCause::IdleGap => "an idle gap past the cache TTL",
        PrefixCause::Compaction => "a compaction replaced part of the context",
        PrefixCause::SystemPrompt => "the system prompt changed",
        PrefixCause::ToolDefinitions => "the tool definitions changed",
        PrefixCause::Unrecorded => "the context the log does not record changed",
        PrefixCause::Edited => "an earlier message was edited",
        PrefixCause::Removed => "an earlier item was removed",
        PrefixCause::Inserted => "an item was inserted before the end of the previous input",
        PrefixCause::Reordered => "items changed order",
    }
}

/// The view.
#[component]
pub fn Calls(data: Arc<Data>) -> impl IntoView {
    let ctx = ctx();
    let trace = data.trace;
    let a = &data.analysis;
    let key = |id: u32| chunk_key(&data, id);
    let breaks = a.calls.iter().filter(|c| c.cause.is_break()).count();
    let resent: u64 = a.calls.iter().map(|c| c.resent_tokens).sum();
    let missed: Option<f64> = a
        .calls
        .iter()
        .filter(|c| c.cause.is_break())
        .map(|c| c.miss_usd)
        .sum();
    let rows = a
        .calls
        .iter()
        .take(MAX_ROWS)
        .map(|c: &CallRow| {
            let index = c.index;
            let at = c.break_at.map(&key).unwrap_or_default();
            let selected = move || ctx.call.get() == Some(index);
            view! {
                <tr class="pick" class:selected=selected data-call=index.to_string()
                    on:click=move |_| open_call(trace, index)>
                    <td class="num">{index}</td>
                    <td class="num">{int(c.input_tokens)}</td>
                    <td class="num">{c.reported_input.map(int).unwrap_or_else(|| "–".into())}</td>
                    <td class="num">{int(c.cached_input)}</td>
                    <td class="num">{usd(c.cost_usd)}</td>
                    <td class="cause">{c.cause.as_str()}</td>
                    <td>{at}</td>
                    <td class="num">{int(c.resent_tokens)}</td>
                    <td class="num">{if c.cause.is_break() { usd(c.miss_usd) } else { "–".into() }}</td>
                </tr>
            }
        })
        .collect_view();
    let more = (a.calls.len() > MAX_ROWS)
        .then(|| format!("… {} more calls not listed", a.calls.len() - MAX_ROWS));
    let detail_data = data.clone();
    view! {
        <section class="calls">
            <p class="muted" id="calls-summary">{format!(
                "{} calls; the cached prefix broke at {breaks} ({} tokens re-sent after the break; lost cache reads {}). Pick a call for its input broken down.",
                a.calls.len(), int(resent), if breaks == 0 { "$0".to_string() } else { usd(missed) }
            )}</p>
            <div class="two">
                <div class="scroll">
                    <table class="compact" id="calls-table">
                        <thead><tr><th>"call"</th><th>"input"</th><th>"reported"</th><th>"cached"</th><th>"cost"</th><th>"prefix"</th><th>"broke at"</th><th>"re-sent"</th><th>"miss"</th></tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                    {more.map(|m| view! { <p class="muted">{m}</p> })}
                </div>
                <div>{move || detail(&detail_data, ctx.call_view.get())}</div>
            </div>
        </section>
    }
}

/// Chunk `id`'s key (`#id` when there is no such chunk).
fn chunk_key(data: &Data, id: u32) -> String {
    data.analysis
        .chunks
        .get(id as usize)
        .map_or_else(|| format!("#{id}"), |c| c.key.clone())
}

/// Why the call's cached prefix ended (or held), in a sentence.
fn change_text(data: &Data, ch: &CallChange) -> String {
    let key = |id: u32| chunk_key(data, id);
    match ch.cause {
        PrefixCause::FirstCall => "The first call: there is nothing to share.".to_string(),
        PrefixCause::Intact => format!(
            "Shares its whole previous input ({} chunks, {} tokens): the prefix held.",
            ch.shared_prefix_chunks,
            int(ch.shared_prefix_tokens)
        ),
        PrefixCause::IdleGap => format!(
            "{:.0} s after the previous call, past the 5-minute cache TTL: the shared prefix ({} tokens) was likely evicted; lost cache reads {}.",
            ch.idle_secs.unwrap_or(0.0),
            int(ch.shared_prefix_tokens),
            usd(ch.miss_usd)
        ),
        cause => format!(
            "The shared prefix ended after {} chunks ({} tokens) at {}: {}. {} tokens of the previous input were re-sent after it; lost cache reads {}.",
            ch.shared_prefix_chunks,
            int(ch.shared_prefix_tokens),
            ch.at.map(|id| key(id.0)).unwrap_or_default(),
            reason(cause),
            int(ch.resent_tokens),
            usd(ch.miss_usd)
        ),
    }
}

/// What changed since the previous call: chunks added, removed, edited, moved.
fn diff_text(data: &Data, ch: &CallChange) -> String {
    let key = |id: u32| chunk_key(data, id);
    let keys = |ids: &[memlens_core::ChunkId]| {
        if ids.is_empty() {
            "none".to_string()
        } else {
            ids.iter()
                .map(|id| key(id.0))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let edited = if ch.diff.edited.is_empty() {
        "none".to_string()
    } else {
        ch.diff
            .edited
            .iter()
            .map(|[a, b]| format!("{} → {}", key(a.0), key(b.0)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "Since the previous call: added {}; removed {}; edited {}{}.",
        keys(&ch.diff.added),
        keys(&ch.diff.removed),
        edited,
        if ch.diff.moved > 0 {
            format!("; {} moved", ch.diff.moved)
        } else {
            String::new()
        }
    )
}

/// The call's input by component.
fn component_rows(v: &CallView) -> impl IntoView {
    v.components
        .iter()
        .map(|c| {
            view! {
                <tr>
                    <td>{c.name.clone()}</td><td class="num">{c.chunks}</td>
                    <td class="num">{int(c.tokens)}</td><td class="num">{int(c.cached_tokens)}</td>
                    <td class="num">{int(c.new_tokens)}</td><td class="num">{usd(c.cost_usd)}</td>
                </tr>
            }
        })
        .collect_view()
}

/// The call's input by chunk, in input order (a click opens the chunk).
fn chunk_rows(data: &Data, v: &CallView) -> impl IntoView {
    let ctx = ctx();
    v.chunks
        .iter()
        .take(MAX_ROWS)
        .map(|c| {
            let id = c.id;
            let preview = data
                .analysis
                .chunks
                .get(id as usize)
                .map(|r| r.preview.clone())
                .unwrap_or_default();
            view! {
                <tr class="pick" on:click=move |_| { ctx.chunk.set(Some(id)); ctx.view.set(View::Chunks); }>
                    <td>{chunk_key(data, id)}</td><td>{c.component.clone()}</td>
                    <td class="num">{int(c.tokens)}</td><td class="num">{int(c.cached_tokens)}</td>
                    <td>{if c.new { "new" } else { "carried" }}</td><td class="num">{usd(c.cost_usd)}</td>
                    <td class="preview">{preview}</td>
                </tr>
            }
        })
        .collect_view()
}

/// One call's breakdown (or a note to pick one).
fn detail(data: &Data, view: Option<Arc<CallView>>) -> AnyView {
    let Some(v) = view else {
        return view! { <p class="muted" id="call-none">"Pick a call in the table."</p> }
            .into_any();
    };
    let ch = &v.change;
    let reported = v
        .reported_input
        .map(|r| format!(" (reported {})", int(r)))
        .unwrap_or_default();
    view! {
        <div id="call-view" data-call=v.index.to_string()>
            <h3>{format!("Call {}", v.index)}</h3>
            <p id="call-totals">{format!(
                "Counted input {} tokens{reported} = {} in chunks + {} reply priming; {} from the cached prefix; cost {}.",
                int(v.input_tokens), int(v.input_tokens - v.priming_tokens), v.priming_tokens, int(v.cached_input), usd(v.cost_usd)
            )}</p>
            <p id="call-change" data-cause=ch.cause.as_str()>{change_text(data, ch)}</p>
            <p id="call-diff">{diff_text(data, ch)}</p>
            <h3>"By component"</h3>
            <table class="compact" id="call-components">
                <thead><tr><th>"component"</th><th>"chunks"</th><th>"tokens"</th><th>"cached"</th><th>"new"</th><th>"cost"</th></tr></thead>
                <tbody>{component_rows(&v)}</tbody>
            </table>
            <h3>"By chunk, in input order"</h3>
            <table class="compact" id="call-chunks">
                <thead><tr><th>"chunk"</th><th>"component"</th><th>"tokens"</th><th>"cached"</th><th>""</th><th>"cost"</th><th>"preview"</th></tr></thead>
                <tbody>{chunk_rows(data, &v)}</tbody>
            </table>
        </div>
    }
    .into_any()
}
