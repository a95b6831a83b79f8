//! Following a trace file an agent is still writing. Chromium's File System Access API gives a
//! file handle that can be read again: every [`POLL_MS`] the page asks it for the file, and when
//! it grew, sends only the new bytes (a `Blob` slice) to the worker, which reads them
//! incrementally (`memlens_import::follow`: MemLens, Claude Code, Codex and other JSON Lines). A
//! file that is one JSON document is imported whole again when it changes. Browsers without the API get a *Reload* button that reads the chosen file
//! again. Nothing leaves the browser: the handle is local.

use super::state::{ctx, Badge, Ctx, Followed};
use crate::protocol::{LiveStatus, Request};
use gloo_timers::callback::Interval;
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// How often a followed file is looked at, milliseconds.
pub const POLL_MS: u32 = 500;

// A module file, not `inline_js`: the page and the worker are two builds writing into one
// snippets/ folder, and inline snippets are numbered (inline0.js, ...) in an order that differs
// between them, so one build's file replaced the other's and failed the page's integrity check.
#[wasm_bindgen(module = "/src/app/follow.js")]
extern "C" {
    fn memlens_can_follow() -> bool;
    /// A `FileSystemFileHandle` the user picked (rejects when the picker is cancelled).
    fn memlens_pick_file() -> js_sys::Promise;
    /// The handle's file as it is now.
    fn memlens_file_of(handle: &JsValue) -> js_sys::Promise;
}

/// Whether this browser can follow a file (File System Access API).
pub fn supported() -> bool {
    memlens_can_follow()
}

/// Asks for a file and follows it.
pub fn pick(ctx: Ctx) {
    wasm_bindgen_futures::spawn_local(async move {
        let handle = match JsFuture::from(memlens_pick_file()).await {
            Ok(h) => h,
            // Cancelled: nothing to do.
            Err(_) => return,
        };
        start(ctx, handle).await;
    });
}

/// Follows the file behind `handle`: imports it now and starts looking at it for changes.
pub async fn start(ctx: Ctx, handle: JsValue) {
    stop(ctx);
    let file = match file_of(&handle).await {
        Ok(f) => f,
        Err(e) => {
            ctx.error
                .set(Some(format!("Cannot read the file to follow: {e}")));
            return;
        }
    };
    let name = file.name();
    ctx.source_url.set(None);
    ctx.error.set(None);
    ctx.start_progress("starting".into());
    let (sent, modified) = (file.size(), file.last_modified());
    send_follow(ctx, &name, file, false);
    let timer = Interval::new(POLL_MS, move || poll(ctx));
    ctx.followed.set_value(Some(Followed {
        handle,
        name,
        sent,
        modified,
        incremental: None,
        reading: false,
        _timer: timer,
    }));
}

/// Stops following (the traces stay loaded).
pub fn stop(ctx: Ctx) {
    ctx.followed.set_value(None);
    ctx.live.set(None);
}

/// The worker imported the followed file: remember how it reads it.
pub fn on_loaded(ctx: Ctx, status: Option<LiveStatus>) {
    match status {
        Some(status) => {
            ctx.followed.update_value(|f| {
                if let Some(f) = f {
                    f.incremental = Some(status.incremental);
                }
            });
            ctx.live.update(|badge| {
                let updates = badge.as_ref().map_or(0, |b| b.updates);
                *badge = Some(Badge {
                    status,
                    updates,
                    last_records: status.records,
                    at: js_sys::Date::now(),
                    millis: 0.0,
                });
            });
        }
        // Another file was opened the ordinary way.
        None => stop(ctx),
    }
}

/// The worker read appended bytes.
pub fn on_appended(ctx: Ctx, status: LiveStatus, records: usize, millis: f64) {
    ctx.live.update(|badge| {
        let updates = badge.as_ref().map_or(0, |b| b.updates) + 1;
        *badge = Some(Badge {
            status,
            updates,
            last_records: records,
            at: js_sys::Date::now(),
            millis,
        });
    });
}

async fn file_of(handle: &JsValue) -> Result<web_sys::File, String> {
    let file = JsFuture::from(memlens_file_of(handle))
        .await
        .map_err(|e| e.as_string().unwrap_or_else(|| format!("{e:?}")))?;
    file.dyn_into::<web_sys::File>()
        .map_err(|_| "the handle gave no file".to_string())
}

fn send_follow(ctx: Ctx, name: &str, file: web_sys::File, refresh: bool) {
    ctx.send(
        &Request::Follow {
            name: name.to_string(),
            model: ctx.model_override(),
            refresh,
        },
        file.into(),
    );
}

/// Looks at the followed file; sends what changed.
fn poll(ctx: Ctx) {
    let Some(handle) = ctx.followed.try_update_value(|f| match f {
        Some(f) if !f.reading && f.incremental.is_some() => {
            f.reading = true;
            Some(f.handle.clone())
        }
        _ => None,
    }) else {
        return;
    };
    let Some(handle) = handle else { return };
    wasm_bindgen_futures::spawn_local(async move {
        let file = file_of(&handle).await;
        let still_followed = ctx.followed.with_value(|f| f.is_some());
        if !still_followed {
            return;
        }
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                ctx.error.set(Some(format!(
                    "The followed file can no longer be read ({e}); following stopped."
                )));
                stop(ctx);
                return;
            }
        };
        let (size, modified) = (file.size(), file.last_modified());
        let action = ctx.followed.try_update_value(|f| {
            let f = f.as_mut()?;
            f.reading = false;
            let action = match f.incremental {
                Some(true) if size > f.sent => Some(Action::Append(f.sent)),
                // Shrunk: the file was replaced, read it as a new one.
                Some(true) if size < f.sent => Some(Action::Reread(f.name.clone(), true)),
                Some(false) if size != f.sent || modified != f.modified => {
                    Some(Action::Reread(f.name.clone(), false))
                }
                _ => None,
            };
            f.sent = size;
            f.modified = modified;
            action
        });
        match action.flatten() {
            Some(Action::Append(from)) => match file.slice_with_f64_and_f64(from, size) {
                Ok(blob) => ctx.send(&Request::Append, blob.into()),
                Err(e) => ctx
                    .error
                    .set(Some(format!("Cannot read the new bytes: {e:?}"))),
            },
            Some(Action::Reread(name, replaced)) => {
                ctx.keep_trace();
                ctx.followed.update_value(|f| {
                    if let Some(f) = f {
                        f.incremental = None;
                    }
                });
                // A file that shrank was replaced: read it as new; otherwise the same file again.
                send_follow(ctx, &name, file, !replaced);
            }
            None => {}
        }
    });
}

enum Action {
    /// Send the bytes from this offset to the end.
    Append(f64),
    /// Import the whole file again (its name; whether it was replaced, not grown).
    Reread(String, bool),
}

/// The live badge and the Follow / Stop / Reload buttons.
#[component]
pub fn LiveControls() -> impl IntoView {
    let ctx = ctx();
    let can_follow = supported();
    view! {
        {move || match ctx.live.get() {
            Some(b) => view! {
                <span class="live" id="live-badge" data-records=b.status.records data-bytes=b.status.bytes
                    data-parsed=b.status.parsed data-updates=b.updates data-millis=b.millis
                    data-mode=if b.status.incremental { "incremental" } else { "reread" }
                    title=if b.status.incremental {
                        "Following the file: only the bytes appended since the last read are parsed"
                    } else {
                        "Following the file: this format is imported whole again when the file changes"
                    }>
                    <span class="live-dot" aria-hidden="true">"●"</span>" live · updated "
                    {time_of_day(b.at)}
                    {(b.updates > 0).then(|| format!(" · +{} record(s) in {:.0} ms", b.last_records, b.millis))}
                </span>
                <button id="follow-stop" on:click=move |_| stop(ctx) title="Stop following the file (what is loaded stays)">"Stop"</button>
            }.into_any(),
            None if can_follow => view! {
                <button id="follow" on:click=move |_| pick(ctx)
                    title="Open a trace file an agent is still writing and follow it as it grows">"Follow…"</button>
            }.into_any(),
            None => view! {
                <button id="reload-file" on:click=move |_| ctx.reload()
                    prop:disabled=move || ctx.loaded.with(Option::is_none)
                    title="This browser cannot follow a file as it grows (no File System Access API): read the opened file again to see what was added">"Reload"</button>
            }.into_any(),
        }}
    }
}

/// `HH:MM:SS` in local time.
fn time_of_day(ms: f64) -> String {
    let d = js_sys::Date::new(&JsValue::from_f64(ms));
    format!(
        "{:02}:{:02}:{:02}",
        d.get_hours(),
        d.get_minutes(),
        d.get_seconds()
    )
}
