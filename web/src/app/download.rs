//! File downloads: a text the page made (a report, exported traces, a policy, labels) saved
//! through a blob URL, so nothing leaves the browser.

use wasm_bindgen::JsValue;

/// Starts a file download of `text` (a blob URL: nothing leaves the browser).
pub fn download(name: &str, text: &str, mime: &str) {
    let parts = js_sys::Array::new();
    parts.push(&JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let anchor = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.create_element("a").ok())
        .and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlAnchorElement>(e).ok());
    if let Some(a) = anchor {
        a.set_href(&url);
        a.set_download(name);
        a.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}
