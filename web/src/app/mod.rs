//! The page. `state` holds its state and signals; `bridge` talks to the worker, `responses` acts
//! on its replies, `requests` and `load` ask it for things; `url`, `theme` and `shell` (the
//! layout and its pieces) set the page up; the views are in their own modules, most of them
//! loaded on first use (`split`).

mod bridge;
mod calls;
mod chart;
mod chunk_detail;
mod chunks;
mod compactions;
mod cost;
mod download;
mod files;
pub mod fmt;
mod graph;
mod heatmap;
mod label_store;
mod labels;
mod live;
mod load;
mod order;
mod overview;
mod policy_form;
mod projection;
mod requests;
mod responses;
mod shell;
mod sim;
mod sim_results;
mod split;
mod state;
mod theme;
mod url;

pub use load::{MAX_LOAD_BYTES, SAMPLE, SAMPLE_NAME};
pub use state::{ctx, Ctx, Data, Loaded, Progress, View};

/// Mounts the app.
pub fn run() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(shell::App);
}
