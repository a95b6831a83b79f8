//! The light / dark theme: remembered in local storage, else the system's, and set on the
//! document's root element (`data-theme`).

use gloo_storage::{LocalStorage as BrowserStorage, Storage as _};

/// Where the chosen theme is remembered.
const THEME_KEY: &str = "memlens.theme";

/// The theme to start with: the one remembered, else the system's.
pub fn initial() -> String {
    BrowserStorage::get::<String>(THEME_KEY)
        .ok()
        .filter(|t| t == "dark" || t == "light")
        .unwrap_or_else(|| {
            let dark = web_sys::window()
                .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
                .is_some_and(|m| m.matches());
            if dark { "dark" } else { "light" }.to_string()
        })
}

/// The theme after `current` (light ↔ dark), remembered for the next visit.
pub fn toggled(current: &str) -> &'static str {
    let next = if current == "dark" { "light" } else { "dark" };
    // Not remembered if storage is unavailable: the theme still switches.
    let _ = BrowserStorage::set(THEME_KEY, next);
    next
}

/// Shows `theme` (sets it on the document's root element).
pub fn set(theme: &str) {
    if let Some(root) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
    {
        let _ = root.set_attribute("data-theme", theme);
    }
}
