//! Compression actions: deterministic rewrites of a chunk's text that keep what matters and cost
//! no model call. (Summaries are modeled separately: see [`super::config::SummaryModel`].)

use super::config::JsonCompress;
use serde_json::Value;

/// Which compression produced a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompressKind {
    /// JSON tool result compacted (fields kept, arrays and strings cut).
    Json,
    /// Markup stripped and whitespace collapsed.
    Strip,
    /// Replaced by a pointer to an identical earlier chunk.
    Dedupe,
    /// An old tool result cleared to a placeholder.
    Clear,
    /// JSON sent without the whitespace between its tokens: nothing else changed (lossless).
    Minify,
    /// JSON sent as TOON (Token-Oriented Object Notation): the same data (lossless).
    Toon,
}

impl CompressKind {
    /// Lossless: the text still says everything the original did, so the stronger compressions
    /// may still be tried on the original.
    pub fn is_lossless(self) -> bool {
        matches!(self, CompressKind::Minify | CompressKind::Toon)
    }
}

/// Compacts JSON text: keeps only `keep_fields` (when given) and removes `drop_fields` at any
/// depth, cuts arrays and long strings, and re-serializes without whitespace. `None` when the
/// text is not JSON.
pub fn compact_json(text: &str, rules: &JsonCompress) -> Option<String> {
    let value: Value = serde_json::from_str(text.trim()).ok()?;
    if !(value.is_object() || value.is_array()) {
        return None;
    }
    Some(compact_value(value, rules).to_string())
}

fn compact_value(value: Value, rules: &JsonCompress) -> Value {
    match value {
        Value::Object(map) => {
            let keep_all = rules.keep_fields.is_empty();
            Value::Object(
                map.into_iter()
                    .filter(|(k, v)| {
                        (keep_all || rules.keep_fields.contains(k) || v.is_object() || v.is_array())
                            && !rules.drop_fields.contains(k)
                    })
                    .map(|(k, v)| (k, compact_value(v, rules)))
                    // Containers emptied by the field filter carry nothing.
                    .filter(|(_, v)| keep_all || !is_empty_container(v))
                    .collect(),
            )
        }
        Value::Array(items) => {
            let total = items.len();
            let mut out: Vec<Value> = items
                .into_iter()
                .take(rules.max_array.max(1))
                .map(|v| compact_value(v, rules))
                .collect();
            if total > out.len() {
                out.push(Value::String(format!("... {} more", total - out.len())));
            }
            Value::Array(out)
        }
        Value::String(s) if s.chars().count() > rules.max_string.max(1) => {
            let cut: String = s.chars().take(rules.max_string.max(1)).collect();
            Value::String(format!("{cut}..."))
        }
        other => other,
    }
}

fn is_empty_container(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// JSON text without the whitespace between its tokens: strings (their escapes included), numbers
/// and key order are the original's bytes, so nothing a reader could use is lost. `None` when
/// the text is not a JSON object or array, or has no such whitespace.
pub fn minify_json(text: &str) -> Option<String> {
    let trimmed = text.trim();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    // Validated first: in text that is not JSON, whitespace outside quotes can matter.
    serde_json::from_str::<serde::de::IgnoredAny>(trimmed).ok()?;
    let mut out = String::with_capacity(trimmed.len());
    let (mut in_string, mut escaped) = (false, false);
    for ch in trimmed.chars() {
        if in_string {
            out.push(ch);
            match ch {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if !matches!(ch, ' ' | '\t' | '\n' | '\r') {
            in_string = ch == '"';
            out.push(ch);
        }
    }
    (out.len() < text.len()).then_some(out)
}

/// JSON text as TOON (Token-Oriented Object Notation, <https://toonformat.dev>, written by the
/// format's own Rust implementation): the same data with fewer tokens where it has arrays of
/// like objects (their keys written once, as a table's header: `flights[2]{number,price}:`,
/// then a row per object) and fewer quotes. `None` when the text is not a JSON object or array,
/// or when its TOON does not decode back to the same value (checked every time, not assumed:
/// what is sent must say everything the original did; `1.0` read back as `1` does not).
pub fn toon_json(text: &str) -> Option<String> {
    let trimmed = text.trim();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    let value: Value = serde_json::from_str(trimmed).ok()?;
    let toon = toon_format::encode_default(&value).ok()?;
    let back: Value = toon_format::decode_default(&toon).ok()?;
    (back == value).then_some(toon)
}

/// Removes HTML/XML tags and collapses runs of whitespace. `None` when nothing changes.
pub fn strip_markup(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    let mut last_space = false;
    for ch in text.chars() {
        match ch {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if in_tag => {}
            c if c.is_whitespace() => {
                if !last_space {
                    out.push(if c == '\n' { '\n' } else { ' ' });
                }
                last_space = true;
            }
            c => {
                out.push(c);
                last_space = false;
            }
        }
    }
    // An unclosed '<' was not a tag ("a < b"): keep the text as it was.
    if in_tag {
        return None;
    }
    let out = out.trim().to_string();
    (out != text).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_compacted_and_cut() {
        let rules = JsonCompress {
            keep_fields: vec![],
            drop_fields: vec![],
            max_array: 2,
            max_string: 5,
        };
        let got = compact_json(r#"{"a": [1, 2, 3, 4], "b": "abcdefgh"}"#, &rules).expect("json");
        assert_eq!(got, r#"{"a":[1,2,"... 2 more"],"b":"abcde..."}"#);
        assert_eq!(compact_json("not json", &rules), None);
        assert_eq!(compact_json("42", &rules), None);
    }

    #[test]
    fn json_keeps_only_chosen_fields() {
        let rules = JsonCompress {
            keep_fields: vec!["id".into(), "price".into()],
            drop_fields: vec![],
            max_array: 10,
            max_string: 100,
        };
        let got = compact_json(
            r#"[{"id": "HAT1", "price": 120, "notes": "x"}, {"misc": 1}]"#,
            &rules,
        )
        .expect("json");
        assert_eq!(got, r#"[{"id":"HAT1","price":120},{}]"#);
    }

    #[test]
    fn json_drops_chosen_fields_with_what_they_hold() {
        let rules = JsonCompress {
            keep_fields: vec![],
            drop_fields: vec!["created_at".into(), "prices".into()],
            max_array: usize::MAX,
            max_string: usize::MAX,
        };
        let got = compact_json(
            r#"{"id": "R1", "created_at": "2024-05-01", "flights": [{"n": "HAT1",
                "prices": {"economy": 120}, "created_at": 1}], "saved": []}"#,
            &rules,
        )
        .expect("json");
        // Dropped at any depth, a container with its contents; an empty array that was
        // there stays (it says something: nothing saved).
        assert_eq!(got, r#"{"id":"R1","flights":[{"n":"HAT1"}],"saved":[]}"#);
    }

    #[test]
    fn json_is_minified_without_touching_strings() {
        let text = "{\"a b\": [1, 2.50, -3e2],\n  \"c\": \"x \\\" , y\\\\\", \"d\": {} }";
        assert_eq!(
            minify_json(text).as_deref(),
            Some("{\"a b\":[1,2.50,-3e2],\"c\":\"x \\\" , y\\\\\",\"d\":{}}")
        );
        // Already compact, not JSON, or not a container: nothing to do.
        assert_eq!(minify_json(r#"{"a":1}"#), None);
        assert_eq!(minify_json("{ not json }"), None);
        assert_eq!(minify_json("Error: file not found"), None);
        assert_eq!(minify_json("  \"a string\"  "), None);
        // Surrounding whitespace alone is worth removing.
        assert_eq!(minify_json(" [1] ").as_deref(), Some("[1]"));
    }

    #[test]
    fn toon_writes_like_objects_as_a_table_and_reads_back_the_same() {
        let text = r#"{"flights": [{"number": "HAT069", "price": 121, "seats": {"economy": 12}},
            {"number": "HAT083", "price": 100, "seats": {"economy": 7}}], "date": "2024-05-20"}"#;
        let toon = toon_json(text).expect("a JSON object");
        assert_eq!(
            toon,
            "flights[2]{number,price,seats{economy}}:\n  HAT069,121,12\n  HAT083,100,7\ndate: 2024-05-20"
        );
        let back: Value = toon_format::decode_default(&toon).expect("TOON it wrote");
        assert_eq!(back, serde_json::from_str::<Value>(text).expect("JSON"));
        // Strings that look like other values stay strings.
        let toon = toon_json(r#"[{"a": "06:00:00", "b": "true", "c": "1"}]"#).expect("array");
        let back: Value = toon_format::decode_default(&toon).expect("TOON it wrote");
        assert_eq!(
            back,
            serde_json::json!([{"a": "06:00:00", "b": "true", "c": "1"}])
        );
        // Not a JSON container, or not JSON: nothing to do.
        assert_eq!(toon_json("Error: file not found"), None);
        assert_eq!(toon_json("  \"a string\"  "), None);
        assert_eq!(toon_json("{ not json }"), None);
        // A number TOON would read back as another JSON number is not sent as TOON.
        assert_eq!(toon_json(r#"{"price": 100.0}"#), None);
    }

    #[test]
    fn markup_is_stripped() {
        assert_eq!(
            strip_markup("<p>Hello   <b>world</b></p>\n\n\nok").as_deref(),
            Some("Hello world\nok")
        );
        assert_eq!(strip_markup("plain"), None);
        assert_eq!(strip_markup("a < b"), None);
    }
}
