//! The help overlay: keyboard shortcuts and links.

use crate::app::state::ctx;
use leptos::prelude::*;

/// The help overlay.
#[component]
pub fn Help() -> impl IntoView {
    let ctx = ctx();
    view! {
        <div class="modal" id="help" on:click=move |_| ctx.help.set(false)>
            <div class="panel">
                <h2>"Keyboard shortcuts"</h2>
                <table>
                    <tr><td><kbd>"?"</kbd></td><td>"this help"</td></tr>
                    <tr><td><kbd>"1"</kbd>" … "<kbd>"7"</kbd></td><td>"switch views (overview, chunks, heatmap, cost, graph, simulator, labels)"</td></tr>
                    <tr><td><kbd>"Ctrl/Cmd+O"</kbd></td><td>"open a trace file"</td></tr>
                    <tr><td><kbd>"Ctrl/Cmd+V"</kbd></td><td>"paste a trace (JSON) outside a text field"</td></tr>
                    <tr><td><kbd>"Esc"</kbd></td><td>"close panels"</td></tr>
                </table>
                <p>"Links: "<code>"#url=https://…"</code>" loads a file from a URL (the only request the app ever makes); the hash also keeps the view, trace, policy and budget."</p>
            </div>
        </div>
    }
}
