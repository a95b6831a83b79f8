//! A chunk's content as the detector reads it: distinctive tokens, prose fragments with their
//! words (quote shingles) and candidate rare terms. JSON content is read by its values.

use super::scan::{is_path, number, scan, Token};
use super::{EvidenceKind, QUOTE_MIN_CONTENT, QUOTE_WORDS, RARE_MIN_LEN};
use crate::text::{self, is_stop_word, stem};
use foldhash::HashSet;
use serde_json::Value;

/// A candidate rare term: its stem and the word as written (lowercase).
pub(super) type Term = (String, String);

/// A run of prose (a whole plain-text chunk, or one JSON string value) with its words.
#[derive(Debug, Clone, Default)]
pub(super) struct Fragment {
    pub(super) text: String,
    /// Byte ranges of the words in `text`.
    pub(super) words: Vec<(usize, usize)>,
    /// Hash of each word, lowercase; empty when the fragment is shorter than a shingle.
    pub(super) hashes: Vec<u64>,
    /// Whether each word is a content word (not a stop word, has a letter); empty when the
    /// fragment is shorter than a shingle.
    pub(super) content: Vec<bool>,
    /// Candidate rare terms: `(stem, word)` of alphabetic content words of 4+ characters.
    pub(super) terms: Vec<Term>,
}

/// FNV-1a, then a splitmix64 finish: a fixed, fast hash (the same on every platform and run).
fn hash_str(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix(h)
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Fragment {
    pub(super) fn new(text: String) -> Fragment {
        let words: Vec<(usize, usize)> = text::word_spans(&text).collect();
        // Hashes and content flags only serve shingles: a fragment shorter than one (most JSON
        // values: "JFK", "economy") keeps them empty, without allocating.
        let shingled = words.len() >= QUOTE_WORDS;
        let (mut hashes, mut content) = if shingled {
            (
                Vec::with_capacity(words.len()),
                Vec::with_capacity(words.len()),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let mut terms = Vec::new();
        // One buffer for every word's lowercase form: most words are only hashed and checked,
        // and a word is copied out only when it becomes a term.
        let mut lower = String::new();
        for &(s, e) in &words {
            text::lowercase_into(&text[s..e], &mut lower);
            let is_content = !is_stop_word(&lower) && lower.chars().any(char::is_alphabetic);
            if shingled {
                hashes.push(hash_str(&lower));
                content.push(is_content);
            }
            if is_content && lower.chars().all(char::is_alphabetic) {
                let t = stem(&lower);
                // A CJK bigram is word-sized: it needs no minimum length.
                if t.chars().count() >= RARE_MIN_LEN || text::is_cjk_word(&t) {
                    terms.push((t, lower.clone()));
                }
            }
        }
        Fragment {
            text,
            words,
            hashes,
            content,
            terms,
        }
    }

    /// `(position, hash)` of every qualifying 6-word shingle: 4+ distinct content words.
    pub(super) fn shingles(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        (0..(self.words.len() + 1).saturating_sub(QUOTE_WORDS)).filter_map(move |i| {
            let window = i..i + QUOTE_WORDS;
            let mut distinct = [0u64; QUOTE_WORDS];
            let mut n = 0;
            for j in window.clone() {
                if self.content[j] && !distinct[..n].contains(&self.hashes[j]) {
                    distinct[n] = self.hashes[j];
                    n += 1;
                }
            }
            (n >= QUOTE_MIN_CONTENT).then(|| {
                let h = self.hashes[window]
                    .iter()
                    .fold(0x9e37_79b9_7f4a_7c15u64, |h, &w| mix(h ^ w));
                (i, h)
            })
        })
    }
}

/// Tokens, prose fragments and terms of one chunk.
#[derive(Debug, Default, Clone)]
pub(crate) struct Analysis {
    pub(super) tokens: Vec<Token>,
    pub(super) keys: HashSet<String>,
    pub(super) fragments: Vec<Fragment>,
}

impl Analysis {
    pub(super) fn of(content: &str) -> Analysis {
        let mut a = Analysis::default();
        let trimmed = content.trim_start();
        if trimmed.starts_with('{') || trimmed.starts_with('[') {
            if let Ok(v) = serde_json::from_str::<Value>(content) {
                a.json(v);
                return a;
            }
        }
        a.prose(content.to_string());
        a
    }

    /// Walks the value it owns: its strings become the fragments' texts without a copy.
    fn json(&mut self, v: Value) {
        match v {
            Value::String(s) => self.prose(s),
            Value::Number(n) => {
                let text = n.to_string();
                number(&text, None, &mut |t| self.push(t));
            }
            Value::Array(items) => items.into_iter().for_each(|x| self.json(x)),
            Value::Object(map) => {
                for (k, x) in map {
                    if k.chars().any(|c| c.is_ascii_digit()) {
                        scan(&k, &mut |t| self.push(t));
                    }
                    self.json(x);
                }
            }
            Value::Bool(_) | Value::Null => {}
        }
    }

    fn prose(&mut self, text: String) {
        scan(&text, &mut |t| self.push(t));
        self.fragments.push(Fragment::new(text));
    }

    fn push(&mut self, t: Token) {
        if self.keys.insert(t.key.clone()) {
            self.tokens.push(t);
        }
    }

    /// Distinct candidate rare terms `(stem, word)`, sorted by stem (the first spelling kept).
    pub(super) fn terms(&self) -> Vec<Term> {
        let mut out: Vec<Term> = self
            .fragments
            .iter()
            .flat_map(|f| f.terms.iter().cloned())
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }
}

/// The distinctive tokens of a chunk's content as the detector reads it (JSON by its values):
/// identifiers (codes, emails, URLs, paths, code names) and numbers, each once, in order, as
/// `(kind, key, text)`; `key` is the normalized form two texts are compared by.
pub fn distinctive_tokens(content: &str) -> Vec<(EvidenceKind, String, String)> {
    Analysis::of(content)
        .tokens
        .into_iter()
        .map(|t| (t.kind, t.key, t.text))
        .collect()
}

/// Whether a token (as [`distinctive_tokens`] returns it) is a file path.
pub fn is_path_token(text: &str) -> bool {
    !text.contains("://") && is_path(text)
}
