//! Loading traces: files (opened, dropped, pasted, re-read), the bundled sample and a `#url=`
//! download, each handed to the worker to import; loads too large for a tab are refused first.

use super::state::Ctx;
use crate::protocol::Request;
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The sample trace (written for MemLens: an OpenAI-format support agent with tool calls).
pub const SAMPLE: &str = include_str!("../../sample/support-agent.json");
/// The sample's file name.
pub const SAMPLE_NAME: &str = "sample-support-agent.json";

/// The most bytes of trace files one tab takes in a load. The worker's WebAssembly memory is at
/// most 4 GiB and importing takes about three times the file (RELIABILITY.md), so a larger load
/// would run the tab out of memory half-way: it is refused up front, pointing to the CLI.
pub const MAX_LOAD_BYTES: f64 = 1024.0 * 1024.0 * 1024.0;

/// Why a load of these files (name, `File`/`Blob`, bytes or text) is refused, if it is.
fn too_large(files: &[(String, JsValue)]) -> Option<String> {
    let sizes: Vec<(&str, f64)> = files
        .iter()
        .map(|(name, payload)| {
            let size = match payload.dyn_ref::<web_sys::Blob>() {
                Some(blob) => blob.size(),
                None => payload.as_string().map_or(0.0, |s| s.len() as f64),
            };
            (name.as_str(), size)
        })
        .collect();
    let total: f64 = sizes.iter().map(|(_, s)| s).sum();
    if total <= MAX_LOAD_BYTES {
        return None;
    }
    let gb = |b: f64| format!("{:.1} GB", b / 1e9);
    let what = match sizes.as_slice() {
        [(name, size)] => format!("{name} is {}", gb(*size)),
        _ => format!("these {} files are {} together", sizes.len(), gb(total)),
    };
    Some(format!(
        "{what}: a browser tab can analyze up to {} at a time (its WebAssembly memory is at most 4 GB \
         and importing takes about three times the file). Use the command line instead: \
         memlens inspect FILE reads files as large as the machine's memory.",
        gb(MAX_LOAD_BYTES)
    ))
}

impl Ctx {
    /// Imports a file's content (a `File`, bytes or a string) in the worker.
    pub fn load(&self, name: String, payload: JsValue) {
        self.load_files(vec![(name, payload)]);
    }

    /// Imports files as one set (several dropped files, a folder): one file is a plain import;
    /// several are imported together and their traces linked (a session and its subagents).
    pub fn load_files(&self, files: Vec<(String, JsValue)>) {
        if files.is_empty() {
            return;
        }
        if let Some(why) = too_large(&files) {
            self.error.set(Some(why));
            return;
        }
        self.error.set(None);
        self.redaction.set(None);
        self.start_progress("starting".into());
        self.last.set_value(files.clone());
        let model = self.model_override();
        if files.len() == 1 {
            let Some((name, payload)) = files.into_iter().next() else {
                return;
            };
            self.send(&Request::Import { name, model }, payload);
        } else {
            let (names, payloads): (Vec<String>, Vec<JsValue>) = files.into_iter().unzip();
            let array: js_sys::Array = payloads.into_iter().collect();
            self.send(&Request::ImportFiles { names, model }, array.into());
        }
    }

    /// Imports the last files again (after the model override changed), keeping the trace.
    pub fn reload(&self) {
        let files = self.last.get_value();
        if !files.is_empty() {
            self.keep_trace();
            self.load_files(files);
        }
    }

    /// Loads the bundled sample.
    pub fn load_sample(&self) {
        self.load(SAMPLE_NAME.into(), JsValue::from_str(SAMPLE));
    }
}

/// Fetches `#url=` (the only request the app makes, and only when asked).
pub fn fetch_url(ctx: Ctx, url: String) {
    ctx.start_progress(format!("downloading {url}"));
    wasm_bindgen_futures::spawn_local(async move {
        match download(&url).await {
            Ok(bytes) => {
                let name = url.rsplit('/').next().unwrap_or("download").to_string();
                ctx.load(name, bytes.into());
            }
            Err(e) => {
                ctx.progress.set(None);
                ctx.error
                    .set(Some(format!("Could not download {url}: {e}")));
            }
        }
    });
}

/// The bytes at `url`.
async fn download(url: &str) -> Result<js_sys::Uint8Array, String> {
    let w = web_sys::window().ok_or("no window")?;
    let response = wasm_bindgen_futures::JsFuture::from(w.fetch_with_str(url))
        .await
        .map_err(|e| format!("{e:?}"))?;
    let response: web_sys::Response = response.dyn_into().map_err(|_| "not a response")?;
    if !response.ok() {
        return Err(format!("HTTP {}", response.status()));
    }
    let buffer = wasm_bindgen_futures::JsFuture::from(
        response.array_buffer().map_err(|e| format!("{e:?}"))?,
    )
    .await
    .map_err(|e| format!("{e:?}"))?;
    Ok(js_sys::Uint8Array::new(&buffer))
}
