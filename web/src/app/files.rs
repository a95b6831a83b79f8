//! Several files at once: a multi-file *Open…*, *Folder…* (a `webkitdirectory` input) and a
//! dropped folder, which the browser only exposes through the File System entries API (walked
//! by a small script: its callbacks do not map well onto `web-sys`). A folder gives the trace
//! files under it, as the CLI reads a directory: `.json`, `.jsonl`, `.ndjson`, `.traj`, each
//! gzipped too (`.json.gz`: the worker has the browser decompress it), hidden entries skipped, in
//! path order.

use super::state::Ctx;
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

// A module file, not `inline_js`: the page and the worker are two builds writing into one
// snippets/ folder, and inline snippets are numbered (inline0.js, ...) in an order that differs
// between them, so one build's file replaced the other's and failed the page's integrity check.
#[wasm_bindgen(module = "/src/app/dropped.js")]
extern "C" {
    /// `[[path, File], ...]` of what was dropped (a dropped folder walked recursively).
    fn memlens_dropped(transfer: &web_sys::DataTransfer) -> js_sys::Promise;
}

/// File extensions taken from a folder, each also gzipped (a file chosen on its own is always
/// read).
const TRACE_EXTENSIONS: [&str; 4] = ["json", "jsonl", "ndjson", "traj"];

/// Whether a file found in a folder is read: a trace extension (before a `.gz`), no hidden path
/// segment.
pub fn is_trace_path(path: &str) -> bool {
    let hidden = path.split('/').any(|segment| segment.starts_with('.'));
    let lower = path.to_ascii_lowercase();
    let extension = lower
        .strip_suffix(".gz")
        .unwrap_or(&lower)
        .rsplit_once('.')
        .map_or("", |(_, e)| e);
    !hidden && TRACE_EXTENSIONS.contains(&extension)
}

/// Loads the files picked in an input (a folder input gives paths relative to the folder).
pub fn load_list(ctx: Ctx, list: &web_sys::FileList) {
    let files: Vec<(String, web_sys::File)> = (0..list.length())
        .filter_map(|i| list.get(i))
        .map(|f| {
            let relative = js_sys::Reflect::get(&f, &"webkitRelativePath".into())
                .ok()
                .and_then(|v| v.as_string())
                .filter(|p| !p.is_empty());
            (relative.unwrap_or_else(|| f.name()), f)
        })
        .collect();
    let from_folder = files.iter().any(|(path, _)| path.contains('/'));
    load_set(ctx, files, from_folder);
}

/// Loads what was dropped: files, or the trace files of a dropped folder.
pub fn load_dropped(ctx: Ctx, transfer: &web_sys::DataTransfer) {
    let promise = memlens_dropped(transfer);
    wasm_bindgen_futures::spawn_local(async move {
        let listed = match wasm_bindgen_futures::JsFuture::from(promise).await {
            Ok(v) => v,
            Err(e) => {
                ctx.error
                    .set(Some(format!("Could not read the dropped files: {e:?}")));
                return;
            }
        };
        let files: Vec<(String, web_sys::File)> = js_sys::Array::from(&listed)
            .iter()
            .filter_map(|pair| {
                let pair = js_sys::Array::from(&pair);
                let path = pair.get(0).as_string()?;
                let file = pair.get(1).dyn_into::<web_sys::File>().ok()?;
                Some((path, file))
            })
            .collect();
        let from_folder = files.iter().any(|(path, _)| path.contains('/'));
        load_set(ctx, files, from_folder);
    });
}

fn load_set(ctx: Ctx, mut files: Vec<(String, web_sys::File)>, from_folder: bool) {
    if from_folder {
        files.retain(|(path, _)| is_trace_path(path));
        if files.is_empty() {
            ctx.error.set(Some(format!(
                "No trace files (.{}, gzipped or not) in the dropped folder",
                TRACE_EXTENSIONS.join(", .")
            )));
            return;
        }
        // Sessions before their own folders, as the CLI orders a directory.
        files = super::order::sorted(files, &|a, b| a.0.cmp(&b.0));
    }
    ctx.load_files(files.into_iter().map(|(p, f)| (p, f.into())).collect());
}

/// Clicks a hidden file input by id.
pub fn click_input(id: &str) {
    if let Some(input) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
    {
        input.click();
    }
}

/// Opens the file chooser of the *Open…* button (also Ctrl/Cmd+O).
pub fn click_open() {
    click_input("file-input");
}
