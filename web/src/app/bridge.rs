//! The worker bridge: starts the worker (and restarts it when it dies), posts requests to it
//! (queued until it is ready) and hands its replies to the page's handler (`responses`).

use super::state::Ctx;
use crate::protocol::{Request, Response};
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// What the page does with a reply of the worker.
pub type Handler = fn(Ctx, Response);

impl Ctx {
    /// Sends a request to the worker (queued until it is ready).
    pub fn send(&self, request: &Request, payload: JsValue) {
        let Ok(json) = serde_json::to_string(request) else {
            self.error.set(Some("cannot encode the request".into()));
            return;
        };
        let message = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&message, &"json".into(), &json.into());
        let _ = js_sys::Reflect::set(&message, &"payload".into(), &payload);
        if self.ready.get_untracked() {
            self.worker.with_value(|w| {
                if let Some(w) = w {
                    if w.post_message(&message).is_err() {
                        self.error
                            .set(Some("the worker did not take the request".into()));
                    }
                }
            });
        } else {
            self.queue.update_value(|q| q.push(message));
        }
    }

    /// Posts the requests queued while the worker was starting.
    pub(super) fn flush_queue(&self) {
        let queued = self.queue.try_update_value(std::mem::take);
        self.worker.with_value(|w| {
            if let Some(w) = w {
                for m in queued.unwrap_or_default() {
                    let _ = w.post_message(&m);
                }
            }
        });
    }

    /// Starts the worker; its replies go to `handler`. A worker that dies is restarted (with the
    /// same handler) and the user told to load the file again.
    pub(super) fn spawn_worker(&self, handler: Handler) {
        let worker = match make_worker() {
            Ok(w) => w,
            Err(e) => {
                self.error
                    .set(Some(format!("cannot start the worker: {e}")));
                return;
            }
        };
        let this = *self;
        let onmessage = gloo_events::EventListener::new(&worker, "message", move |ev| {
            let Some(text) = ev
                .dyn_ref::<web_sys::MessageEvent>()
                .and_then(|m| m.data().as_string())
            else {
                return;
            };
            match serde_json::from_str::<Response>(&text) {
                Ok(r) => handler(this, r),
                Err(e) => this
                    .error
                    .set(Some(format!("unreadable reply from the worker: {e}"))),
            }
        });
        let onerror = gloo_events::EventListener::new(&worker, "error", move |ev| {
            let detail = js_sys::Reflect::get(ev, &"message".into())
                .ok()
                .and_then(|m| m.as_string())
                .unwrap_or_else(|| "unknown error".into());
            this.progress.set(None);
            this.busy.set(None);
            this.error.set(Some(format!(
                "The worker stopped ({detail}). It is restarted; load the file again."
            )));
            this.ready.set(false);
            this.worker.update_value(|w| {
                if let Some(w) = w.take() {
                    w.terminate();
                }
            });
            // Not from inside this listener's own call: the restart replaces (drops) it.
            wasm_bindgen_futures::spawn_local(async move { this.spawn_worker(handler) });
        });
        self.worker_listeners.set_value(vec![onmessage, onerror]);
        self.worker.set_value(Some(worker));
    }
}

/// Starts the worker from `worker.js` / `worker_bg.wasm` next to the page (Trunk's worker
/// output), through a small blob script so that relative paths work under any sub-path. The
/// script also tells the worker where the tables it fetches on first use are (`assets/`): a blob
/// worker's own URL is no base for relative paths.
fn make_worker() -> Result<web_sys::Worker, String> {
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("no document")?;
    let base = document
        .base_uri()
        .map_err(|e| format!("{e:?}"))?
        .unwrap_or_default();
    let url = |file: &str| -> Result<String, String> {
        web_sys::Url::new_with_base(file, &base)
            .map(|u| u.href())
            .map_err(|e| format!("{e:?}"))
    };
    let (js, wasm, assets) = (url("worker.js")?, url("worker_bg.wasm")?, url("assets/")?);
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let script = format!(
        "self.memlensAssets={};importScripts({});wasm_bindgen({});",
        quote(&assets),
        quote(&js),
        quote(&wasm)
    );
    let parts = js_sys::Array::new();
    parts.push(&JsValue::from_str(&script));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("text/javascript");
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options)
        .map_err(|e| format!("{e:?}"))?;
    let blob_url =
        web_sys::Url::create_object_url_with_blob(&blob).map_err(|e| format!("{e:?}"))?;
    web_sys::Worker::new(&blob_url).map_err(|e| format!("{e:?}"))
}
