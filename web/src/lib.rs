//! The MemLens web analyzer: a client-side Leptos app (`src/bin/app.rs`, the page) and a Web
//! Worker (`src/bin/worker.rs`) that imports trace files and runs every analysis and replay with
//! the core, off the main thread. They talk in JSON ([`protocol`]): the page sends a [`Request`]
//! (with the file itself, when importing), the worker answers with [`Response`]s.
//!
//! The page never computes a figure itself: numbers come from `memlens_core::analysis`, run in
//! the worker. Trace content is only ever rendered as text. The only fetch the app makes is a
//! `#url=` / `?url=` the user gave.

pub mod app;
pub mod protocol;
pub mod worker;

pub use protocol::{Request, Response};
