//! Small helpers to read loosely typed JSON without panicking.

use serde_json::Value;

/// `v[key]` as a string slice.
pub fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// `v[key]` as an array (missing or another type: `None`).
pub fn array_at<'a>(v: &'a Value, key: &str) -> Option<&'a Vec<Value>> {
    v.get(key).and_then(Value::as_array)
}

/// `v[key]` as a non-negative integer (also accepts integral floats and numeric strings).
pub fn u64_at(v: &Value, key: &str) -> Option<u64> {
    as_u64(v.get(key)?)
}

/// A value as a non-negative integer (integral floats and numeric strings too).
pub fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A scalar as text: strings as they are, numbers and booleans printed; `None` for null.
pub fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A JSON value as the text a model would see: strings unquoted, anything else as compact JSON.
pub fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A short description of a value's type, for error messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What the top level of a document looks like, for "unrecognized format" errors (three levels
/// deep at most: a document of nested arrays is not described all the way down).
pub fn describe(v: &Value) -> String {
    describe_to_depth(v, 3)
}

fn describe_to_depth(v: &Value, depth: usize) -> String {
    match v {
        Value::Object(map) if map.is_empty() => "an empty object".to_string(),
        Value::Object(map) => {
            let keys: Vec<&str> = map.keys().take(6).map(String::as_str).collect();
            format!("an object with keys {}", keys.join(", "))
        }
        Value::Array(items) => match items.first() {
            Some(_) if depth == 0 => format!("an array of {}", items.len()),
            Some(first) => format!(
                "an array of {} whose first is {}",
                items.len(),
                describe_to_depth(first, depth - 1)
            ),
            None => "an empty array".to_string(),
        },
        other => type_name(other).to_string(),
    }
}
