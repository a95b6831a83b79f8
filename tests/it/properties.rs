//! Random bytes, random JSON and damaged fixtures never panic the sniffer or any importer.

use memlens_import::{import, ImportOptions, IMPORTERS};
use proptest::prelude::*;
use serde_json::Value;

pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        // Keys and strings from the vocabulary the importers look for, so the random documents
        // reach deep into their code paths.
        prop::sample::select(WORDS).prop_map(|s| Value::String(s.to_string())),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(WORDS), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

const WORDS: &[&str] = &[
    "role",
    "content",
    "messages",
    "system",
    "user",
    "assistant",
    "tool",
    "tool_calls",
    "tool_call_id",
    "function",
    "name",
    "arguments",
    "id",
    "type",
    "text",
    "tool_use",
    "tool_result",
    "tool_use_id",
    "input",
    "thinking",
    "request",
    "response",
    "choices",
    "message",
    "usage",
    "prompt_tokens",
    "traj",
    "conversation",
    "qa",
    "sample_id",
    "session_1",
    "speaker",
    "dia_id",
    "evidence",
    "resourceSpans",
    "scopeSpans",
    "spans",
    "attributes",
    "key",
    "value",
    "stringValue",
    "gen_ai.input.messages",
    "gen_ai.prompt.0.role",
    "$schema",
    "memlens",
    "trace",
    "chunk",
    "call",
    "version",
    "parts",
    "traceId",
    "output",
    "model",
];

fn all_formats() -> Vec<Option<String>> {
    std::iter::once(None)
        .chain(IMPORTERS.iter().map(|i| Some(i.name().to_string())))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        for format in all_formats() {
            let _ = import("random.bin", &bytes, &ImportOptions { format, model: None });
        }
    }

    #[test]
    fn random_json_never_panics(v in json_value(), lines in any::<bool>()) {
        let text = if lines {
            // As JSON Lines: the value's elements (or itself) one per line.
            match &v {
                Value::Array(items) => items.iter().map(Value::to_string).collect::<Vec<_>>().join("\n"),
                other => format!("{other}\n{other}"),
            }
        } else {
            v.to_string()
        };
        for format in all_formats() {
            let _ = import("random.json", text.as_bytes(), &ImportOptions { format, model: None });
        }
    }

    #[test]
    fn damaged_fixtures_never_panic(which in 0usize..64, cut in any::<prop::sample::Index>(), flip in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut files: Vec<_> = std::fs::read_dir(crate::root().join("tests/fixtures"))
            .expect("fixtures dir")
            .flatten()
            .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json" || e == "jsonl"))
            .collect();
        files.sort();
        let path = &files[which % files.len()];
        let mut bytes = std::fs::read(path).expect("fixture");
        if !bytes.is_empty() {
            let i = flip.index(bytes.len());
            bytes[i] = byte;
            bytes.truncate(cut.index(bytes.len()) + 1);
        }
        let _ = import("damaged.json", &bytes, &ImportOptions::default());
    }
}
