//! Lexical analysis shared by retrieval, relevance and the reference detector: lowercase word
//! terms, English stop words removed, a light suffix stemmer. Deterministic and allocation-light.

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

/// True for a stop word (input must be lowercase).
pub fn is_stop_word(term: &str) -> bool {
    STOP_WORDS.binary_search(&term).is_ok()
}

/// Splits text into lowercase alphanumeric words (Unicode letters and digits; `_` joins).
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// A light English stemmer: strips common inflectional suffixes so that "flights", "flight" and
/// "booked", "booking", "book" meet. Not Porter: deliberately conservative, never below 3 letters.
pub fn stem(word: &str) -> String {
    const SUFFIXES: [&str; 9] = [
        "ations", "ation", "ings", "ing", "edly", "ies", "ed", "es", "s",
    ];
    if !word.chars().all(|c| c.is_alphabetic()) {
        return word.to_string();
    }
    for suffix in SUFFIXES {
        if let Some(base) = word.strip_suffix(suffix) {
            if base.chars().count() >= 3 {
                return match suffix {
                    "ies" => format!("{base}y"),
                    // "passes" -> "pass", but "notes" -> "note" via "s" below.
                    "es" if !(base.ends_with('s')
                        || base.ends_with('x')
                        || base.ends_with("ch")
                        || base.ends_with("sh")) =>
                    {
                        continue;
                    }
                    "s" if base.ends_with('s') || base.ends_with('u') || base.ends_with('i') => {
                        word.to_string()
                    }
                    _ => base.to_string(),
                };
            }
        }
    }
    word.to_string()
}

/// Index terms of a text: words, stop words removed, stemmed.
pub fn terms(text: &str) -> Vec<String> {
    words(text)
        .filter(|w| !is_stop_word(w))
        .map(|w| stem(&w))
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
    fn terms_lowercase_stem_and_drop_stop_words() {
        assert_eq!(terms("The Flights were booked!"), vec!["flight", "book"]);
        assert_eq!(
            terms("passes notes parties HAT136"),
            vec!["pass", "note", "party", "hat136"]
        );
        assert_eq!(terms("status bus"), vec!["status", "bus"]);
        assert_eq!(terms(""), Vec::<String>::new());
    }
}
