//! The progress bar of a load: stage, percent, and bytes read so far with their rate.

use crate::app::fmt;
use crate::app::state::ctx;
use leptos::prelude::*;

/// The progress bar.
#[component]
pub fn ProgressBar() -> impl IntoView {
    let ctx = ctx();
    move || {
        ctx.progress.get().map(|p| {
            let secs = ((js_sys::Date::now() - p.started) / 1000.0).max(0.001);
            let rate = if p.bytes > 0 {
                format!(
                    " · {} · {:.1} s ({:.1} MB/s so far)",
                    fmt::mb(p.bytes),
                    secs,
                    p.bytes as f64 / 1e6 / secs
                )
            } else {
                String::new()
            };
            view! {
                <div class="progress" id="progress">
                    <div class="bar"><div class="fill" style:width=format!("{}%", p.percent)></div></div>
                    <span>{format!("{}% · {}{}", p.percent, p.stage, rate)}</span>
                </div>
            }
        })
    }
}
