//! The landing page, before a file is loaded: what MemLens reads, the sample, and a box to paste
//! a trace into.

use crate::app::state::ctx;
use leptos::prelude::*;
use wasm_bindgen::JsValue;

/// The landing page.
#[component]
pub fn Landing() -> impl IntoView {
    let ctx = ctx();
    let text = RwSignal::new(String::new());
    view! {
        <section class="landing">
            <h1>"See where your agent's context and money go."</h1>
            <p>"Drop a trace file anywhere on this page, press "<kbd>"Ctrl/Cmd+O"</kbd>", paste JSON, or "
                <button class="link" on:click=move |_| ctx.load_sample()>"load the sample"</button>
                ". Everything runs in this browser: the file is never uploaded."</p>
            <p class="formats">"Reads OpenAI and Anthropic message logs, Claude Code, Codex CLI and Gemini CLI sessions (drop a project folder: sessions with their subagents), OpenHands, SWE-agent and mini-swe-agent trajectories, OpenTelemetry GenAI and OpenInference spans, Langfuse and LangSmith exports, tau-bench, LoCoMo and the native MemLens format, detected automatically."</p>
            <textarea id="paste" placeholder="…or paste a trace here" prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            <button id="paste-load" on:click=move |_| {
                let t = text.get_untracked();
                if !t.trim().is_empty() { ctx.load("pasted.json".into(), JsValue::from_str(&t)); }
            }>"Analyze pasted text"</button>
        </section>
    }
}
