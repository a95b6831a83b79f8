//! `cargo bench -p memlens-bench --bench tokens`: counting the tau-bench messages (contents and
//! tool-call arguments, one count per text, as the importers and pools count) with MemLens'
//! hand-written pre-tokenizer against tiktoken-rs (the regex-based tiktoken core), both encodings.

use memlens_core::tokens::{Encoding, EncodingChoice, TokenCounter};
use std::path::PathBuf;

fn main() {
    divan::main();
}

fn texts() -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/traces/tau-bench-gpt-4o-airline.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let records: serde_json::Value = serde_json::from_slice(&bytes).expect("tau-bench is JSON");
    let mut texts = Vec::new();
    for record in records.as_array().into_iter().flatten() {
        for message in record["traj"].as_array().into_iter().flatten() {
            if let Some(content) = message["content"].as_str() {
                texts.push(content.to_owned());
            }
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                if let Some(arguments) = call["function"]["arguments"].as_str() {
                    texts.push(arguments.to_owned());
                }
            }
        }
    }
    texts
}

fn encoding(name: &str) -> Encoding {
    match name {
        "o200k" => Encoding::O200kBase,
        _ => Encoding::Cl100kBase,
    }
}

#[divan::bench(args = ["o200k", "cl100k"], sample_count = 10)]
fn memlens(bencher: divan::Bencher<'_, '_>, name: &str) {
    let texts = texts();
    let counter = TokenCounter::new(EncodingChoice {
        encoding: encoding(name),
        estimated: false,
    });
    let bytes: usize = texts.iter().map(String::len).sum();
    bencher
        .counter(divan::counter::BytesCount::new(bytes))
        .bench(|| {
            texts
                .iter()
                .map(|t| counter.count(t) as usize)
                .sum::<usize>()
        });
}

#[divan::bench(args = ["o200k", "cl100k"], sample_count = 10)]
fn tiktoken_rs(bencher: divan::Bencher<'_, '_>, name: &str) {
    let texts = texts();
    let core = match encoding(name) {
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
    };
    let bytes: usize = texts.iter().map(String::len).sum();
    bencher
        .counter(divan::counter::BytesCount::new(bytes))
        .bench(|| {
            texts
                .iter()
                .map(|t| core.encode_ordinary(t).len())
                .sum::<usize>()
        });
}
