//! What a host that replays one trace many times reads of each chunk once: the fit replays every
//! training trace under every candidate policy, and the engine's reading of a chunk's text (the
//! reference detector's tokens and fragments, the value engine's terms and MinHash) is the same
//! in each replay. [`PerChunk`] holds one such reading for the replays of one trace, shared across
//! threads ([`crate::simulate::TraceMemo`]).
//!
//! A memo answers only for the chunk it was made for: entries are found by chunk id and checked
//! against a hash of the content, so a chunk with another text under the same id (a live host,
//! another trace) is read afresh, never given another chunk's reading.

use crate::model::Chunk;
use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

/// One reading per chunk id, made on first need.
#[derive(Debug)]
pub(crate) struct PerChunk<T> {
    slots: Vec<OnceLock<(u64, T)>>,
}

impl<T> PerChunk<T> {
    pub(crate) fn new(chunks: usize) -> Self {
        PerChunk {
            slots: (0..chunks).map(|_| OnceLock::new()).collect(),
        }
    }

    /// `chunk`'s reading, made by `read` on first need; `None` for an id the memo has no slot
    /// for, or a content other than the one read under that id.
    pub(crate) fn get(&self, chunk: &Chunk, read: impl FnOnce(&str) -> T) -> Option<&T> {
        let slot = self.slots.get(chunk.id.index())?;
        let hash = content_hash(&chunk.content);
        let (seen, value) = slot.get_or_init(|| (hash, read(&chunk.content)));
        (*seen == hash).then_some(value)
    }
}

fn content_hash(text: &str) -> u64 {
    // SipHash with fixed keys: the same on every host and run.
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}
