//! What the engine computes from a chunk's text once: distinct informative terms and word 3-gram
//! uniqueness (density), and the MinHash signature of the word 3-grams (redundancy). Hashes are
//! fixed (FNV-1a, splitmix64): the same on every platform and run.

use super::{MINHASH_HASHES, SHINGLE_WORDS};
use crate::text;

/// What the engine computes from a chunk's text once.
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    pub(super) distinct_terms: u32,
    pub(super) uniqueness: f64,
    pub(super) signature: Option<[u32; MINHASH_HASHES]>,
    /// The index terms ([`text::terms`]), in order: the BM25 document, from the same pass.
    pub(super) terms: Vec<String>,
}

pub(super) fn analyze(content: &str) -> Analysis {
    let mut word_hashes = Vec::new();
    let mut term_hashes = Vec::new();
    let mut terms = Vec::new();
    // One buffer for every word's lowercase form (`text::words` without a string per word):
    // a word is copied out only when it becomes a term.
    let mut w = String::new();
    for (start, end) in text::word_spans(content) {
        text::lowercase_into(&content[start..end], &mut w);
        word_hashes.push(fnv1a(w.as_bytes()));
        if !text::is_stop_word(&w) {
            let term = text::stem_owned(w.clone());
            term_hashes.push(fnv1a(term.as_bytes()));
            terms.push(term);
        }
    }
    term_hashes.sort_unstable();
    term_hashes.dedup();
    let mut shingles: Vec<u64> = if word_hashes.len() >= SHINGLE_WORDS {
        word_hashes.windows(SHINGLE_WORDS).map(hash_words).collect()
    } else if word_hashes.is_empty() {
        Vec::new()
    } else {
        vec![hash_words(&word_hashes)]
    };
    let total = shingles.len();
    shingles.sort_unstable();
    shingles.dedup();
    Analysis {
        distinct_terms: u32::try_from(term_hashes.len()).unwrap_or(u32::MAX),
        uniqueness: if total == 0 {
            1.0
        } else {
            shingles.len() as f64 / total as f64
        },
        signature: (!shingles.is_empty()).then(|| minhash(&shingles)),
        terms,
    }
}

/// Multipliers and offsets of the MinHash functions `h_i(x) = (a_i·x + b_i) >> 32` (multiply-shift
/// hashing of the already-mixed shingle hash), from a fixed splitmix64 sequence: no OS randomness.
const MINHASH_PARAMS: [(u64, u64); MINHASH_HASHES] = {
    let mut p = [(0u64, 0u64); MINHASH_HASHES];
    let mut i = 0;
    while i < MINHASH_HASHES {
        p[i] = (
            splitmix64(0x5EED_0000 + 2 * i as u64) | 1,
            splitmix64(0x5EED_0001 + 2 * i as u64),
        );
        i += 1;
    }
    p
};

fn minhash(shingles: &[u64]) -> [u32; MINHASH_HASHES] {
    // Hash function by hash function: each minimum stays in a register over the shingles, where
    // shingle by shingle every one of the 64 was loaded and stored again (the same minima).
    MINHASH_PARAMS.map(|(a, b)| {
        shingles
            .iter()
            .map(|&x| (a.wrapping_mul(x).wrapping_add(b) >> 32) as u32)
            .fold(u32::MAX, u32::min)
    })
}

/// splitmix64 (Steele, Lea and Flood): `x` advanced by the golden-ratio step and mixed. Fixed on
/// every platform: the engine's hashes, and the fit's resampling draws (`x`, `x + step`, ...).
pub const fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

/// Order-sensitive hash of a word sequence (a shingle).
fn hash_words(words: &[u64]) -> u64 {
    let mut h = splitmix64(words.len() as u64);
    for &w in words {
        h = splitmix64(h.rotate_left(23) ^ w);
    }
    h
}

/// Hash of signature rows (an LSH band or the whole signature).
pub(super) fn hash_rows(rows: &[u32]) -> u64 {
    let mut h = splitmix64(rows.len() as u64);
    for &r in rows {
        h = splitmix64(h ^ u64::from(r));
    }
    h
}
