//! Decoding and parsing the input once: one JSON value, or JSON Lines records parsed lazily.

use crate::error::{ImportError, Location};
use serde_json::Value;

/// The parsed input handed to importers.
#[derive(Debug)]
pub enum Document {
    /// The whole file is one JSON value.
    Json(Value),
    /// JSON Lines: one value per non-empty line. Lines that fail to parse are warnings.
    Lines(Vec<Record>),
}

/// One JSON Lines record.
#[derive(Debug)]
pub struct Record {
    /// 1-based line number.
    pub line: usize,
    /// The parsed value, or the parse error message.
    pub value: Result<Value, String>,
}

impl Document {
    /// A value to sniff: the whole JSON document, or the first JSON Lines record that parsed.
    pub fn first_value(&self) -> Option<&Value> {
        match self {
            Document::Json(v) => Some(v),
            Document::Lines(records) => records.iter().find_map(|r| r.value.as_ref().ok()),
        }
    }
}

/// Decodes `bytes` as UTF-8 (invalid sequences are replaced and reported) and parses JSON or JSON
/// Lines. Returns the document and the byte offset of the first invalid UTF-8 sequence, if any.
pub fn parse(file: &str, bytes: &[u8]) -> Result<(Document, Option<usize>), ImportError> {
    let (text, bad_utf8) = match std::str::from_utf8(bytes) {
        Ok(s) => (std::borrow::Cow::Borrowed(s), None),
        Err(e) => (String::from_utf8_lossy(bytes), Some(e.valid_up_to())),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim().is_empty() {
        return Err(ImportError::Empty {
            file: file.to_string(),
        });
    }
    let whole_err = match serde_json::from_str::<Value>(text) {
        Ok(v) => return Ok((Document::Json(v), bad_utf8)),
        Err(e) => e,
    };
    // Not one JSON value: JSON Lines if the first non-empty line is a JSON object or array.
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .peekable();
    let first_is_json = lines
        .peek()
        .map(|(_, l)| {
            let t = l.trim_start();
            (t.starts_with('{') || t.starts_with('[')) && serde_json::from_str::<Value>(l).is_ok()
        })
        .unwrap_or(false);
    if !first_is_json {
        return Err(ImportError::Json {
            file: file.to_string(),
            line: whole_err.line(),
            column: whole_err.column(),
            message: strip_position(&whole_err.to_string()),
        });
    }
    let records = lines
        .map(|(i, l)| Record {
            line: i + 1,
            value: serde_json::from_str::<Value>(l).map_err(|e| {
                format!(
                    "invalid JSON at column {}: {}",
                    e.column(),
                    strip_position(&e.to_string())
                )
            }),
        })
        .collect();
    Ok((Document::Lines(records), bad_utf8))
}

/// serde_json appends " at line L column C"; MemLens prints positions its own way.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// The records of a document as (location, value): the elements of a top-level array, the single
/// top-level value, or the JSON Lines records that parsed.
pub fn records(doc: &Document) -> Vec<(Location, &Value)> {
    match doc {
        Document::Json(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (Location::record(i, None), v))
            .collect(),
        Document::Json(v) => vec![(Location::default(), v)],
        Document::Lines(records) => records
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                r.value
                    .as_ref()
                    .ok()
                    .map(|v| (Location::record(i, Some(r.line)), v))
            })
            .collect(),
    }
}
