//! The top bar: open a file or a folder, load the sample, the loaded file's badge, following,
//! the model override, the theme and the help button.

use super::file_badge::FileBadge;
use crate::app::live::LiveControls;
use crate::app::state::ctx;
use crate::app::{files, theme};
use leptos::prelude::*;

/// The top bar.
#[component]
pub fn Header() -> impl IntoView {
    let ctx = ctx();
    let on_file = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        if let Some(list) = input.files() {
            ctx.source_url.set(None);
            files::load_list(ctx, &list);
        }
        input.set_value("");
    };
    let toggle_theme = move |_| {
        let next = theme::toggled(&ctx.theme.get_untracked());
        ctx.theme.set(next.into());
    };
    view! {
        <header class="top">
            <span class="brand">"MemLens"</span>
            <button id="open" on:click=move |_| files::click_open() title="Open a trace file (Ctrl/Cmd+O)">"Open…"</button>
            <input id="file-input" type="file" multiple accept=".json,.jsonl,.ndjson,.traj,application/json" on:change=on_file hidden/>
            <button id="open-folder" on:click=move |_| files::click_input("folder-input") title="Open a folder: a Claude Code project folder, sessions with their subagents">"Folder…"</button>
            <input id="folder-input" type="file" prop:webkitdirectory=true multiple on:change=on_file hidden/>
            <button id="load-sample" on:click=move |_| { ctx.source_url.set(None); ctx.load_sample() }>"Load sample"</button>
            <FileBadge/>
            <LiveControls/>
            <span class="spacer"></span>
            <label class="muted" title="Count and price as this model, whatever the trace says (like memlens --model)">"model "
                <input id="model" list="models" placeholder="as in the trace" size="14" prop:value=move || ctx.model.get()
                    on:change=move |ev| { ctx.model.set(event_target_value(&ev)); ctx.reload(); }/>
            </label>
            <datalist id="models">
                <option value="gpt-4o"/><option value="gpt-4o-mini"/><option value="gpt-4.1"/><option value="o3"/>
                <option value="gpt-5"/><option value="claude-sonnet-4-5"/><option value="claude-opus-4-1"/>
            </datalist>
            <button id="theme" on:click=toggle_theme title="Light / dark">
                {move || if ctx.theme.get() == "dark" { "☀ Light" } else { "☾ Dark" }}
            </button>
            <button id="help-button" on:click=move |_| ctx.help.update(|h| *h = !*h) title="Keyboard shortcuts (?)">"?"</button>
        </header>
    }
}
