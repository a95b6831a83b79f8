//! The MemLens web analyzer: a client-side Leptos app (`src/bin/app.rs`, the page) and a Web
//! Worker (`src/bin/worker.rs`) that imports trace files and runs every analysis and replay with
//! the core, off the main thread. They talk in JSON ([`protocol`]): the page sends a [`Request`]
//! (with the file itself, when importing), the worker answers with [`Response`]s.
//!
//! The page never computes a figure itself: numbers come from `memlens_core::analysis`, run in
//! the worker. Trace content is only ever rendered as text. The only fetch the app makes is a
//! `#url=` / `?url=` the user gave.
//!
//! - **The page** (`src/bin/app.rs` → `app/`): `app/files.rs` takes several files or a folder;
//!   `app/calls.rs` is the Calls view, whose breakdowns the worker computes on request
//!   (`analysis::call_view`); `app/heatmap.rs` the value heatmap, grouped by category or tool;
//!   `app/live.rs` follows a file as it grows (a File System Access handle polled with
//!   `gloo-timers`, appended bytes sent to the worker as a `Blob` slice). Labels and the theme
//!   are kept with `gloo-storage`; the worker's `message`/`error` listeners are `gloo-events`
//!   listeners, dropped with the worker when it is restarted. gloo-worker and gloo-file are not
//!   used: gloo-worker's codec carries Rust values only, and the protocol hands the worker
//!   `File`/`Blob` handles beside the JSON so a file is never copied through the page; gloo-file
//!   wraps the page's async `FileReader`, while the worker reads with `FileReaderSync`.
//! - **The worker** (`src/bin/worker.rs` → `worker.rs`) holds the imported traces and runs
//!   `memlens_core::analysis`, the replays and the report (`Request::Report`: analysis, replays
//!   and drawing in the worker, off the page's code; the file is the CLI's byte for byte). It is
//!   started from a blob script that imports Trunk's `worker.js` / `worker_bg.wasm` by URLs
//!   relative to the document, so `dist/` works under any sub-path.
//! - **The protocol** (`protocol.rs`): JSON text, externally tagged enums (an internally tagged
//!   one doubles every payload's decoding code); measured 2.6x faster than serde-wasm-bindgen's
//!   object trees (`Request::ProtocolBench`, in the `measure` build only: `scripts/web.sh measure`;
//!   BENCHMARKS.md, "Web app").
//! - **TOML off the page**: the page is built without TOML's parser (memlens-core without its
//!   `toml` feature; this crate's own `toml` feature is on for the worker's build only,
//!   `data-cargo-features` in `index.html`). The page reads a JSON policy text itself and asks
//!   the worker to read TOML (`Request::ParsePolicy`; a button pressed meanwhile runs when the
//!   answer comes), which parses it into a table and sends it back as JSON text for the page to
//!   read: less code on either side than toml's deserializer for every policy type.
//! - **Page split**: every view but the overview is a split point (`app/split.rs`) compiled into
//!   a module of its own, with the code only it reaches (the policy editor, label fitting, the
//!   simulator's charts), fetched once the page is usable or when the view is first opened.
//!   Trunk builds one module per binary, so `scripts/web_app.sh` (a Trunk pre-build hook) builds
//!   the page: the binary linked with `--emit-relocs`, `wasm-split-cli` (main module, split
//!   modules, the chunks they share and the `__wasm_split.js` loader), `wasm-bindgen
//!   --keep-lld-exports` (the split modules import the main module's function table) and
//!   wasm-opt; `index.html` copies it to `dist/app/` and starts it.
//! - **Bundle split**: the page's wasm (UI, policy parsing, label fitting) has no tokenizer; the
//!   worker's has the tokenizer's code but not its tables. The vocabularies (o200k_base,
//!   cl100k_base) and the word vectors are files in `dist/assets/` (gathered by
//!   `scripts/web_assets.py`, a Trunk pre-build hook, from tiktoken-rs' package and
//!   `crates/memlens-core/data`) that the worker fetches when a trace first needs one
//!   (`memlens_core::assets::set_loader`; a synchronous request, allowed in a worker, so counting
//!   stays synchronous), each once per worker. A table that cannot be fetched becomes a warning
//!   and estimated counts, not a failed import.
//! - **Build and tests**: built by Trunk from `index.html` with `--cfg erase_components`
//!   (type-erased views, set by `scripts/web.sh`); browser tests in `tests/web/`.
//! - **Safety**: trace content is rendered only as text nodes (Leptos `{text}`, never inner
//!   HTML); downloads are blob URLs; the only network request is an explicit `#url=` / `?url=`.

pub mod app;
pub mod protocol;
pub mod worker;

pub use protocol::{Request, Response};
