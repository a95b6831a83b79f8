//! Listeners on the whole window: keyboard shortcuts, a file dropped anywhere, a trace pasted
//! anywhere outside a text field. Removed when the app is.

use crate::app::files;
use crate::app::state::{Ctx, View};
use leptos::ev;
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

fn is_editable(target: Option<web_sys::EventTarget>) -> bool {
    target
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|e| matches!(e.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"))
}

/// Starts listening (until the app is removed).
pub fn listen(ctx: Ctx) {
    let keys = window_event_listener(ev::keydown, move |e: web_sys::KeyboardEvent| {
        on_key(ctx, &e)
    });
    // Drop anywhere.
    let over = window_event_listener(ev::dragover, move |e: web_sys::DragEvent| {
        e.prevent_default();
        ctx.dragging.set(true);
    });
    let leave = window_event_listener(ev::dragleave, move |e: web_sys::DragEvent| {
        if e.related_target().is_none() {
            ctx.dragging.set(false);
        }
    });
    let drop = window_event_listener(ev::drop, move |e: web_sys::DragEvent| {
        e.prevent_default();
        ctx.dragging.set(false);
        if let Some(transfer) = e.data_transfer() {
            ctx.source_url.set(None);
            files::load_dropped(ctx, &transfer);
        }
    });
    // Paste JSON anywhere outside a text field.
    let paste = window_event_listener(ev::paste, move |e: web_sys::ClipboardEvent| {
        if is_editable(e.target()) {
            return;
        }
        if let Some(text) = e
            .clipboard_data()
            .and_then(|d| d.get_data("text").ok())
            .filter(|t| !t.trim().is_empty())
        {
            e.prevent_default();
            ctx.source_url.set(None);
            ctx.load("pasted.json".into(), JsValue::from_str(&text));
        }
    });
    on_cleanup(move || {
        keys.remove();
        over.remove();
        leave.remove();
        drop.remove();
        paste.remove();
    });
}

/// Keyboard shortcuts: Ctrl/Cmd+O opens a file, Esc closes panels, `?` the help, 1-8 the views.
fn on_key(ctx: Ctx, e: &web_sys::KeyboardEvent) {
    let key = e.key();
    if (e.ctrl_key() || e.meta_key()) && key.eq_ignore_ascii_case("o") {
        e.prevent_default();
        files::click_open();
        return;
    }
    if key == "Escape" {
        ctx.help.set(false);
        ctx.picker.set(false);
        ctx.chunk.set(None);
        return;
    }
    if is_editable(e.target()) || e.ctrl_key() || e.meta_key() || e.alt_key() {
        return;
    }
    if key == "?" {
        ctx.help.update(|h| *h = !*h);
    } else if let Some(d) = key.chars().next().and_then(|c| c.to_digit(10)) {
        if key.len() == 1 && (1..=View::ALL.len() as u32).contains(&d) {
            ctx.view.set(View::ALL[d as usize - 1]);
        }
    }
}
