//! The page's URL: the state a link gives (`view`, `trace`, `policy`, `budget`, and what to load:
//! `url` or `sample`), read from the hash and the query string at start, and the hash kept in
//! step with the state afterwards.

use super::load::fetch_url;
use super::state::{Ctx, View};
use leptos::prelude::*;
use std::collections::BTreeMap;
use wasm_bindgen::JsValue;

/// Reads `name=value` pairs from the hash and the query string.
fn url_params() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(location) = web_sys::window().map(|w| w.location()) else {
        return out;
    };
    for part in [
        location.search().unwrap_or_default(),
        location.hash().unwrap_or_default(),
    ] {
        let trimmed = part.trim_start_matches(['?', '#']);
        for pair in trimmed.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = js_sys::decode_uri_component(v)
                .ok()
                .and_then(|s| s.as_string())
                .unwrap_or_else(|| v.to_string());
            out.insert(k.to_string(), v);
        }
    }
    out
}

fn encode(s: &str) -> String {
    js_sys::encode_uri_component(s).into()
}

/// Applies the URL's state and starts the load it asks for (`#url=` or `sample`).
pub fn apply(ctx: Ctx) {
    let params = url_params();
    if let Some(v) = params.get("view").and_then(|v| View::from_slug(v)) {
        ctx.view.set(v);
    }
    if let Some(t) = params.get("trace").and_then(|t| t.parse().ok()) {
        ctx.pending_trace.set_value(Some(t));
    }
    if let Some(b) = params.get("budget").and_then(|b| b.parse().ok()) {
        ctx.budget.set(b);
    }
    if let Some(p) = params.get("policy") {
        if let Ok(config) = memlens_core::policy::PolicyConfig::builtin(p) {
            ctx.policy_name.set(p.clone());
            ctx.policy_text.set(config.to_json());
        }
    }
    if let Some(url) = params.get("url").filter(|u| !u.is_empty()) {
        ctx.source_url.set(Some(url.clone()));
        fetch_url(ctx, url.clone());
    } else if params.contains_key("sample") {
        ctx.load_sample();
    }
}

/// Keeps the hash in step with the view, trace, policy, budget and source URL.
pub fn keep_hash(ctx: Ctx) {
    Effect::new(move |_| {
        let mut hash = format!("#view={}", ctx.view.get().slug());
        if let Some(t) = ctx.trace.get() {
            hash.push_str(&format!("&trace={t}"));
        }
        hash.push_str(&format!(
            "&policy={}&budget={}",
            encode(&ctx.policy_name.get()),
            ctx.budget.get()
        ));
        if let Some(u) = ctx.source_url.get() {
            hash.push_str(&format!("&url={}", encode(&u)));
        }
        if let Some(h) = web_sys::window().and_then(|w| w.history().ok()) {
            let _ = h.replace_state_with_url(&JsValue::NULL, "", Some(&hash));
        }
    });
}
