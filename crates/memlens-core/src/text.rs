//! Lexical analysis shared by retrieval, relevance and the reference detector: lowercase word
//! terms, English stop words removed, a light suffix stemmer. Deterministic and allocation-light.
//!
//! Chinese, Japanese and Korean are written without spaces between words (Korean spaces
//! phrases, not words), so a run of their letters is not one word: [`word_spans`] splits such a
//! run into overlapping character bigrams ("预算不超过" gives 预算, 算不, 不超, 超过; a
//! one-character run gives the character), the usual dictionary-free analysis of CJK text. It
//! is the one place that splits words: [`words`], [`terms`], BM25, recall, the value engine's
//! MinHash and the reference detector all read words through it. Text without CJK letters is
//! split exactly as before (runs of letters, digits and `_`).

/// English stop words (a short, common list: articles, pronouns, auxiliaries, prepositions).
pub const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "d",
    "did",
    "do",
    "does",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// The longest stop word, in bytes: anything longer is not one, without a lookup.
const STOP_WORD_MAX_LEN: usize = {
    let mut max = 0;
    let mut i = 0;
    while i < STOP_WORDS.len() {
        if STOP_WORDS[i].len() > max {
            max = STOP_WORDS[i].len();
        }
        i += 1;
    }
    max
};

/// Per first byte, the range of [`STOP_WORDS`] starting with it (the list is sorted): a lookup
/// compares with a handful of words instead of binary-searching all of them. Every word is
/// checked on every add and every query, so this is on the live engine's hot path.
const STOP_WORD_BUCKETS: [(u16, u16); 256] = {
    let mut buckets = [(0u16, 0u16); 256];
    let mut i = 0;
    while i < STOP_WORDS.len() {
        let first = STOP_WORDS[i].as_bytes()[0] as usize;
        if buckets[first].1 == 0 {
            buckets[first].0 = i as u16;
        }
        buckets[first].1 = i as u16 + 1;
        i += 1;
    }
    buckets
};

/// True for a stop word (input must be lowercase).
pub fn is_stop_word(term: &str) -> bool {
    let bytes = term.as_bytes();
    if bytes.is_empty() || bytes.len() > STOP_WORD_MAX_LEN {
        return false;
    }
    let (start, end) = STOP_WORD_BUCKETS[bytes[0] as usize];
    STOP_WORDS[start as usize..end as usize].contains(&term)
}

/// True for a letter of a CJK script: Han ideographs (with the iteration and closing marks),
/// Hiragana, Katakana and Hangul. Only letters and digits count (CJK punctuation such as `。`
/// or `・` separates words as other punctuation does).
pub fn is_cjk(c: char) -> bool {
    // Below the first CJK block (all of ASCII and Latin): the common case, decided at once.
    if (c as u32) < 0x1100 {
        return false;
    }
    let cjk = matches!(c as u32,
        0x1100..=0x11FF     // Hangul Jamo
        | 0x3005..=0x3007   // 々 〆 〇
        | 0x3021..=0x3029   // Hangzhou numerals
        | 0x3031..=0x3035   // kana repeat marks
        | 0x3038..=0x303C
        | 0x3040..=0x30FF   // Hiragana, Katakana
        | 0x3130..=0x318F   // Hangul Compatibility Jamo
        | 0x31F0..=0x31FF   // Katakana Phonetic Extensions
        | 0x3400..=0x4DBF   // CJK Unified Ideographs Extension A
        | 0x4E00..=0x9FFF   // CJK Unified Ideographs
        | 0xA960..=0xA97F   // Hangul Jamo Extended-A
        | 0xAC00..=0xD7FF   // Hangul Syllables, Jamo Extended-B
        | 0xF900..=0xFAFF   // CJK Compatibility Ideographs
        | 0xFF66..=0xFFDC   // halfwidth Katakana and Hangul
        | 0x1B000..=0x1B16F // Kana Supplement, Extended-A
        | 0x20000..=0x3FFFF // CJK Unified Ideographs Extensions B-H, compatibility supplement
    );
    cjk && c.is_alphanumeric()
}

/// True for a word of [`word_spans`] made of CJK letters (a bigram or a single character): it
/// carries no English inflection, so stemmers leave it alone.
pub fn is_cjk_word(word: &str) -> bool {
    word.chars().next().is_some_and(is_cjk)
}

/// A character that belongs to a word: a Unicode letter or digit, or `_`.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Byte ranges of the words of `text`, in order: runs of letters, digits and `_` without CJK
/// letters ([`is_cjk`]), and for each run of CJK letters its overlapping character bigrams (a
/// run of one character is itself). A CJK run ends a Latin word and starts a new one:
/// `"HAT136航班"` is `HAT136`, `航班`. Bigram ranges overlap (each starts one character after the
/// previous one); every other range is disjoint from the rest.
pub fn word_spans(text: &str) -> WordSpans<'_> {
    WordSpans {
        text,
        pos: 0,
        run: None,
    }
}

/// The iterator of [`word_spans`].
#[derive(Debug, Clone)]
pub struct WordSpans<'a> {
    text: &'a str,
    /// Where scanning resumes (after the current CJK run, if any).
    pos: usize,
    /// Inside a CJK run of 2+ characters: the start of the next bigram's first character and the
    /// run's end.
    run: Option<(usize, usize)>,
}

impl Iterator for WordSpans<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let len_at = |i: usize| self.text[i..].chars().next().map_or(0, char::len_utf8);
        if let Some((first, end)) = self.run {
            let second = first + len_at(first);
            let stop = second + len_at(second);
            self.run = (stop < end).then_some((second, end));
            return Some((first, stop));
        }
        let rest = &self.text[self.pos..];
        let (offset, c) = rest.char_indices().find(|&(_, c)| is_word_char(c))?;
        let start = self.pos + offset;
        let cjk = is_cjk(c);
        let end = self.text[start..]
            .char_indices()
            .find(|&(_, d)| !is_word_char(d) || is_cjk(d) != cjk)
            .map_or(self.text.len(), |(i, _)| start + i);
        self.pos = end;
        let second = start + c.len_utf8();
        if cjk && second < end {
            let stop = second + len_at(second);
            self.run = (stop < end).then_some((second, end));
            return Some((start, stop));
        }
        Some((start, end))
    }
}

/// `word.to_lowercase()` written into `out` (cleared first): the analyzers lowercase every word
/// of every chunk, and most are only hashed or checked, so the buffer is reused. ASCII (nearly
/// every word) is lowercased byte by byte; anything else as `str::to_lowercase` does it (a
/// final sigma depends on its context).
pub fn lowercase_into(word: &str, out: &mut String) {
    out.clear();
    if word.is_ascii() {
        out.push_str(word);
        out.make_ascii_lowercase();
    } else {
        out.push_str(&word.to_lowercase());
    }
}

/// Splits text into lowercase words ([`word_spans`]: Unicode letters and digits, `_` joins; CJK
/// runs as character bigrams).
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    word_spans(text).map(move |(s, e)| text[s..e].to_lowercase())
}

/// A light English stemmer: strips common inflectional suffixes so that "flights", "flight" and
/// "booked", "booking", "book" meet. Not Porter: deliberately conservative, never below 3 letters.
/// CJK words are returned as they are.
pub fn stem(word: &str) -> String {
    stem_owned(word.to_string())
}

/// [`stem`] of a word the caller owns: its buffer is reused (the analyzers stem every word of
/// every chunk, and most words are returned unchanged or shortened).
pub fn stem_owned(mut word: String) -> String {
    const SUFFIXES: [&str; 9] = [
        "ations", "ation", "ings", "ing", "edly", "ies", "ed", "es", "s",
    ];
    if !word.chars().all(|c| c.is_alphabetic()) || is_cjk_word(&word) {
        return word;
    }
    for suffix in SUFFIXES {
        if let Some(base) = word.strip_suffix(suffix) {
            if base.chars().count() >= 3 {
                let base_len = base.len();
                return match suffix {
                    "ies" => {
                        word.truncate(base_len);
                        word.push('y');
                        word
                    }
                    // "passes" -> "pass", but "notes" -> "note" via "s" below.
                    "es" if !(base.ends_with('s')
                        || base.ends_with('x')
                        || base.ends_with("ch")
                        || base.ends_with("sh")) =>
                    {
                        continue;
                    }
                    "s" if base.ends_with('s') || base.ends_with('u') || base.ends_with('i') => {
                        word
                    }
                    _ => {
                        word.truncate(base_len);
                        word
                    }
                };
            }
        }
    }
    word
}

/// Index terms of a text: words, stop words removed, stemmed.
pub fn terms(text: &str) -> Vec<String> {
    words(text)
        .filter(|w| !is_stop_word(w))
        .map(stem_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(
            STOP_WORDS.windows(2).all(|w| w[0] < w[1]),
            "STOP_WORDS must stay sorted"
        );
    }

    #[test]
    fn stop_word_lookup_finds_every_stop_word_and_nothing_else() {
        for w in STOP_WORDS {
            assert!(is_stop_word(w), "{w}");
            // One letter more or less is not a stop word unless the list has it too.
            let longer = format!("{w}q");
            assert_eq!(is_stop_word(&longer), STOP_WORDS.contains(&longer.as_str()));
            let shorter = &w[..w.len() - 1];
            assert_eq!(is_stop_word(shorter), STOP_WORDS.contains(&shorter));
        }
        for w in ["", "flight", "zzz", "yourselvesx", "航班", "_", "0"] {
            assert!(!is_stop_word(w), "{w}");
        }
    }

    #[test]
    fn lowercase_into_equals_to_lowercase() {
        let mut out = String::from("left over");
        for w in [
            "HAT136",
            "Flights",
            "ΟΔΟΣ",
            "Straße",
            "İstanbul",
            "航班",
            "",
        ] {
            lowercase_into(w, &mut out);
            assert_eq!(out, w.to_lowercase(), "{w}");
        }
    }

    #[test]
    fn terms_lowercase_stem_and_drop_stop_words() {
        assert_eq!(terms("The Flights were booked!"), vec!["flight", "book"]);
        assert_eq!(
            terms("passes notes parties HAT136"),
            vec!["pass", "note", "party", "hat136"]
        );
        assert_eq!(terms("status bus"), vec!["status", "bus"]);
        assert_eq!(terms(""), Vec::<String>::new());
    }

    fn spans(text: &str) -> Vec<&str> {
        word_spans(text).map(|(s, e)| &text[s..e]).collect()
    }

    #[test]
    fn cjk_runs_become_overlapping_bigrams() {
        assert_eq!(
            terms("需求是预算不超过五千元"),
            vec![
                "需求", "求是", "是预", "预算", "算不", "不超", "超过", "过五", "五千", "千元"
            ]
        );
        // Punctuation separates runs; a one-character run is the character itself.
        assert_eq!(
            spans("请记住：我对海鲜过敏。好"),
            vec!["请记", "记住", "我对", "对海", "海鲜", "鲜过", "过敏", "好"]
        );
        // Japanese kana and Korean Hangul alike; `・` is punctuation.
        assert_eq!(spans("ホテル・予約"), vec!["ホテ", "テル", "予約"]);
        assert_eq!(spans("예산은"), vec!["예산", "산은"]);
        // A CJK run ends a Latin word and the other way round.
        assert_eq!(
            words("预算5000元, HAT136航班 ok").collect::<Vec<_>>(),
            vec!["预算", "5000", "元", "hat136", "航班", "ok"]
        );
        assert_eq!(stem("航班"), "航班");
        assert!(is_cjk_word("海鲜") && !is_cjk_word("seafood") && !is_cjk_word(""));
    }

    #[test]
    fn latin_words_are_split_as_before() {
        let old = |text: &str| -> Vec<String> {
            text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect()
        };
        for text in [
            "",
            "  The Flights were booked!  ",
            "mia_li_3668@example.com paid $1,234.50 at 10:00 PM (HAT136)",
            "Ünïcödé wörds, café-crème, ΑΒΓ δέλτα, ٣٤ ² _x_ a__b",
            "emoji 👍🏽 and\ttabs\nnew lines",
            "ending in a word",
        ] {
            assert_eq!(words(text).collect::<Vec<_>>(), old(text), "{text:?}");
        }
    }
}
