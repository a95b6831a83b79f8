//! `cargo bench -p memlens-bench`: import + tokenize of the real data in `../shared/data`.

use memlens_import::{import, ImportOptions};
use std::path::PathBuf;

fn main() {
    divan::main();
}

fn shared(rel: &str) -> (String, Vec<u8>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path.display().to_string(), bytes)
}

fn bench_file(bencher: divan::Bencher<'_, '_>, rel: &str) {
    let (name, bytes) = shared(rel);
    let options = ImportOptions {
        model: Some("gpt-4o".into()),
        ..ImportOptions::default()
    };
    // Build the encoder outside the timed loop: it is built once per process.
    let _ = import(&name, &bytes, &options);
    bencher
        .counter(divan::counter::BytesCount::new(bytes.len()))
        .bench(|| import(&name, &bytes, &options).map(|r| r.traces.len()));
}

#[divan::bench(sample_count = 10)]
fn tau_bench_airline(bencher: divan::Bencher<'_, '_>) {
    bench_file(bencher, "traces/tau-bench-gpt-4o-airline.json");
}

#[divan::bench(sample_count = 10)]
fn locomo10(bencher: divan::Bencher<'_, '_>) {
    bench_file(bencher, "locomo/locomo10.json");
}
