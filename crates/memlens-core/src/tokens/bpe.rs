//! Byte-pair counting over a vocabulary: how many tokens a pre-tokenized piece encodes to.
//!
//! The merge loops are tiktoken's (`_byte_pair_merge` for short pieces, the heap variant for long
//! ones, so a 1 MB run of punctuation is not quadratic), returning the number of parts instead of
//! the ranks. The vocabulary is read once per process: out of tiktoken-rs' encoder when the files
//! are compiled in (its `CoreBPE` is dropped afterwards so it is not held twice), or parsed from
//! the `.tiktoken` bytes the host's loader returns ([`Vocabulary::from_tiktoken`]).

use std::collections::BinaryHeap;

use std::hash::BuildHasher;

use base64::Engine as _;
use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

type Rank = u32;

/// Token bytes to merge rank, ordinary tokens only (special tokens are never produced from text).
/// The tokens' bytes sit in one buffer and the table holds spans of it: one allocation instead
/// of 200,000, which is most of the first count's cost.
pub(super) struct Vocabulary {
    bytes: Vec<u8>,
    /// (start in `bytes`, length, rank), hashed by the token's bytes.
    ranks: HashTable<(u32, u32, Rank)>,
}

/// tiktoken-rs' constructors fail only on a malformed embedded file, which its own tests exclude.
#[cfg(feature = "embedded-assets")]
const EMBEDDED: &str = "tiktoken-rs' embedded vocabulary parses";

impl Vocabulary {
    /// o200k_base, compiled in.
    #[cfg(feature = "embedded-assets")]
    pub(super) fn o200k() -> Vocabulary {
        Vocabulary::from_core(&tiktoken_rs::o200k_base().expect(EMBEDDED))
    }

    /// cl100k_base, compiled in.
    #[cfg(feature = "embedded-assets")]
    pub(super) fn cl100k() -> Vocabulary {
        Vocabulary::from_core(&tiktoken_rs::cl100k_base().expect(EMBEDDED))
    }

    /// A vocabulary in tiktoken's file format: one `base64(token) rank` line per ordinary token
    /// (the files tiktoken and tiktoken-rs ship; special tokens are not in them). The error names
    /// the line and what was expected.
    #[cfg_attr(all(feature = "embedded-assets", not(test)), allow(dead_code))]
    pub(super) fn from_tiktoken(file: &[u8]) -> Result<Vocabulary, String> {
        let mut vocabulary = Vocabulary {
            bytes: Vec::with_capacity(file.len() * 3 / 4),
            ranks: HashTable::with_capacity(file.len() / 12),
        };
        let engine = base64::engine::general_purpose::STANDARD;
        let mut token = Vec::with_capacity(256);
        for (n, line) in file.split(|&b| b == b'\n').enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            let at = |what: &str| format!("line {}: expected {what}", n + 1);
            let space = line
                .iter()
                .position(|&b| b == b' ')
                .ok_or_else(|| at("`base64-token rank`"))?;
            token.clear();
            engine
                .decode_vec(&line[..space], &mut token)
                .map_err(|e| at(&format!("a base64 token ({e})")))?;
            let rank: Rank = std::str::from_utf8(&line[space + 1..])
                .ok()
                .and_then(|r| r.parse().ok())
                .ok_or_else(|| at("a rank (a non-negative integer) after the token"))?;
            if token.is_empty() || vocabulary.rank(&token) != Rank::MAX {
                return Err(at("a non-empty token not listed before"));
            }
            vocabulary.insert(&token, rank);
        }
        if vocabulary.ranks.is_empty() {
            return Err("no tokens: expected `base64-token rank` lines".into());
        }
        Ok(vocabulary)
    }

    /// Every (token, rank), in rank order: the vocabulary in tiktoken's file format, for tests.
    #[cfg(test)]
    pub(super) fn to_tiktoken(&self) -> Vec<u8> {
        let engine = base64::engine::general_purpose::STANDARD;
        let mut entries: Vec<_> = self.ranks.iter().copied().collect();
        entries.sort_by_key(|&(_, _, rank)| rank);
        let mut out = Vec::new();
        for (s, l, rank) in entries {
            let token = &self.bytes[s as usize..(s + l) as usize];
            out.extend_from_slice(format!("{} {rank}\n", engine.encode(token)).as_bytes());
        }
        out
    }

    /// Number of ordinary tokens.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.ranks.len()
    }

    #[cfg(feature = "embedded-assets")]
    fn from_core(core: &tiktoken_rs::CoreBPE) -> Vocabulary {
        let specials = core.special_tokens();
        let mut vocabulary = Vocabulary {
            bytes: Vec::with_capacity(2 << 20),
            ranks: HashTable::with_capacity(210_000),
        };
        let mut misses = 0;
        // Ordinary ranks are dense from 0; special tokens sit just past them, with small gaps.
        // Reading until a long run of unknown ranks covers both with room to spare.
        let mut rank: Rank = 0;
        while misses < 4096 {
            match core.decode_bytes(&[rank]) {
                Ok(bytes) => {
                    misses = 0;
                    let special = std::str::from_utf8(&bytes).is_ok_and(|s| specials.contains(s));
                    if !special {
                        vocabulary.insert(&bytes, rank);
                    }
                }
                Err(_) => misses += 1,
            }
            rank += 1;
        }
        vocabulary
    }

    fn insert(&mut self, token: &[u8], rank: Rank) {
        // Both fit: the vocabularies are a few MB of bytes, tokens a few hundred bytes at most.
        let start = u32::try_from(self.bytes.len()).expect("vocabulary bytes fit in u32");
        let len = u32::try_from(token.len()).expect("a token's length fits in u32");
        self.bytes.extend_from_slice(token);
        let Vocabulary { bytes, ranks } = self;
        let hash = FxBuildHasher.hash_one(token);
        ranks.insert_unique(hash, (start, len, rank), |&(s, l, _)| {
            FxBuildHasher.hash_one(&bytes[s as usize..(s + l) as usize])
        });
    }

    /// Tokens of one piece.
    #[inline]
    pub(super) fn count_piece(&self, piece: &[u8]) -> usize {
        // Every single byte is a token; most pieces are whole tokens (tiktoken's own fast path).
        if piece.len() <= 1 || self.rank(piece) != Rank::MAX {
            return piece.len().min(1);
        }
        if piece.len() < 100 {
            self.merge_count(piece)
        } else {
            self.merge_count_large(piece)
        }
    }

    // Always inlined: the innermost call of token counting. With a plain `#[inline]`, unrelated
    // changes elsewhere in the crate made LLVM outline it (+2.7% instructions per `window` turn).
    #[inline(always)]
    fn rank(&self, token: &[u8]) -> Rank {
        let hash = FxBuildHasher.hash_one(token);
        self.ranks
            .find(hash, |&(s, l, _)| {
                &self.bytes[s as usize..(s + l) as usize] == token
            })
            .map_or(Rank::MAX, |&(_, _, rank)| rank)
    }

    /// tiktoken's `_byte_pair_merge`: repeatedly merge the lowest-ranked adjacent pair.
    fn merge_count(&self, piece: &[u8]) -> usize {
        // (start, rank of the pair starting here)
        let mut parts: Vec<(usize, Rank)> = Vec::with_capacity(piece.len() + 1);
        let mut min_rank = (Rank::MAX, usize::MAX);
        for i in 0..piece.len() - 1 {
            let rank = self.rank(&piece[i..i + 2]);
            if rank < min_rank.0 {
                min_rank = (rank, i);
            }
            parts.push((i, rank));
        }
        parts.push((piece.len() - 1, Rank::MAX));
        parts.push((piece.len(), Rank::MAX));
        let rank_after_merge = |parts: &[(usize, Rank)], i: usize| {
            if i + 3 < parts.len() {
                self.rank(&piece[parts[i].0..parts[i + 3].0])
            } else {
                Rank::MAX
            }
        };
        while min_rank.0 != Rank::MAX {
            let i = min_rank.1;
            if i > 0 {
                parts[i - 1].1 = rank_after_merge(&parts, i - 1);
            }
            parts[i].1 = rank_after_merge(&parts, i);
            parts.remove(i + 1);
            min_rank = (Rank::MAX, usize::MAX);
            for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
                if rank < min_rank.0 {
                    min_rank = (rank, i);
                }
            }
        }
        parts.len() - 1
    }

    /// tiktoken's `_byte_pair_merge_large`: the same merges in O(n log n) with a heap and a
    /// linked list of parts.
    fn merge_count_large(&self, piece: &[u8]) -> usize {
        #[derive(PartialEq, Eq)]
        struct Merge {
            start: usize,
            rank: Rank,
        }
        impl Ord for Merge {
            // Lowest rank first, then leftmost: the order the short loop merges in.
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                other
                    .rank
                    .cmp(&self.rank)
                    .then_with(|| other.start.cmp(&self.start))
            }
        }
        impl PartialOrd for Merge {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }
        struct Part {
            prev: usize,
            end: usize,
            next_end: usize,
            next_rank: Rank,
        }
        let len = piece.len();
        let mut parts: Vec<Part> = (0..len)
            .map(|i| Part {
                prev: i.wrapping_sub(1),
                end: i + 1,
                next_end: i + 2,
                next_rank: Rank::MAX,
            })
            .collect();
        let mut heap = BinaryHeap::with_capacity(len);
        for i in 0..len - 1 {
            let rank = self.rank(&piece[i..i + 2]);
            if rank != Rank::MAX {
                heap.push(Merge { start: i, rank });
                parts[i].next_rank = rank;
            }
        }
        let potential_merge =
            |parts: &mut Vec<Part>, heap: &mut BinaryHeap<Merge>, start: usize, end: usize| {
                parts[start].next_end = end;
                parts[start].next_rank = Rank::MAX;
                if end <= len {
                    let rank = self.rank(&piece[start..end]);
                    if rank != Rank::MAX {
                        heap.push(Merge { start, rank });
                        parts[start].next_rank = rank;
                    }
                }
            };
        let mut count = len;
        while let Some(left) = heap.pop() {
            if left.rank != parts[left.start].next_rank {
                continue; // invalidated by an earlier merge
            }
            let left_start = left.start;
            let right_start = parts[left_start].end;
            let right_end = parts[left_start].next_end;
            let right_next_end = parts[right_start].next_end;
            parts[left_start].end = right_end;
            potential_merge(&mut parts, &mut heap, left_start, right_next_end);
            if right_end < len {
                parts[right_end].prev = left_start;
            }
            if left_start > 0 {
                let prev_start = parts[left_start].prev;
                potential_merge(&mut parts, &mut heap, prev_start, right_end);
            }
            parts[right_start].next_rank = Rank::MAX;
            count -= 1;
        }
        count
    }
}
