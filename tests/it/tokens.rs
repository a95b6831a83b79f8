//! The hand-written tokenizer path (`memlens_core::tokens`) against tiktoken-rs' regex and BPE,
//! on text nobody wrote for it: every string of the tau-bench trajectories and the LoCoMo
//! conversations, each whole file as one text, and every fixture file.

use crate::root;
use memlens_core::tokens::{Encoding, EncodingChoice, TokenCounter};

fn counters() -> [(TokenCounter, &'static tiktoken_rs::CoreBPE); 2] {
    let counter = |encoding| {
        TokenCounter::new(EncodingChoice {
            encoding,
            estimated: false,
        })
    };
    [
        (
            counter(Encoding::O200kBase),
            tiktoken_rs::o200k_base_singleton(),
        ),
        (
            counter(Encoding::Cl100kBase),
            tiktoken_rs::cl100k_base_singleton(),
        ),
    ]
}

fn strings<'a>(value: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    match value {
        serde_json::Value::String(s) => out.push(s),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(map) => map.iter().for_each(|(k, v)| {
            out.push(k);
            strings(v, out);
        }),
        _ => {}
    }
}

fn assert_same_counts(name: &str, texts: &[&str]) {
    for (counter, reference) in counters() {
        let mut total = 0u64;
        for text in texts {
            let expected = reference.encode_ordinary(text).len();
            assert_eq!(
                counter.count(text) as usize,
                expected,
                "{name}, {:?}: {text:?}",
                counter.choice().encoding
            );
            total += expected as u64;
        }
        assert!(total > 0, "{name}: no text");
    }
}

#[test]
fn real_data_counts_equal_tiktoken() {
    for rel in [
        "traces/tau-bench-gpt-4o-airline.json",
        "locomo/locomo10.json",
    ] {
        let path = root().join("../shared/data").join(rel);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{}: {e} (the real data sits at ../shared)", path.display())
        });
        let value: serde_json::Value = serde_json::from_str(&text).expect("the real data is JSON");
        let mut texts = Vec::new();
        strings(&value, &mut texts);
        assert!(texts.len() > 10_000, "{rel}: {} strings", texts.len());
        assert_same_counts(rel, &texts);
        assert_same_counts(rel, &[&text]);
    }
}

#[test]
fn fixture_files_count_equal_tiktoken() {
    let mut files = Vec::new();
    let mut dirs = vec![root().join("tests/fixtures")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixtures are readable") {
            let path = entry.expect("fixture entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                if text.trim().is_empty() {
                    continue;
                }
                files.push((path, text));
            }
        }
    }
    assert!(files.len() > 20, "{} fixture files", files.len());
    for (path, text) in &files {
        assert_same_counts(&path.display().to_string(), &[text]);
    }
}
