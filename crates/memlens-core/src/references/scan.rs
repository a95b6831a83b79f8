//! The scanner: identifiers (codes, emails, URLs, paths, code names) and numbers (normalized
//! decimals, dates, clock times) of a text.

use super::{EvidenceKind, MAX_TOKEN_LEN, MIN_IDENT_LEN, MIN_NUMBER_DIGITS};

/// A distinctive token: its match key (lowercase, normalized), kind and spelling in the text.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token {
    pub(super) key: String,
    pub(super) kind: EvidenceKind,
    pub(super) text: String,
}

/// A character of a scanned span: letters, digits and the punctuation inside codes, numbers,
/// emails, URLs and paths. CJK letters are not ([`crate::text::is_cjk`]): written without
/// spaces, they would glue a code or a number to the words around it (`预算5000元`); CJK text
/// is matched by quotes and rare terms instead.
fn is_span_char(c: char) -> bool {
    (c.is_alphanumeric() && !crate::text::is_cjk(c))
        || matches!(
            c,
            '_' | '-' | '.' | ',' | '@' | '/' | ':' | '+' | '~' | '%' | '?' | '=' | '&' | '#'
        )
}

/// Finds the identifiers and numbers of a text.
pub(super) fn scan(text: &str, emit: &mut dyn FnMut(Token)) {
    // Each span with the one after it (a clock time reads its meridiem), without collecting
    // the spans: this runs on every string of every chunk.
    let mut spans = text.split(|c| !is_span_char(c)).filter(|s| !s.is_empty());
    let mut following = spans.next();
    while let Some(span) = following {
        following = spans.next();
        let next = following;
        if starts_with_ignore_ascii_case(span, "http://")
            || starts_with_ignore_ascii_case(span, "https://")
        {
            let url = span.trim_end_matches(['.', ',', ':', ';', '?', '!', '/', '#', '&', '=']);
            if url.len() > "https://".len() + 3 && url.len() <= MAX_TOKEN_LEN {
                emit(ident(url));
            }
            continue;
        }
        for part in span.split(['?', '=', '&', '#', '%']) {
            word(part, next, emit);
        }
    }
}

/// `text.to_ascii_lowercase().starts_with(prefix)` for an ASCII lowercase `prefix`, without the
/// copy (every span of every chunk is checked).
fn starts_with_ignore_ascii_case(text: &str, prefix: &str) -> bool {
    text.as_bytes()
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

fn ident(text: &str) -> Token {
    Token {
        key: text.to_lowercase(),
        kind: EvidenceKind::Identifier,
        text: text.to_string(),
    }
}

/// Strips punctuation that ends a sentence or starts a list item, keeping `./`, `../`, `~/`, `/`.
fn trim_word(w: &str) -> &str {
    let w = w.trim_end_matches(['.', ',', ':', ';', '-', '+', '/', '~']);
    let w = w.trim_start_matches([':', ',', ';', '-', '+']);
    if w.starts_with('.') && !w.starts_with("./") && !w.starts_with("../") {
        w.trim_start_matches('.')
    } else {
        w
    }
}

/// `"am"` / `"pm"` when the word is one.
fn meridiem(w: Option<&str>) -> Option<bool> {
    match w?.to_ascii_lowercase().trim_end_matches('.') {
        "am" | "a.m" => Some(false),
        "pm" | "p.m" => Some(true),
        _ => None,
    }
}

fn is_quantity(w: &str) -> bool {
    // 20th, 3rd, 5pm, 10am, 128gb, 1990s: digits then at most 3 letters.
    let letters = w.trim_start_matches(|c: char| c.is_ascii_digit());
    letters.len() < w.len()
        && (1..=3).contains(&letters.len())
        && letters.chars().all(|c| c.is_ascii_alphabetic())
}

fn is_snake(w: &str) -> bool {
    let inner = w.trim_matches('_');
    w.chars().any(char::is_alphabetic)
        && (inner.contains('_') || (w.starts_with("__") && w.ends_with("__") && !inner.is_empty()))
}

fn is_camel(w: &str) -> bool {
    w.chars()
        .zip(w.chars().skip(1))
        .any(|(a, b)| a.is_lowercase() && b.is_uppercase())
}

fn is_email(w: &str) -> bool {
    let Some((local, domain)) = w.split_once('@') else {
        return false;
    };
    let labels: Vec<&str> = domain.split('.').collect();
    !local.is_empty()
        && local
            .chars()
            .all(|c| c.is_alphanumeric() || "._%+-".contains(c))
        && labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '-'))
        && labels
            .last()
            .is_some_and(|t| t.len() >= 2 && t.chars().all(char::is_alphabetic))
}

/// `a.b` names: 2+ non-empty word parts, a letter, 2+ parts of 2+ characters (not `e.g`, `U.S.A`).
fn is_dotted(w: &str) -> bool {
    let parts: Vec<&str> = w.split('.').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'))
        && w.chars().any(char::is_alphabetic)
        && parts.iter().filter(|p| p.chars().count() >= 2).count() >= 2
}

pub(super) fn is_path(w: &str) -> bool {
    let segments: Vec<&str> = w.split('/').filter(|s| !s.is_empty()).collect();
    let rooted =
        w.starts_with('/') || w.starts_with("./") || w.starts_with("../") || w.starts_with("~/");
    let last_has_ext = segments.last().is_some_and(|s| is_dotted(s));
    w.chars().any(char::is_alphabetic)
        && (segments.len() >= 3
            || (segments.len() >= 2 && (rooted || last_has_ext))
            || (rooted && last_has_ext))
}

/// Classifies one span (no whitespace) and emits its tokens.
pub(super) fn word(raw: &str, next: Option<&str>, emit: &mut dyn FnMut(Token)) {
    let w = trim_word(raw);
    if w.is_empty() || w.len() > MAX_TOKEN_LEN {
        return;
    }
    if w.bytes().all(|b| b.is_ascii_alphabetic()) {
        // Most words of prose and of JSON values: ASCII letters only. Of the rules below only
        // the last can apply (no digit, comma, `@`, clock, date, path or separator; not snake):
        // such a word is an identifier when it is camelCase and long enough.
        if w.len() >= MIN_IDENT_LEN && is_camel(w) {
            emit(ident(w));
        }
        return;
    }
    let has_alpha = w.chars().any(char::is_alphabetic);
    let has_digit = w.chars().any(|c| c.is_ascii_digit());
    if has_alpha && w.contains(',') {
        // Commas only belong inside numbers (1,234.50).
        for p in w.split(',') {
            word(p, next, emit);
        }
        return;
    }
    if w.contains('@') {
        if is_email(w) {
            emit(ident(w));
            // The local part may be an id of its own (`sophia_silva_7557@example.com`).
            if let Some((local, _)) = w.split_once('@') {
                word(local, None, emit);
            }
        } else {
            for p in w.split('@') {
                word(p, None, emit);
            }
        }
        return;
    }
    if !has_alpha {
        let is_year = w.len() == 4 && w.parse::<u32>().is_ok_and(|y| (1900..=2100).contains(&y));
        if is_year {
            // A bare year in prose ("May 24, 2024") is context, not a copied value.
            return;
        }
        if has_digit
            && w.chars()
                .all(|c| c.is_ascii_digit() || "-.:,/+".contains(c))
        {
            number(w, next, emit);
        } else {
            for p in w.split(|c: char| !c.is_alphanumeric() && c != '_') {
                // A span of non-ASCII digits ("²", "٣") splits into itself: nothing to emit,
                // and recursing on it would never end.
                if p.len() < w.len() {
                    word(p, None, emit);
                }
            }
        }
        return;
    }
    if clock_with_meridiem(w, emit) {
        return;
    }
    // 2024-05-20T10:00:00Z: a date and a time.
    if let Some((date, time)) = w.split_once(['T', 't']) {
        let is_date = date.len() == 10
            && date.chars().enumerate().all(|(i, c)| {
                if i == 4 || i == 7 {
                    c == '-'
                } else {
                    c.is_ascii_digit()
                }
            });
        if is_date {
            number(date, None, emit);
            let clock_part: &str = time
                .split(|c: char| !(c.is_ascii_digit() || c == ':'))
                .next()
                .unwrap_or("");
            number(clock_part, None, emit);
            return;
        }
    }
    if w.contains('/') {
        if is_path(w) {
            emit(ident(w));
        } else {
            for p in w.split('/') {
                word(p, None, emit);
            }
        }
        return;
    }
    if w.contains(['.', ':', '-', '+', '~']) {
        if (has_digit && w.chars().count() >= MIN_IDENT_LEN) || is_dotted(w) {
            emit(ident(w));
        } else {
            for p in w.split(['.', ':', '-', '+', '~']) {
                word(p, None, emit);
            }
        }
        return;
    }
    if w.chars().count() < MIN_IDENT_LEN {
        return;
    }
    if (has_digit && !is_quantity(w)) || is_snake(w) || is_camel(w) {
        emit(ident(w));
    }
}

/// `6pm`, `10:30AM`: digits and colons, then a meridiem in any case (compared without a
/// lowercase copy of every word). Emits the clock time when it is one; true when the word had
/// that form (and nothing else is to be read from it).
fn clock_with_meridiem(w: &str, emit: &mut dyn FnMut(Token)) -> bool {
    let Some(at) = w.len().checked_sub(2) else {
        return false;
    };
    let pm = match w.get(at..) {
        Some(s) if s.eq_ignore_ascii_case("am") => false,
        Some(s) if s.eq_ignore_ascii_case("pm") => true,
        _ => return false,
    };
    let prefix = &w[..at];
    if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_digit() || c == ':') {
        return false;
    }
    if let Some(t) = clock(prefix, Some(pm)) {
        emit(Token {
            key: t,
            kind: EvidenceKind::Number,
            text: w.to_string(),
        });
    }
    true
}

/// A clock time `H:MM` (or `H:MM:SS` when the seconds are not zero), 24-hour.
fn clock(w: &str, pm: Option<bool>) -> Option<String> {
    let parts: Vec<&str> = w.split(':').collect();
    let all_digits = parts
        .iter()
        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    if !all_digits || parts.len() > 3 || parts[0].len() > 2 {
        return None;
    }
    if parts.len() == 1 && pm.is_none() {
        return None;
    }
    if parts[1..].iter().any(|p| p.len() != 2) {
        return None;
    }
    let mut h: u32 = parts[0].parse().ok()?;
    let m: u32 = parts.get(1).map_or(Some(0), |p| p.parse().ok())?;
    let s: u32 = parts.get(2).map_or(Some(0), |p| p.parse().ok())?;
    if m > 59 || s > 59 {
        return None;
    }
    match pm {
        Some(pm) => {
            if !(1..=12).contains(&h) {
                return None;
            }
            if pm && h < 12 {
                h += 12;
            } else if !pm && h == 12 {
                h = 0;
            }
        }
        None if h > 24 => return None,
        None => {}
    }
    Some(if s == 0 {
        format!("{h}:{m:02}")
    } else {
        format!("{h}:{m:02}:{s:02}")
    })
}

/// Emits a numeric token: clock times and decimals normalized, other forms (dates, phone numbers)
/// as written; 3+ significant digits only.
pub(super) fn number(w: &str, next: Option<&str>, emit: &mut dyn FnMut(Token)) {
    let w = trim_word(w);
    if w.is_empty() {
        return;
    }
    if w.contains(',') && decimal(w).is_none() {
        for p in w.split(',') {
            number(p, next, emit);
        }
        return;
    }
    let digits = w.chars().filter(char::is_ascii_digit).count();
    let (key, text) = if w.contains(':') {
        match (clock(w, meridiem(next)), next) {
            // "10:00 PM": the evidence keeps the meridiem that gives the key its meaning.
            (Some(t), Some(n)) if meridiem(next).is_some() => (t, format!("{w} {n}")),
            (Some(t), _) => (t, w.to_string()),
            (None, _) if digits >= MIN_NUMBER_DIGITS => (w.to_string(), w.to_string()),
            (None, _) => return,
        }
    } else if let Some(n) = decimal(w) {
        let significant = n
            .chars()
            .filter(char::is_ascii_digit)
            .skip_while(|&c| c == '0')
            .count();
        if significant < MIN_NUMBER_DIGITS {
            return;
        }
        (n, w.to_string())
    } else if digits >= MIN_NUMBER_DIGITS {
        (w.to_string(), w.to_string())
    } else {
        return;
    };
    emit(Token {
        key,
        kind: EvidenceKind::Number,
        text,
    });
}

/// `1234`, `1,234.50`, `250.0`: the normalized decimal (`1234`, `1234.5`, `250`); else `None`.
fn decimal(w: &str) -> Option<String> {
    let (int, frac) = match w.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (w, None),
    };
    if int.is_empty()
        || frac.is_some_and(|f| f.is_empty() || !f.chars().all(|c| c.is_ascii_digit()))
    {
        return None;
    }
    let int = if int.contains(',') {
        let groups: Vec<&str> = int.split(',').collect();
        let ok = (1..=3).contains(&groups[0].len())
            && groups[1..].iter().all(|g| g.len() == 3)
            && groups.iter().all(|g| g.chars().all(|c| c.is_ascii_digit()));
        if !ok {
            return None;
        }
        groups.concat()
    } else if int.chars().all(|c| c.is_ascii_digit()) {
        int.to_string()
    } else {
        return None;
    };
    Some(match frac.map(|f| f.trim_end_matches('0')) {
        Some(f) if !f.is_empty() => format!("{int}.{f}"),
        _ => int,
    })
}
