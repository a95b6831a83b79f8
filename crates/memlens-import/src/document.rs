//! Decoding and parsing the input: one JSON value, a JSON array whose elements are parsed one at a
//! time, or JSON Lines parsed line by line. Large files stream: only the record being imported is
//! held as a parsed value, so memory stays near the file size plus the trace model.

use crate::error::{ImportError, Location};
use serde_json::Value;
use std::borrow::Cow;
use std::ops::Range;

/// The input handed to importers.
#[derive(Debug)]
pub enum Document<'a> {
    /// The whole file is one JSON value (an object, usually).
    Json(Value),
    /// A top-level JSON array, split into elements without parsing them yet.
    Array {
        /// The decoded text.
        text: &'a str,
        /// Byte range and 1-based start line of each element.
        items: Vec<(Range<usize>, usize)>,
        /// The first element parsed, for sniffing.
        first: Option<Value>,
    },
    /// JSON Lines: one value per non-empty line.
    Lines {
        /// 1-based line number and text of each non-empty line.
        lines: Vec<(usize, &'a str)>,
        /// The first line parsed, for sniffing.
        first: Option<Value>,
    },
    /// Records parsed before and kept (a followed file's lines, [`crate::follow::Follower`]):
    /// importing again reads them without parsing them again.
    Records {
        /// The records, in file order.
        items: &'a [RecordItem],
        /// The first record's value, for sniffing.
        first: Option<Value>,
    },
}

/// One record: where it is, and its value or why it did not parse.
pub type RecordItem = (Location, Result<Value, String>);

impl<'a> Document<'a> {
    /// A value to sniff: the whole JSON document, or the first record of an array or JSON Lines.
    pub fn first_value(&self) -> Option<&Value> {
        match self {
            Document::Json(v) => Some(v),
            Document::Array { first, .. }
            | Document::Lines { first, .. }
            | Document::Records { first, .. } => first.as_ref(),
        }
    }

    /// The first `n` records that parse, parsed one at a time as the iterator is read (the whole
    /// JSON document counts as one record; the first is not parsed again): for sniffing past
    /// leading metadata records without parsing a large file.
    pub fn leading_values(&self, n: usize) -> Box<dyn Iterator<Item = Cow<'_, Value>> + '_> {
        let parse = |text: &str| serde_json::from_str::<Value>(text).ok().map(Cow::Owned);
        match self {
            Document::Json(Value::Array(items)) => {
                Box::new(items.iter().take(n).map(Cow::Borrowed))
            }
            Document::Json(v) => Box::new(std::iter::once(Cow::Borrowed(v))),
            Document::Array { text, items, first } => Box::new(
                first.iter().map(Cow::Borrowed).chain(
                    items
                        .iter()
                        .take(n)
                        .skip(1)
                        .filter_map(move |(range, _)| parse(&text[range.clone()])),
                ),
            ),
            Document::Lines { lines, first } => Box::new(
                first.iter().map(Cow::Borrowed).chain(
                    lines
                        .iter()
                        .take(n)
                        .skip(1)
                        .filter_map(move |(_, line)| parse(line)),
                ),
            ),
            Document::Records { items, .. } => Box::new(
                items
                    .iter()
                    .take(n)
                    .filter_map(|(_, v)| v.as_ref().ok().map(Cow::Borrowed)),
            ),
        }
    }

    /// Why there is no [`Document::first_value`]: the document has no records, or its first record
    /// is not valid JSON (said with its position). `None` when there is a first value.
    pub fn why_no_first_value(&self) -> Option<String> {
        match self {
            Document::Json(_) => None,
            Document::Array { first: Some(_), .. }
            | Document::Lines { first: Some(_), .. }
            | Document::Records { first: Some(_), .. } => None,
            Document::Records { .. } => Some("its first record could not be read".to_string()),
            Document::Array { items, text, .. } => Some(match items.first() {
                None => "no records: the file is an empty array".to_string(),
                Some((range, line)) => match serde_json::from_str::<Value>(&text[range.clone()]) {
                    Err(e) => format!(
                        "its first record (line {line}) could not be read: {}",
                        strip_position(&e.to_string())
                    ),
                    Ok(_) => "its first record could not be read".to_string(),
                },
            }),
            Document::Lines { lines, .. } => Some(match lines.first() {
                None => "no records: the file has no non-empty lines".to_string(),
                Some((line, _)) => format!("its first line ({line}) is not a JSON object or array"),
            }),
        }
    }

    /// True when the document is a top-level array (of records or of messages).
    pub fn is_array(&self) -> bool {
        matches!(
            self,
            Document::Array { .. } | Document::Json(Value::Array(_))
        )
    }

    /// The records, parsed one at a time: a top-level array's elements, JSON Lines' lines, or the
    /// single top-level value.
    pub fn into_records(self) -> Box<dyn Iterator<Item = RecordItem> + 'a> {
        match self {
            Document::Json(Value::Array(items)) => Box::new(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| (Location::record(i, None), Ok(v))),
            ),
            Document::Json(v) => Box::new(std::iter::once((Location::default(), Ok(v)))),
            Document::Array { text, items, .. } => Box::new(items.into_iter().enumerate().map(
                move |(i, (range, line))| {
                    let value = serde_json::from_str::<Value>(&text[range]).map_err(|e| {
                        format!(
                            "invalid JSON at line {}: {}",
                            line + e.line() - 1,
                            strip_position(&e.to_string())
                        )
                    });
                    (Location::record(i, Some(line)), value)
                },
            )),
            Document::Lines { lines, .. } => {
                Box::new(lines.into_iter().enumerate().map(|(i, (line, l))| {
                    let value = serde_json::from_str::<Value>(l).map_err(|e| {
                        format!(
                            "invalid JSON at column {}: {}",
                            e.column(),
                            strip_position(&e.to_string())
                        )
                    });
                    (Location::record(i, Some(line)), value)
                }))
            }
            Document::Records { items, .. } => Box::new(items.iter().cloned()),
        }
    }
}

/// Decodes `bytes` as UTF-8 (invalid sequences are replaced; the offset of the first is returned)
/// and splits it into a [`Document`]. `text` receives the decoded text the document borrows.
pub fn decode(bytes: &[u8]) -> (std::borrow::Cow<'_, str>, Option<usize>) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (std::borrow::Cow::Borrowed(s), None),
        Err(e) => (String::from_utf8_lossy(bytes), Some(e.valid_up_to())),
    }
}

/// Parses decoded text into a [`Document`].
pub fn parse<'a>(file: &str, text: &'a str) -> Result<Document<'a>, ImportError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err(ImportError::Empty {
            file: file.to_string(),
        });
    }
    if trimmed.starts_with('[') {
        if let Some(items) = split_array(text) {
            let first = items
                .first()
                .and_then(|(r, _)| serde_json::from_str(&text[r.clone()]).ok());
            return Ok(Document::Array { text, items, first });
        }
    }
    let whole_err = match serde_json::from_str::<Value>(text) {
        Ok(v) => return Ok(Document::Json(v)),
        Err(e) => e,
    };
    // Not one JSON value: JSON Lines if the first non-empty line is a JSON object or array.
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l))
        .collect();
    let first = lines.first().and_then(|(_, l)| {
        let t = l.trim_start();
        if t.starts_with('{') || t.starts_with('[') {
            serde_json::from_str::<Value>(l).ok()
        } else {
            None
        }
    });
    if first.is_none() || lines.len() < 2 {
        return Err(ImportError::Json {
            file: file.to_string(),
            line: whole_err.line(),
            column: whole_err.column(),
            message: strip_position(&whole_err.to_string()),
        });
    }
    Ok(Document::Lines { lines, first })
}

/// serde_json appends " at line L column C"; MemLens prints positions its own way.
pub(crate) fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// Splits a top-level JSON array into its elements' byte ranges (and start lines) by tracking
/// strings and bracket depth, without building values. `None` when the text is not a well-formed
/// array at this level (unbalanced, trailing text): the caller then parses it whole to report
/// the exact error position.
fn split_array(text: &str) -> Option<Vec<(Range<usize>, usize)>> {
    let bytes = text.as_bytes();
    let mut i = text.len() - text.trim_start().len();
    let mut line = 1 + text[..i].matches('\n').count();
    debug_assert_eq!(bytes.get(i), Some(&b'['));
    i += 1;
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut start: Option<(usize, usize)> = None;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            line += 1;
        }
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match b {
            b' ' | b'\t' | b'\r' | b'\n' => {}
            b',' | b']' if depth == 0 => {
                match start.take() {
                    Some((s, l)) => items.push((s..trim_end(bytes, s, i), l)),
                    // `[,` or `,,` or `[1,]`: not JSON; let the full parser say where.
                    None if b == b',' || !items.is_empty() => return None,
                    None => {}
                }
                if b == b']' {
                    let rest = &text[i + 1..];
                    return rest.trim().is_empty().then_some(items);
                }
            }
            _ => {
                if start.is_none() {
                    start = Some((i, line));
                }
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => depth = depth.checked_sub(1)?,
                    _ => {}
                }
            }
        }
        i += 1;
    }
    None
}

fn trim_end(bytes: &[u8], start: usize, mut end: usize) -> usize {
    while end > start && bytes[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Option<Vec<&str>> {
        split_array(s).map(|v| v.into_iter().map(|(r, _)| &s[r]).collect())
    }

    #[test]
    fn splits_top_level_elements() {
        assert_eq!(split("[]"), Some(vec![]));
        assert_eq!(
            split(" [ 1 , {\"a\": [1,2]}, \"x,]\" ]\n"),
            Some(vec!["1", "{\"a\": [1,2]}", "\"x,]\""])
        );
        assert_eq!(split("[\"a\\\"]\", 2]"), Some(vec!["\"a\\\"]\"", "2"]));
    }

    #[test]
    fn rejects_what_is_not_an_array() {
        for bad in ["[1,]", "[,1]", "[1 2", "[1] x", "[{]", "[1,,2]", "[\"open"] {
            let got = split(bad);
            // Either refused, or split into pieces the element parser will reject: never a panic.
            if let Some(items) = got {
                assert!(
                    items
                        .iter()
                        .any(|i| serde_json::from_str::<Value>(i).is_err()),
                    "{bad}"
                );
            }
        }
    }

    #[test]
    fn element_lines_are_tracked() {
        let text = "[\n{\"a\":1},\n\n{\"b\":\n2}\n]";
        let items = split_array(text).expect("array");
        assert_eq!(
            items.iter().map(|(_, l)| *l).collect::<Vec<_>>(),
            vec![2, 4]
        );
    }
}
