//! Gzipped trace files (`x.traj.json.gz`, people archive logs so) opened in the page: the browser
//! decompresses them (`DecompressionStream("gzip")`) before the worker imports them, so the
//! worker's WebAssembly carries no decompressor (memlens-import's `gzip` feature stays off here).
//! The decompressed bytes count against the tab's limit ([`crate::app::MAX_LOAD_BYTES`]): reading
//! stops past it, so a small file that inflates to gigabytes cannot take the tab's memory.
//!
//! Decompressing is asynchronous and the worker answers requests one at a time: requests that
//! arrive meanwhile wait, and are answered in order after it.

use super::{handle, payload_bytes, post, progress};
use crate::protocol::{Request, Response};
use memlens_import::gzip::is_gzip;
use memlens_import::ImportError;
use std::cell::RefCell;
use std::collections::VecDeque;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::DedicatedWorkerGlobalScope;

// The few stream methods used, bound by hand: the worker is a classic script (no JS snippets), and
// the page's build needs none of web-sys' stream types.
#[wasm_bindgen]
extern "C" {
    type DecompressionStream;
    #[wasm_bindgen(constructor, catch)]
    fn new(format: &str) -> Result<DecompressionStream, JsValue>;

    type ByteStream;
    #[wasm_bindgen(method, js_name = pipeThrough)]
    fn pipe_through(this: &ByteStream, transform: &DecompressionStream) -> ByteStream;
    #[wasm_bindgen(method, js_name = getReader)]
    fn get_reader(this: &ByteStream) -> StreamReader;

    type StreamReader;
    #[wasm_bindgen(method)]
    fn read(this: &StreamReader) -> js_sys::Promise;
    #[wasm_bindgen(method)]
    fn cancel(this: &StreamReader) -> js_sys::Promise;

    type StreamingBlob;
    #[wasm_bindgen(method)]
    fn stream(this: &StreamingBlob) -> ByteStream;
}

thread_local! {
    /// `Some` while a gzipped load is being decompressed: the requests that came after it.
    static WAITING: RefCell<Option<VecDeque<(Request, JsValue)>>> = const { RefCell::new(None) };
}

/// Answers `request`: now, unless it carries gzipped files or waits behind one that did.
pub(super) fn dispatch(scope: &DedicatedWorkerGlobalScope, request: Request, payload: JsValue) {
    let now = WAITING.with(|w| match w.borrow_mut().as_mut() {
        Some(queue) => {
            queue.push_back((request, payload));
            None
        }
        None => Some((request, payload)),
    });
    let Some((request, payload)) = now else {
        return;
    };
    if files_of(&request, &payload).iter().any(gzipped) {
        WAITING.with(|w| *w.borrow_mut() = Some(VecDeque::from([(request, payload)])));
        wasm_bindgen_futures::spawn_local(drain(scope.clone()));
    } else {
        handle(scope, request, payload);
    }
}

/// Answers the waiting requests in order, decompressing where needed, until none is left.
async fn drain(scope: DedicatedWorkerGlobalScope) {
    loop {
        let next = WAITING.with(|w| {
            let mut w = w.borrow_mut();
            let next = w.as_mut().and_then(VecDeque::pop_front);
            if next.is_none() {
                *w = None;
            }
            next
        });
        let Some((request, payload)) = next else {
            return;
        };
        match decompressed(&scope, &request, payload).await {
            Ok(payload) => handle(&scope, request, payload),
            Err(message) => post(
                &scope,
                &Response::Error {
                    during: "import".into(),
                    message,
                },
            ),
        }
    }
}

/// The files a request carries (a set's, or the one), in order; none for other requests.
fn files_of(request: &Request, payload: &JsValue) -> Vec<JsValue> {
    match request {
        Request::ImportFiles { .. } => js_sys::Array::from(payload).iter().collect(),
        Request::Import { .. } | Request::Follow { .. } => vec![payload.clone()],
        _ => Vec::new(),
    }
}

fn names_of(request: &Request) -> Vec<String> {
    match request {
        Request::ImportFiles { names, .. } => names.clone(),
        Request::Import { name, .. } | Request::Follow { name, .. } => vec![name.clone()],
        _ => Vec::new(),
    }
}

/// Whether a file (`File`/`Blob`) starts with gzip's magic bytes, read synchronously (a worker
/// may): the content decides, as in the CLI, not the name.
fn gzipped(file: &JsValue) -> bool {
    let Some(blob) = file.dyn_ref::<web_sys::Blob>() else {
        return false;
    };
    let head = blob.slice_with_i32_and_i32(0, 2).ok();
    head.and_then(|h| payload_bytes(&JsValue::from(h)).ok())
        .is_some_and(|bytes| is_gzip(&bytes))
}

/// The payload with each gzipped file replaced by its decompressed bytes (a `Blob`). In a set, a
/// file that does not decompress becomes a `js_sys::Error` (a "not loaded" warning, the others
/// load: [`read_set`]); alone, or past the tab's limit, the request fails.
async fn decompressed(
    scope: &DedicatedWorkerGlobalScope,
    request: &Request,
    payload: JsValue,
) -> Result<JsValue, String> {
    let files = files_of(request, &payload);
    if !files.iter().any(gzipped) {
        return Ok(payload);
    }
    let set = matches!(request, Request::ImportFiles { .. });
    let mut total = 0.0;
    let out = js_sys::Array::new();
    for (name, file) in names_of(request).iter().zip(files) {
        if !gzipped(&file) {
            total += file.dyn_ref::<web_sys::Blob>().map_or(0.0, |b| b.size());
            out.push(&file);
            continue;
        }
        progress(scope, &format!("decompressing {name}"), 5, 0);
        match gunzip(&file, name, crate::app::MAX_LOAD_BYTES - total).await {
            Ok(blob) => {
                total += blob.size();
                out.push(&blob);
            }
            Err(Unreadable::TooLarge(message)) => return Err(message),
            Err(Unreadable::Corrupt(message)) if set => {
                out.push(&js_sys::Error::new(&message));
            }
            Err(Unreadable::Corrupt(message)) => return Err(format!("{name}: {message}")),
        }
    }
    Ok(if set { out.into() } else { out.get(0) })
}

enum Unreadable {
    /// Not gzip after all, truncated or corrupt: the message, without the file's name.
    Corrupt(String),
    /// Past the tab's limit: the whole message.
    TooLarge(String),
}

/// A gzipped file's content, read chunk by chunk and stopped once past `room` bytes.
async fn gunzip(file: &JsValue, name: &str, room: f64) -> Result<web_sys::Blob, Unreadable> {
    let corrupt = |e: JsValue| {
        let why = e
            .dyn_ref::<js_sys::Error>()
            .map(|e| String::from(e.message()))
            .unwrap_or_else(|| format!("{e:?}"));
        Unreadable::Corrupt(format!(
            "not a readable gzip file (corrupt or truncated): {why}"
        ))
    };
    let gzip = DecompressionStream::new("gzip").map_err(corrupt)?;
    let reader = file
        .unchecked_ref::<StreamingBlob>()
        .stream()
        .pipe_through(&gzip)
        .get_reader();
    let parts = js_sys::Array::new();
    let mut read = 0.0;
    loop {
        let step = wasm_bindgen_futures::JsFuture::from(reader.read())
            .await
            .map_err(corrupt)?;
        let field = |key: &str| js_sys::Reflect::get(&step, &key.into()).unwrap_or_default();
        if field("done").as_bool().unwrap_or(true) {
            break;
        }
        let chunk = field("value");
        read += chunk
            .dyn_ref::<js_sys::Uint8Array>()
            .map_or(0, |c| c.length()) as f64;
        if read > room {
            // Stops the decompression; what was read is dropped with `parts`.
            let _ = reader.cancel();
            return Err(Unreadable::TooLarge(format!(
                "{name}: decompressed, it is more than a browser tab can analyze at a time \
                 ({:.1} GB in one load: its WebAssembly memory is at most 4 GB and importing takes \
                 about three times the file). Use the command line instead: memlens inspect FILE \
                 reads gzipped files as large as the machine's memory.",
                crate::app::MAX_LOAD_BYTES / 1e9
            )));
        }
        parts.push(&chunk);
    }
    web_sys::Blob::new_with_u8_array_sequence(&parts).map_err(corrupt)
}

/// A set's files read: each one's name and bytes, and those that could not be decompressed.
pub(super) struct SetRead {
    pub files: Vec<(String, Vec<u8>)>,
    pub failed: Vec<ImportError>,
}

/// A set's files as `(name, bytes)`, and those that could not be decompressed (`js_sys::Error`s
/// in the payload, see [`decompressed`]) as import errors, to be reported as not loaded.
pub(super) fn read_set(
    scope: &DedicatedWorkerGlobalScope,
    names: &[String],
    items: &js_sys::Array,
) -> Result<SetRead, String> {
    let mut files = Vec::with_capacity(names.len());
    let mut failed = Vec::new();
    for (i, name) in names.iter().enumerate() {
        progress(
            scope,
            &format!("reading {name}"),
            (5 + 20 * i / names.len()) as u32,
            0,
        );
        let item = items.get(i as u32);
        if let Some(e) = item.dyn_ref::<js_sys::Error>() {
            failed.push(ImportError::Compressed {
                file: name.clone(),
                message: e.message().into(),
            });
            continue;
        }
        let bytes = payload_bytes(&item).map_err(|e| format!("{name}: {e}"))?;
        files.push((name.clone(), bytes));
    }
    Ok(SetRead { files, failed })
}
