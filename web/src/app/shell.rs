//! The page's shell: the app's setup (state, worker, theme, URL, window listeners) and its
//! layout: the top bar, the banners, the landing page or the tabs and the current view, and the
//! overlays. Each piece is in `shell/`.

mod error_banner;
mod file_badge;
mod header;
mod help;
mod landing;
mod picker;
mod progress_bar;
mod tabs;
mod window_events;

use super::overview::overview;
use super::state::{ctx, Ctx, View};
use super::{responses, split, theme, url};
use error_banner::ErrorBanner;
use header::Header;
use help::Help;
use landing::Landing;
use leptos::prelude::*;
use picker::Picker;
use progress_bar::ProgressBar;
use tabs::Tabs;

/// The app: sets the state up and lays the page out.
#[component]
pub fn App() -> impl IntoView {
    let ctx = Ctx::new();
    provide_context(ctx);
    ctx.spawn_worker(responses::on_response);

    // Theme: remembered, else the system's.
    ctx.theme.set(theme::initial());
    Effect::new(move |_| theme::set(&ctx.theme.get()));
    // The policy text is read whenever it changes (typed, chosen, loaded from a file or the URL).
    Effect::new(move |_| ctx.policy_text.with(|text| ctx.read_policy(text)));

    url::apply(ctx);
    url::keep_hash(ctx);
    window_events::listen(ctx);

    view! {
        <Header/>
        <ErrorBanner/>
        <ProgressBar/>
        <Show when=move || ctx.loaded.get().is_some() fallback=Landing>
            <Tabs/>
            <main class="view">{move || current(ctx.view.get())}</main>
        </Show>
        <Show when=move || ctx.picker.get()>
            <Picker/>
        </Show>
        <Show when=move || ctx.help.get()>
            <Help/>
        </Show>
        <Show when=move || ctx.dragging.get()>
            <div class="drop-overlay"><div>"Drop the trace file to analyze it — it stays in this browser."</div></div>
        </Show>
        <Show when=move || ctx.busy.get().is_some()>
            <div class="busy" id="busy">{move || ctx.busy.get().unwrap_or_default()}</div>
        </Show>
    }
}

/// The current view, or a placeholder while the trace is analyzed.
fn current(view: View) -> AnyView {
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
