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
}

/// Compacts JSON text: keeps only `keep_fields` (when given) at any depth, cuts arrays and long
/// strings, and re-serializes without whitespace. `None` when the text is not JSON.
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
                        keep_all || rules.keep_fields.contains(k) || v.is_object() || v.is_array()
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
    fn markup_is_stripped() {
        assert_eq!(
            strip_markup("<p>Hello   <b>world</b></p>\n\n\nok").as_deref(),
            Some("Hello world\nok")
        );
        assert_eq!(strip_markup("plain"), None);
        assert_eq!(strip_markup("a < b"), None);
    }
}
