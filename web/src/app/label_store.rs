//! Where labels are kept: in local storage, per file and trace, and in labels files (exported
//! and imported by the Labels view).

use super::state::Ctx;
use gloo_storage::{LocalStorage as BrowserStorage, Storage as _};
use leptos::prelude::*;
use memlens_core::value::Label;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The labels file.
#[derive(Serialize, Deserialize)]
pub struct LabelFile {
    /// The file the labels are about.
    pub file: String,
    /// The trace's id.
    pub trace: String,
    /// The labels, by chunk key.
    pub labels: BTreeMap<String, Label>,
}

fn key(ctx: &Ctx) -> Option<String> {
    let loaded = ctx.loaded.get_untracked()?;
    let trace = loaded.traces.get(ctx.trace.get_untracked()?)?;
    Some(format!("memlens.labels:{}:{}", loaded.name, trace.id))
}

/// The stored labels of the current trace (none stored, or storage unavailable: none).
pub fn load(ctx: &Ctx) -> BTreeMap<String, Label> {
    key(ctx)
        .and_then(|k| BrowserStorage::get(&k).ok())
        .unwrap_or_default()
}

/// Stores the current trace's labels; a failed write (storage full or disabled) is shown, since
/// the labels would otherwise be lost on reload without a word.
pub fn save(ctx: &Ctx) {
    let Some(k) = key(ctx) else { return };
    let result = ctx.labels.with_untracked(|l| BrowserStorage::set(&k, l));
    if let Err(e) = result {
        ctx.error.set(Some(format!(
            "The labels could not be saved in this browser's storage ({e}); export them to keep them."
        )));
    }
}
