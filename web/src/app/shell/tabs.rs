//! The views' tabs (keys 1-8).

use crate::app::state::{ctx, View};
use leptos::prelude::*;

/// The tabs.
#[component]
pub fn Tabs() -> impl IntoView {
    let ctx = ctx();
    view! {
        <nav class="tabs">
            {View::ALL.into_iter().enumerate().map(|(i, v)| view! {
                <button id=format!("tab-{}", v.slug()) class:active=move || ctx.view.get() == v
                    on:click=move |_| ctx.view.set(v) title=format!("{} ({})", v.title(), i + 1)>
                    <kbd>{i + 1}</kbd>" "{v.title()}
                </button>
            }).collect_view()}
        </nav>
    }
}
