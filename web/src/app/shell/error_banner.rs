//! The error banner: the last error, shown until dismissed.

use crate::app::state::ctx;
use leptos::prelude::*;

/// The error banner.
#[component]
pub fn ErrorBanner() -> impl IntoView {
    let ctx = ctx();
    move || {
        ctx.error.get().map(|e| {
            view! {
                <div class="error" id="error" role="alert">
                    <span>{e}</span>
                    <button on:click=move |_| ctx.error.set(None)>"Dismiss"</button>
                </div>
            }
        })
    }
}
