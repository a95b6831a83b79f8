//! The o200k and cl100k pre-tokenizers written out by hand: the same pieces as tiktoken's regular
//! expressions, found in one forward scan.
//!
//! tiktoken splits text with a backtracking regex (`fancy-regex`, because of a `(?!\S)` lookahead)
//! before byte-pair encoding each piece, and that split is most of its time. Each alternative of
//! the two patterns below is written as a forward scan that remembers the positions backtracking
//! would return to, so the result is the regex's leftmost-first match without a regex engine. The
//! character classes come from `regex-syntax` (the crate the regex engine itself uses), so both
//! agree on every Unicode property; tests compare the pieces and the counts with tiktoken-rs on
//! real traces and on random text.
//!
//! o200k (gpt-4o and later), one alternative per line, tried in order:
//! ```text
//! [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! \p{N}{1,3}
//!  ?[^\s\p{L}\p{N}]+[\r\n/]*
//! \s*[\r\n]+
//! \s+(?!\S)
//! \s+
//! ```
//! cl100k (gpt-4, gpt-3.5):
//! ```text
//! '(?i:[sdmt]|ll|ve|re)
//! [^\r\n\p{L}\p{N}]?+\p{L}++
//! \p{N}{1,3}+
//!  ?[^\s\p{L}\p{N}]++[\r\n]*+
//! \s++$
//! \s*[\r\n]
//! \s+(?!\S)
//! \s
//! ```

use std::sync::OnceLock;

/// `\p{L}`.
const LETTER: u8 = 1;
/// `\p{N}`.
const NUMBER: u8 = 2;
/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`: o200k's "upper" run.
const UPPER: u8 = 4;
/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`: o200k's "lower" run.
const LOWER: u8 = 8;
/// `\s` (Unicode White_Space).
const SPACE: u8 = 16;

/// The class sets above, per code point.
struct Classes {
    /// Code points below U+10000, one byte each (64 KiB).
    bmp: Vec<u8>,
    /// Above U+10000: per class bit, sorted inclusive ranges.
    astral: Vec<(u8, Vec<(u32, u32)>)>,
}

fn class_ranges(pattern: &str) -> Vec<(u32, u32)> {
    let hir = regex_syntax::parse(pattern)
        .expect("the class patterns are fixed and valid regex-syntax (tested)");
    match hir.kind() {
        regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(class)) => class
            .ranges()
            .iter()
            .map(|r| (u32::from(r.start()), u32::from(r.end())))
            .collect(),
        _ => unreachable!("each pattern is a single Unicode class"),
    }
}

fn classes() -> &'static Classes {
    static CLASSES: OnceLock<Classes> = OnceLock::new();
    CLASSES.get_or_init(|| {
        let sets = [
            (LETTER, r"\p{L}"),
            (NUMBER, r"\p{N}"),
            (UPPER, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),
            (LOWER, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),
            (SPACE, r"\s"),
        ];
        let mut bmp = vec![0u8; 0x10000];
        let mut astral = Vec::new();
        for (bit, pattern) in sets {
            let ranges = class_ranges(pattern);
            for &(start, end) in &ranges {
                for cp in start..=end.min(0xFFFF) {
                    bmp[cp as usize] |= bit;
                }
            }
            astral.push((
                bit,
                ranges
                    .into_iter()
                    .filter(|&(_, end)| end > 0xFFFF)
                    .collect(),
            ));
        }
        Classes { bmp, astral }
    })
}

impl Classes {
    fn of(&self, c: char) -> u8 {
        let cp = u32::from(c);
        if let Some(&bits) = self.bmp.get(cp as usize) {
            return bits;
        }
        let mut bits = 0;
        for (bit, ranges) in &self.astral {
            let i = ranges.partition_point(|&(_, end)| end < cp);
            if ranges.get(i).is_some_and(|&(start, _)| start <= cp) {
                bits |= bit;
            }
        }
        bits
    }
}

/// The pre-tokenizer of one encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pattern {
    O200k,
    Cl100k,
}

/// A position-addressed view of the text with its characters' classes.
struct Scan<'a> {
    text: &'a str,
    classes: &'static Classes,
}

impl Scan<'_> {
    /// The character at byte `pos` (a char boundary), its class bits and its end.
    #[inline]
    fn at(&self, pos: usize) -> Option<(char, u8, usize)> {
        let bytes = self.text.as_bytes();
        let &b = bytes.get(pos)?;
        if b < 0x80 {
            let c = char::from(b);
            return Some((c, self.classes.bmp[usize::from(b)], pos + 1));
        }
        let c = self.text[pos..].chars().next()?;
        Some((c, self.classes.of(c), pos + c.len_utf8()))
    }

    /// The end of the run of characters with any of `bits` from `pos`.
    #[inline]
    fn run(&self, mut pos: usize, bits: u8) -> usize {
        while let Some((_, class, next)) = self.at(pos) {
            if class & bits == 0 {
                break;
            }
            pos = next;
        }
        pos
    }

    /// `[^\r\n\p{L}\p{N}]`: o200k's and cl100k's optional prefix of a word.
    #[inline]
    fn is_word_prefix(c: char, class: u8) -> bool {
        !matches!(c, '\r' | '\n') && class & (LETTER | NUMBER) == 0
    }

    /// `[^\s\p{L}\p{N}]`: punctuation and symbols.
    #[inline]
    fn is_symbol(class: u8) -> bool {
        class & (SPACE | LETTER | NUMBER) == 0
    }

    /// Where a word may start at `i`: after a one-character prefix first, then at `i` itself
    /// (the order backtracking tries `[^\r\n\p{L}\p{N}]?`).
    fn word_starts(&self, i: usize) -> [Option<usize>; 2] {
        match self.at(i) {
            Some((c, class, next)) if Self::is_word_prefix(c, class) => [Some(next), Some(i)],
            Some(_) => [Some(i), None],
            None => [None, None],
        }
    }

    /// The end of `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `pos` (o200k).
    fn o200k_contraction(&self, pos: usize) -> usize {
        let Some(('\'', _, after)) = self.at(pos) else {
            return pos;
        };
        for suffix in ["s", "t", "re", "ve", "m", "ll", "d"] {
            if let Some(end) = self.folded(after, suffix) {
                return end;
            }
        }
        pos
    }

    /// The end of `'(?i:[sdmt]|ll|ve|re)` at `pos` (cl100k), if it matches.
    fn cl100k_contraction(&self, pos: usize) -> Option<usize> {
        let Some(('\'', _, after)) = self.at(pos) else {
            return None;
        };
        ["s", "d", "m", "t", "ll", "ve", "re"]
            .into_iter()
            .find_map(|suffix| self.folded(after, suffix))
    }

    /// The end of `suffix` (lowercase ASCII) matched case-insensitively at `pos`.
    fn folded(&self, mut pos: usize, suffix: &str) -> Option<usize> {
        for want in suffix.chars() {
            let (c, _, next) = self.at(pos)?;
            if !folds_to(c, want) {
                return None;
            }
            pos = next;
        }
        Some(pos)
    }

    /// `P? U* L+ C?` (o200k's first alternative): the end, if it matches at `i`.
    fn o200k_lower_word(&self, i: usize) -> Option<usize> {
        for start in self.word_starts(i).into_iter().flatten() {
            // U* greedy, remembering the last U character that is also L: where backtracking
            // ends up when the character after the U run is not L.
            let mut pos = start;
            let mut last_lower_end = None;
            while let Some((_, class, next)) = self.at(pos) {
                if class & UPPER == 0 {
                    break;
                }
                if class & LOWER != 0 {
                    last_lower_end = Some(next);
                }
                pos = next;
            }
            let end = match self.at(pos) {
                Some((_, class, _)) if class & LOWER != 0 => Some(self.run(pos, LOWER)),
                _ => last_lower_end,
            };
            if let Some(end) = end {
                return Some(self.o200k_contraction(end));
            }
        }
        None
    }

    /// `P? U+ L* C?` (o200k's second alternative).
    fn o200k_upper_word(&self, i: usize) -> Option<usize> {
        for start in self.word_starts(i).into_iter().flatten() {
            let upper_end = self.run(start, UPPER);
            if upper_end > start {
                return Some(self.o200k_contraction(self.run(upper_end, LOWER)));
            }
        }
        None
    }

    /// `\p{N}{1,3}`.
    fn digits(&self, i: usize) -> Option<usize> {
        let mut pos = i;
        for _ in 0..3 {
            match self.at(pos) {
                Some((_, class, next)) if class & NUMBER != 0 => pos = next,
                _ => break,
            }
        }
        (pos > i).then_some(pos)
    }

    /// ` ?[^\s\p{L}\p{N}]+`: the end of the symbol run, if it matches at `i`.
    fn symbols(&self, i: usize) -> Option<usize> {
        let (c, class, next) = self.at(i)?;
        let start = if c == ' ' {
            match self.at(next) {
                Some((_, class, _)) if Self::is_symbol(class) => next,
                _ => return None,
            }
        } else if Self::is_symbol(class) {
            i
        } else {
            return None;
        };
        let mut pos = start;
        while let Some((_, class, next)) = self.at(pos) {
            if !Self::is_symbol(class) {
                break;
            }
            pos = next;
        }
        Some(pos)
    }

    /// The end of a run of the characters in `set` from `pos`.
    fn run_of(&self, mut pos: usize, set: &[char]) -> usize {
        while let Some((c, _, next)) = self.at(pos) {
            if !set.contains(&c) {
                break;
            }
            pos = next;
        }
        pos
    }

    /// The whitespace run at `i`: its end, the start of its last character, and the end of its
    /// last `\r` or `\n`. `None` when `i` is not whitespace.
    fn spaces(&self, i: usize) -> Option<Spaces> {
        let mut pos = i;
        let mut last_start = i;
        let mut newline_end = None;
        while let Some((c, class, next)) = self.at(pos) {
            if class & SPACE == 0 {
                break;
            }
            if matches!(c, '\r' | '\n') {
                newline_end = Some(next);
            }
            last_start = pos;
            pos = next;
        }
        (pos > i).then_some(Spaces {
            end: pos,
            last_start,
            newline_end,
        })
    }

    /// `\s+(?!\S)`: the whole run at the end of the text, else all but its last character.
    fn spaces_not_before_word(&self, i: usize, spaces: &Spaces) -> Option<usize> {
        if spaces.end == self.text.len() {
            Some(spaces.end)
        } else {
            (spaces.last_start > i).then_some(spaces.last_start)
        }
    }

    /// The end of the o200k piece starting at `i` (< text length).
    fn o200k_piece(&self, i: usize) -> Option<usize> {
        if let Some(end) = self
            .o200k_lower_word(i)
            .or_else(|| self.o200k_upper_word(i))
            .or_else(|| self.digits(i))
        {
            return Some(end);
        }
        if let Some(end) = self.symbols(i) {
            return Some(self.run_of(end, &['\r', '\n', '/']));
        }
        let spaces = self.spaces(i)?;
        // `\s*[\r\n]+`: through the run's last newline (what follows it in the run is not one).
        if let Some(end) = spaces.newline_end {
            return Some(end);
        }
        self.spaces_not_before_word(i, &spaces).or(Some(spaces.end))
    }

    /// The end of the cl100k piece starting at `i` (< text length).
    fn cl100k_piece(&self, i: usize) -> Option<usize> {
        if let Some(end) = self.cl100k_contraction(i) {
            return Some(end);
        }
        // `[^\r\n\p{L}\p{N}]?+\p{L}++`: possessive, so a prefix not followed by a letter fails
        // (and without it the prefix character itself is not a letter).
        let (c, class, next) = self.at(i)?;
        let letters_from = if Self::is_word_prefix(c, class) {
            next
        } else {
            i
        };
        let letters_end = self.run(letters_from, LETTER);
        if letters_end > letters_from {
            return Some(letters_end);
        }
        if let Some(end) = self.digits(i) {
            return Some(end);
        }
        if let Some(end) = self.symbols(i) {
            return Some(self.run_of(end, &['\r', '\n']));
        }
        let spaces = self.spaces(i)?;
        if spaces.end == self.text.len() {
            return Some(spaces.end);
        }
        // `\s*[\r\n]`: through the run's last newline.
        if let Some(end) = spaces.newline_end {
            return Some(end);
        }
        self.spaces_not_before_word(i, &spaces).or(Some(next))
    }
}

/// A whitespace run (see [`Scan::spaces`]).
struct Spaces {
    end: usize,
    last_start: usize,
    newline_end: Option<usize>,
}

/// Whether `c` matches the lowercase ASCII letter `want` under Unicode simple case folding (as
/// `(?i)` does: `ſ` (U+017F) is an `s`, `K` (U+212A) a `k`).
fn folds_to(c: char, want: char) -> bool {
    c.to_ascii_lowercase() == want
        || (want == 's' && c == '\u{17F}')
        || (want == 'k' && c == '\u{212A}')
}

/// Calls `piece` with every piece of `text`, in order; the pieces cover the text.
pub(super) fn for_each_piece<'t>(pattern: Pattern, text: &'t str, mut piece: impl FnMut(&'t str)) {
    let scan = Scan {
        text,
        classes: classes(),
    };
    let mut i = 0;
    while let Some((_, _, next)) = scan.at(i) {
        let end = match pattern {
            Pattern::O200k => scan.o200k_piece(i),
            Pattern::Cl100k => scan.cl100k_piece(i),
        };
        // Every character starts some alternative of both patterns; were one not to, the regex
        // would skip it, and so does this.
        debug_assert!(end.is_some(), "no piece at byte {i}");
        match end {
            Some(end) => {
                piece(&text[i..end]);
                i = end;
            }
            None => i = next,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_folding_matches_regex_syntax() {
        for want in ['s', 't', 'r', 'e', 'v', 'm', 'l', 'd', 'k'] {
            let folded = class_ranges(&format!("(?i:[{want}])"));
            for cp in 0..0x3_0000u32 {
                let Some(c) = char::from_u32(cp) else {
                    continue;
                };
                let in_class = folded.iter().any(|&(s, e)| s <= cp && cp <= e);
                assert_eq!(folds_to(c, want), in_class, "{want} vs {c:?}");
            }
        }
    }

    fn pieces(pattern: Pattern, text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        for_each_piece(pattern, text, |p| out.push(p));
        out
    }

    /// cl100k's pattern as tiktoken-rs writes it (not exported there).
    const CL100K_PAT: &str = "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s";

    fn reference(pattern: Pattern, text: &str) -> Vec<String> {
        let source = match pattern {
            Pattern::O200k => tiktoken_rs::O200K_BASE_PAT_STR,
            Pattern::Cl100k => CL100K_PAT,
        };
        let regex = fancy_regex::Regex::new(source).expect("tiktoken's pattern compiles");
        regex
            .find_iter(text)
            .map(|m| {
                m.expect("no backtrack limit on short text")
                    .as_str()
                    .to_owned()
            })
            .collect()
    }

    fn assert_same_pieces(text: &str) {
        for pattern in [Pattern::O200k, Pattern::Cl100k] {
            assert_eq!(
                pieces(pattern, text),
                reference(pattern, text),
                "{pattern:?} on {text:?}"
            );
        }
    }

    #[test]
    fn edge_cases_split_as_tiktoken_does() {
        for text in [
            "",
            " ",
            "  ",
            "\n",
            "a \n b",
            "x  \n\n  y  ",
            "  \t\r\n\r\n\t ",
            "don't WE'LL they'RE I'd ſ 'ſ x'ſ",
            "HTML5 parseJSON XMLHttpRequest ǅungla ʰa",
            "e\u{301}te\u{301} \u{301}x \u{301}\u{301}",
            "12345 ١٢٣٤ ½Ⅻ 𝟘𝟙𝟚𝟛",
            "!!/\n/ -->\r\n  ?? ,,",
            "中文分词，测试。😀😀 𝐀𝐁c",
            "\u{a0}word\u{2028}x\u{3000} \u{200b}y",
            "path/to/file.rs:12:5 https://example.com/a?b=c",
        ] {
            assert_same_pieces(text);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        #[test]
        fn random_text_splits_as_tiktoken_does(
            chars in proptest::collection::vec(proptest::sample::select(vec![
                'a', 'Z', 'q', ' ', ' ', '\n', '\r', '\t', '\'', 's', 'S', '\u{17F}', 't', 'L',
                'l', 'd', 'r', 'e', 'v', 'm', 'M', '5', '0', '\u{663}', '\u{BD}', '\u{216B}',
                '\u{301}', '\u{1C5}', '\u{2B0}', '\u{4E2D}', '\u{A0}', '\u{2028}', '/', '!',
                '.', '\u{1F600}', '\u{1D400}', '\u{1D7D8}', '\u{3000}', '\u{C9}', '\u{E9}',
                '\u{DF}', '-', '_', '\u{200B}', '\u{212A}', 'k',
            ]), 0..48)
        ) {
            let text: String = chars.into_iter().collect();
            assert_same_pieces(&text);
        }

        #[test]
        fn any_unicode_splits_as_tiktoken_does(text in "\\PC{0,40}") {
            assert_same_pieces(&text);
        }
    }

    #[test]
    fn splits_like_the_documented_examples() {
        assert_eq!(
            pieces(Pattern::O200k, "Hello world's  HTML5\n\n  x"),
            ["Hello", " world's", " ", " HTML", "5", "\n\n", " ", " x"]
        );
        assert_eq!(
            pieces(Pattern::Cl100k, "Hello world's  x!!\n"),
            ["Hello", " world", "'s", " ", " x", "!!\n"]
        );
    }
}
