//! Shared pieces of the charts and tables: a category's colour and the category legend.

use leptos::prelude::*;
use memlens_core::Category;

/// The colour of a category (CSS custom property set per theme).
pub fn colour(c: Category) -> String {
    format!("var(--cat-{})", c.as_str())
}

/// The legend of `categories`: a swatch and a name each.
pub fn legend(categories: &[Category]) -> impl IntoView {
    view! {
        <div class="legend">
            {categories.iter().map(|&c| view! {
                <span><i style:background=colour(c)></i>{c.as_str()}</span>
            }).collect_view()}
        </div>
    }
}
