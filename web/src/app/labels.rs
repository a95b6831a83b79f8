//! The Labels view: important/useless marks on chunks (kept by `label_store`), exported and
//! imported as files, suggested from hindsight, and used to fit the value weights
//! (`memlens_core::value::fit_weights`).

use super::download::download;
use super::fmt::int;
use super::label_store::{save, LabelFile};
use super::state::{ctx, Ctx, Data, View};
use leptos::prelude::*;
use memlens_core::analysis::ChunkRow;
use memlens_core::hindsight::suggested_label;
use memlens_core::value::{agreement, fit_weights, Factors, FitReport, Label, ValueConfig};
use std::sync::Arc;

fn report_rows(before: &FitReport, after: &FitReport) -> impl IntoView {
    let names = Factors::NAMES;
    let b = before.weights.to_array();
    let a = after.weights.to_array();
    let weights = names
        .iter()
        .zip(b)
        .zip(a)
        .map(|((n, b), a)| view! { <tr><td>{*n}</td><td class="num">{format!("{b:.3}")}</td><td class="num">{format!("{a:.3}")}</td></tr> })
        .collect_view();
    let m = |r: &FitReport| {
        format!(
            "precision {:.2} · recall {:.2} · accuracy {:.2} · AUC {:.2} (threshold {:.2})",
            r.precision, r.recall, r.accuracy, r.auc, r.threshold
        )
    };
    view! {
        <p id="fit-before">"Current weights: "{m(before)}</p>
        <p id="fit-after">"Fitted weights: "{m(after)}</p>
        <table class="compact" id="fit-weights"><thead><tr><th>"factor"</th><th>"current"</th><th>"fitted"</th></tr></thead><tbody>{weights}</tbody></table>
    }
}

/// Suggestions listed at most (accepting all takes every one).
const SUGGESTIONS_SHOWN: usize = 200;

/// One suggestion: the chunk, what hindsight says of it, and a button to accept it.
fn suggestion_row(c: &ChunkRow, label: Label) -> impl IntoView {
    let ctx = ctx();
    let key = c.key.clone();
    let why = match c
        .first_call
        .and_then(|f| c.used_at.iter().find(|&&u| u >= f))
    {
        Some(u) => format!("used by call {u}'s output"),
        None => "no later call used it".to_string(),
    };
    let accept = move |_| {
        ctx.labels.update(|l| {
            l.insert(key.clone(), label);
        });
        save(&ctx);
    };
    view! {
        <tr>
            <td>{c.key.clone()}</td><td>{c.category.as_str()}</td>
            <td>{if label == Label::Important { "★ important" } else { "✗ useless" }}</td>
            <td>{why}</td>
            <td class="num">{int(c.tokens)}</td><td class="num">{format!("{:.3}", c.value)}</td>
            <td><button class="accept-suggestion" on:click=accept>"Accept"</button></td>
        </tr>
    }
}

/// The labels view.
#[component]
pub fn Labels(data: Arc<Data>) -> impl IntoView {
    let ctx = ctx();
    let fit = RwSignal::new(None::<(FitReport, FitReport)>);
    let d = data.clone();
    let list = move || labelled_rows(ctx, &d);
    view! {
        <section class="labels">
            <p class="muted">"Mark chunks important or useless in the chunk detail panel (Chunks view). Labels are kept in this browser's local storage for this file and trace."</p>
            <FitControls data=data.clone() fit=fit/>
            {move || fit.get().map(|(b, a)| report_rows(&b, &a))}
            <Suggestions data=data/>
            <h3>"Labelled"</h3>
            <table class="compact" id="label-list">
                <thead><tr><th>"chunk"</th><th>"category"</th><th>"label"</th><th>"tokens"</th><th>"value"</th><th>"preview"</th></tr></thead>
                <tbody>{list}</tbody>
            </table>
        </section>
    }
}

/// The labelled chunks' factors and labels, for fitting.
fn samples(ctx: Ctx, data: &Data) -> Vec<(Factors, Label)> {
    ctx.labels.with(|labels| {
        data.analysis
            .chunks
            .iter()
            .filter_map(|c| labels.get(&c.key).map(|&l| (c.factors, l)))
            .collect()
    })
}

/// The label count and the buttons: fit, use the fitted weights, default weights, export and
/// import.
#[component]
fn FitControls(data: Arc<Data>, fit: RwSignal<Option<(FitReport, FitReport)>>) -> impl IntoView {
    let ctx = ctx();
    let d = data.clone();
    let run_fit = move |_| {
        let s = samples(ctx, &d);
        let base = ctx.options.get_untracked().value;
        fit.set(Some((agreement(&s, &base), fit_weights(&s, &base))));
    };
    let apply = move |_| {
        if let Some((_, after)) = fit.get_untracked() {
            let weights = after.weights.clone();
            ctx.options.update(|o| o.value.weights = weights);
            // The simulator's policy (and so its replays and exported files) takes them too.
            if let Some(Ok(mut p)) = ctx.policy.get_untracked() {
                p.value.weights = after.weights;
                p.value_preset = None;
                ctx.policy_text.set(p.to_json());
            }
            ctx.reanalyze();
        }
    };
    let reset = move |_| {
        ctx.options.update(|o| o.value = ValueConfig::default());
        fit.set(None);
        ctx.reanalyze();
    };
    let trace_id = data.analysis.summary.figures.id.clone();
    let export = move |_| export_labels(ctx, &trace_id);
    let import = move |ev: leptos::ev::Event| import_labels(ctx, &ev);
    let count = move || samples(ctx, &data).len();
    view! {
        <div class="sim-form">
            <span id="label-count">{move || format!("{} labelled chunk(s)", count())}</span>
            <button id="fit" on:click=run_fit>"Fit weights from labels"</button>
            <button id="apply-fit" on:click=apply disabled=move || fit.get().is_none()>"Use the fitted weights"</button>
            <button on:click=reset>"Default weights"</button>
            <button id="export-labels" on:click=export>"Export labels"</button>
            <label class="button">"Import labels"<input type="file" id="import-labels" accept=".json" on:change=import hidden/></label>
        </div>
    }
}

/// Downloads the current trace's labels as a labels file.
fn export_labels(ctx: Ctx, trace_id: &str) {
    let file = LabelFile {
        file: ctx
            .loaded
            .get_untracked()
            .map(|l| l.name.clone())
            .unwrap_or_default(),
        trace: trace_id.to_string(),
        labels: ctx.labels.get_untracked(),
    };
    if let Ok(text) = serde_json::to_string_pretty(&file) {
        download(
            &format!("{}.labels.json", file.trace),
            &text,
            "application/json",
        );
    }
}

/// Adds the labels of the labels file chosen in the input of `ev`.
fn import_labels(ctx: Ctx, ev: &leptos::ev::Event) {
    let input: web_sys::HtmlInputElement = event_target(ev);
    let Some(file) = input.files().and_then(|f| f.get(0)) else {
        return;
    };
    input.set_value("");
    wasm_bindgen_futures::spawn_local(async move {
        let text = wasm_bindgen_futures::JsFuture::from(file.text())
            .await
            .ok()
            .and_then(|t| t.as_string())
            .unwrap_or_default();
        match serde_json::from_str::<LabelFile>(&text) {
            Ok(f) => {
                ctx.labels.update(|l| l.extend(f.labels));
                save(&ctx);
            }
            Err(e) => ctx.error.set(Some(format!("Not a labels file: {e}"))),
        }
    });
}

/// The labelled chunks' rows (a click opens the chunk).
fn labelled_rows(ctx: Ctx, data: &Data) -> impl IntoView {
    ctx.labels.with(|labels| {
        data.analysis
            .chunks
            .iter()
            .filter_map(|c| labels.get(&c.key).map(|l| (c, *l)))
            .map(|(c, l)| {
                let id = c.id;
                view! {
                    <tr class="pick" on:click=move |_| { ctx.chunk.set(Some(id)); ctx.view.set(View::Chunks); }>
                        <td>{c.key.clone()}</td><td>{c.category.as_str()}</td>
                        <td>{if l == Label::Important { "★ important" } else { "✗ useless" }}</td>
                        <td class="num">{int(c.tokens)}</td><td class="num">{format!("{:.3}", c.value)}</td>
                        <td class="preview">{c.preview.clone()}</td>
                    </tr>
                }
            })
            .collect_view()
    })
}

/// Hindsight's suggestions for the chunks not labelled yet: what the trace's own later steps
/// used (`memlens labels-from-hindsight`, at each chunk's first call).
#[component]
fn Suggestions(data: Arc<Data>) -> impl IntoView {
    let ctx = ctx();
    let d = data.clone();
    let suggestions = Memo::new(move |_| {
        ctx.labels.with(|labels| {
            d.analysis
                .chunks
                .iter()
                .enumerate()
                .filter(|(_, c)| !labels.contains_key(&c.key))
                .filter_map(|(i, c)| {
                    suggested_label(c.category, c.first_call, &c.used_at).map(|l| (i, l))
                })
                .collect::<Vec<(usize, Label)>>()
        })
    });
    let da = data.clone();
    let accept_all = move |_| {
        let chosen: Vec<(String, Label)> = suggestions
            .get_untracked()
            .iter()
            .map(|&(i, l)| (da.analysis.chunks[i].key.clone(), l))
            .collect();
        ctx.labels.update(|labels| labels.extend(chosen));
        save(&ctx);
    };
    move || {
        let all = suggestions.get();
        let (important, useless) = all.iter().fold((0, 0), |(i, u), (_, l)| {
            if *l == Label::Important {
                (i + 1, u)
            } else {
                (i, u + 1)
            }
        });
        let rows = all
            .iter()
            .take(SUGGESTIONS_SHOWN)
            .map(|&(i, l)| suggestion_row(&data.analysis.chunks[i], l))
            .collect_view();
        let more = all.len().saturating_sub(SUGGESTIONS_SHOWN);
        view! {
            <h3>"Suggested from hindsight"</h3>
            <p class="muted" id="suggestion-count">{format!(
                "{} suggestion(s) for unlabelled chunks: {important} important (a later step used it), {useless} useless (no later step did). The system prompt is not suggested: every policy keeps it.",
                all.len()
            )}</p>
            <div class="sim-form">
                <button id="accept-suggestions" on:click=accept_all.clone() disabled=all.is_empty()>"Accept all suggestions"</button>
            </div>
            <table class="compact" id="suggestion-list">
                <thead><tr><th>"chunk"</th><th>"category"</th><th>"suggested"</th><th>"why"</th><th>"tokens"</th><th>"value"</th><th></th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
            {(more > 0).then(|| view! { <p class="muted">{format!("and {more} more (accepting all takes them too)")}</p> })}
        }
    }
}
