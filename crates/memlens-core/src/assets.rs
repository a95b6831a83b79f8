//! The large tables the core reads on first use: the tokenizer vocabularies and the word-vector
//! table, a few MB each.
//!
//! Native hosts (the CLI, the npm and Python packages) build with the `embedded-assets` feature
//! (on by default): the tables are compiled in and nothing here needs calling. A host that ships
//! them separately, as the web app's worker does so they are fetched only when a trace first
//! needs them, builds without the feature and installs a [`Loader`] that returns a table's bytes
//! in the format named by [`Asset::file_name`]. The core stays pure: the loader is the host's I/O.
//!
//! ```
//! use memlens_core::assets::{self, Asset};
//!
//! fn from_disk(asset: Asset) -> Result<Vec<u8>, String> {
//!     std::fs::read(asset.file_name()).map_err(|e| e.to_string())
//! }
//! // Once per process, before the first count; a second loader is refused.
//! assets::set_loader(from_disk);
//! assert_eq!(Asset::O200kBase.file_name(), "o200k_base.tiktoken");
//! ```
//!
//! When a table cannot be had (no loader, or the loader fails), nothing panics: token counts fall
//! back to an estimate marked as such ([`crate::tokens::TokenCounter::unavailable`] says why) and
//! retrieval works without word vectors (lexical matching only).

use std::sync::OnceLock;

/// A table the core loads on first use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Asset {
    /// tiktoken's o200k_base vocabulary (`.tiktoken`: one `base64-token rank` per line).
    O200kBase,
    /// tiktoken's cl100k_base vocabulary (same format).
    Cl100kBase,
    /// The word-vector table of [`crate::recall`] (its binary format, `WordVectors::to_bytes`).
    WordVectors,
}

impl Asset {
    /// Every asset.
    pub const ALL: [Asset; 3] = [Asset::O200kBase, Asset::Cl100kBase, Asset::WordVectors];

    /// The file name a host ships the asset under.
    pub fn file_name(self) -> &'static str {
        match self {
            Asset::O200kBase => "o200k_base.tiktoken",
            Asset::Cl100kBase => "cl100k_base.tiktoken",
            Asset::WordVectors => "word-vectors.bin",
        }
    }
}

/// Returns an asset's bytes, or why it cannot.
pub type Loader = fn(Asset) -> Result<Vec<u8>, String>;

static LOADER: OnceLock<Loader> = OnceLock::new();

/// Installs the host's loader, used for assets not compiled in. Returns false (and keeps the
/// first) when one was already installed: tables already loaded must not change under a run.
pub fn set_loader(loader: Loader) -> bool {
    LOADER.set(loader).is_ok()
}

/// True when the assets are compiled in (the `embedded-assets` feature).
pub const EMBEDDED: bool = cfg!(feature = "embedded-assets");

/// Why an asset could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct AssetError {
    /// The asset's file name.
    pub file: &'static str,
    /// What went wrong.
    pub reason: String,
}

/// The asset's bytes from the host's loader (for assets not compiled in).
#[cfg_attr(feature = "embedded-assets", allow(dead_code))]
pub(crate) fn load(asset: Asset) -> Result<Vec<u8>, AssetError> {
    let error = |reason: String| AssetError {
        file: asset.file_name(),
        reason,
    };
    let loader = LOADER.get().ok_or_else(|| {
        error(
            "not compiled in (no `embedded-assets` feature) and the host installed no loader"
                .into(),
        )
    })?;
    loader(asset).map_err(error)
}
