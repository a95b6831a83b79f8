//! The views a first paint does not show, each compiled into a WebAssembly module of its own and
//! fetched when first opened (or prefetched once the page is usable).
//!
//! `#[wasm_split]` (Leptos' `#[lazy]` underneath, here with `fallible`: a module that cannot be
//! fetched is an error shown in the view, where `#[lazy]` would abort the page) marks a function
//! as a split point: on wasm it becomes an `async` function that loads its module, then calls
//! into it. `scripts/web_app.sh` does the splitting
//! (`wasm-split-cli` on the page's module, linked with its relocations): everything only these
//! functions reach (the simulator, the label fitting, the chunk table, the heatmap...) leaves
//! the module the page starts with. The overview stays in it: it is what a loaded trace shows
//! first.

use super::state::{Data, View};
use super::{calls, chunks, cost, graph, heatmap, labels, overview, sim};
use leptos::prelude::*;
use leptos::wasm_split::{wasm_split, SplitLoaderError};
use std::sync::Arc;

/// A view's module loaded and the view built, or the module could not be fetched.
type Loaded = Result<AnyView, SplitLoaderError>;

#[wasm_split(view_chunks, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_chunks))]
fn chunks(data: Arc<Data>) -> Loaded {
    Ok(view! { <chunks::Chunks data=data/> }.into_any())
}

#[wasm_split(view_heatmap, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_heatmap))]
fn heatmap(data: Arc<Data>) -> Loaded {
    Ok(view! { <heatmap::Heatmap data=data/> }.into_any())
}

#[wasm_split(view_cost, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_cost))]
fn cost(data: Arc<Data>) -> Loaded {
    Ok(cost::cost(data).into_any())
}

#[wasm_split(view_calls, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_calls))]
fn calls(data: Arc<Data>) -> Loaded {
    Ok(view! { <calls::Calls data=data/> }.into_any())
}

#[wasm_split(view_graph, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_graph))]
fn graph(data: Arc<Data>) -> Loaded {
    Ok(graph::graph(data).into_any())
}

#[wasm_split(view_simulator, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_simulator))]
fn simulator(data: Arc<Data>) -> Loaded {
    Ok(view! { <sim::Simulator data=data/> }.into_any())
}

#[wasm_split(view_labels, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_labels))]
fn labels(data: Arc<Data>) -> Loaded {
    Ok(view! { <labels::Labels data=data/> }.into_any())
}

/// `view` of `data`, once its module is loaded ("Loading the view…" until then; a module
/// already loaded renders at once). A module that could not be fetched says so; opening the
/// view again fetches it again.
pub fn view(view: View, data: Arc<Data>) -> AnyView {
    let shown = Suspend::new(async move {
        let loaded = match view {
            View::Overview => Ok(overview::overview(data).into_any()),
            View::Chunks => chunks(data).await,
            View::Heatmap => heatmap(data).await,
            View::Cost => cost(data).await,
            View::Calls => calls(data).await,
            View::Graph => graph(data).await,
            View::Simulator => simulator(data).await,
            View::Labels => labels(data).await,
        };
        loaded.unwrap_or_else(|_| {
            view! {
                <p class="error" id="view-failed">
                    "This view's code could not be fetched. Open the view again to retry, or reload the page."
                </p>
            }
            .into_any()
        })
    });
    let loading = || view! { <p class="muted" id="loading-view">"Loading the view…"</p> };
    view! { <Suspense fallback=loading>{shown}</Suspense> }.into_any()
}

/// Fetches every view's module, one after the other, so that opening a view later does not
/// wait for the network. Called once the page is usable: the first paint never waits for it. A
/// module that cannot be fetched now is fetched again when its view is opened.
pub fn prefetch() {
    leptos::task::spawn_local(async {
        let _ = preload_chunks().await;
        let _ = preload_heatmap().await;
        let _ = preload_cost().await;
        let _ = preload_calls().await;
        let _ = preload_graph().await;
        let _ = preload_simulator().await;
        let _ = preload_labels().await;
    });
}
