//! The tables the core reads on first use ([`memlens_core::assets`]: a tokenizer vocabulary, the
//! word vectors), fetched from the app's own `assets/` folder; those that could not be fetched
//! become warnings of every load that used them.

use super::progress;
use crate::protocol::Response;
use memlens_core::assets::Asset;
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::DedicatedWorkerGlobalScope;

thread_local! {
    /// Tables that could not be fetched, as warnings for every load that used them.
    static ASSET_FAILURES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Fetches a table the core reads on first use ([`memlens_core::assets`]: a tokenizer
/// vocabulary, the word vectors) from the app's own `assets/` folder (Trunk copies it there from
/// target/web-assets/, gathered by scripts/web_assets.py). Synchronous, which a worker
/// may do, so the core's counting stays synchronous; a same-origin static file, no user data.
pub(super) fn load_asset(asset: Asset) -> Result<Vec<u8>, String> {
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let what = match asset {
        Asset::WordVectors => "the word vectors",
        _ => "the tokenizer",
    };
    progress(
        &scope,
        &format!("loading {what} ({}, first use)", asset.file_name()),
        25,
        0,
    );
    // The folder's URL, set by the page's worker script (`make_worker`).
    let folder = js_sys::Reflect::get(&scope, &"memlensAssets".into())
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_else(|| "assets/".into());
    let result = fetch_sync(&format!("{folder}{}", asset.file_name()));
    if let Err(e) = &result {
        let effect = match asset {
            Asset::WordVectors => "retrieval matches words only, without word vectors",
            _ => "token counts are estimates (1 token per 4 bytes)",
        };
        let warning = format!("{} could not be loaded ({e}): {effect}", asset.file_name());
        ASSET_FAILURES.with(|f| f.borrow_mut().push(warning));
    }
    result
}

fn fetch_sync(url: &str) -> Result<Vec<u8>, String> {
    // A DOMException's message ("Failed to load ..."), not its stack.
    let js = |e: JsValue| match e.dyn_ref::<js_sys::Error>() {
        Some(e) => String::from(e.message()),
        None => format!("{e:?}"),
    };
    let xhr = web_sys::XmlHttpRequest::new().map_err(js)?;
    xhr.open_with_async("GET", url, false).map_err(js)?;
    xhr.set_response_type(web_sys::XmlHttpRequestResponseType::Arraybuffer);
    xhr.send().map_err(js)?;
    match xhr.status().map_err(js)? {
        200 => Ok(js_sys::Uint8Array::new(&xhr.response().map_err(js)?).to_vec()),
        status => Err(format!("HTTP {status} for {url}")),
    }
}

/// Adds the tables that could not be fetched to a load's warnings.
pub(super) fn with_asset_failures(mut response: Response) -> Response {
    let failures = ASSET_FAILURES.with(|f| f.borrow().clone());
    if let Response::Loaded {
        warnings,
        warning_count,
        ..
    }
    | Response::Appended {
        warnings,
        warning_count,
        ..
    } = &mut response
    {
        *warning_count += failures.len();
        warnings.splice(0..0, failures);
    }
    response
}
