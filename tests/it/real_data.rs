//! The real data in `../shared/data` (never copied into the repository): tau-bench trajectories,
//! LoCoMo conversations and gzipped mini-swe-agent runs. Also a 50 MB file of garbage.

use crate::{import_path, root};
use memlens_core::tokens::{TokenCounter, REPLY_PRIMING_TOKENS};
use memlens_import::{import, native, ImportOptions};
use std::path::PathBuf;

fn shared(rel: &str) -> PathBuf {
    let p = root().join("../shared/data").join(rel);
    assert!(
        p.exists(),
        "{} is missing: the real data must sit at ../shared beside the repo",
        p.display()
    );
    p
}

#[test]
fn tau_bench_imports_200_traces_with_no_orphaned_tool_pairs() {
    let r =
        import_path(&shared("traces/tau-bench-gpt-4o-airline.json")).expect("tau-bench imports");
    assert_eq!(r.format, "tau-bench");
    assert_eq!(r.traces.len(), 200);
    assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    let counter = TokenCounter::for_model(Some("gpt-4o"));
    let raw: serde_json::Value = serde_json::from_slice(
        &std::fs::read(shared("traces/tau-bench-gpt-4o-airline.json")).expect("read"),
    )
    .expect("json");
    for (t, record) in r.traces.iter().zip(raw.as_array().expect("array")) {
        assert_eq!(t.orphan_results().count(), 0, "{}", t.id);
        assert_eq!(t.unanswered_calls().count(), 0, "{}", t.id);
        let traj = record["traj"].as_array().expect("traj");
        // Every assistant message is one call; every message is at least one chunk.
        let assistants = traj.iter().filter(|m| m["role"] == "assistant").count();
        assert_eq!(t.calls.len(), assistants, "{}", t.id);
        // The last call's input is the whole history before the last assistant message, so its
        // counted tokens follow from the chunks: content + framing + priming.
        let last = t.calls.last().expect("calls");
        let sum: u64 = last
            .input
            .iter()
            .map(|&i| u64::from(t.chunk(i).tokens))
            .sum();
        assert!(sum > 0);
        for c in &t.chunks {
            assert_eq!(
                c.content_tokens,
                counter.count(&c.content),
                "{}/{}",
                t.id,
                c.key
            );
            assert!(c.tokens >= c.content_tokens);
        }
        let _ = REPLY_PRIMING_TOKENS;
    }
}

#[test]
fn tau_bench_round_trips_through_the_native_format() {
    let r = import_path(&shared("traces/tau-bench-gpt-4o-airline.json")).expect("imports");
    let text = native::write(&r.traces);
    let back = import(
        "tau.memlens.jsonl",
        text.as_bytes(),
        &ImportOptions::default(),
    )
    .expect("native imports");
    assert_eq!(back.format, "memlens");
    assert_eq!(back.traces, r.traces);
}

#[test]
fn locomo_imports_10_conversations_with_their_probes() {
    let r = import_path(&shared("locomo/locomo10.json")).expect("LoCoMo imports");
    assert_eq!(r.format, "locomo");
    assert_eq!(r.traces.len(), 10);
    let turns: usize = r.traces.iter().map(|t| t.chunks.len()).sum();
    assert_eq!(turns, 5882);
    let probes: usize = r.traces.iter().map(|t| t.probes.len()).sum();
    assert_eq!(probes, 1986);
    // Every chunk keeps its dialogue id and session date.
    assert!(r
        .traces
        .iter()
        .flat_map(|t| &t.chunks)
        .all(|c| c.meta.dia_id.is_some() && c.meta.session_date.is_some()));
    // Evidence resolves to turns except for the few ids the data set itself gets wrong, which are
    // reported, not dropped silently.
    let unresolved: usize = r
        .traces
        .iter()
        .flat_map(|t| &t.probes)
        .map(|p| p.evidence.len() - p.evidence_chunks.len())
        .sum();
    assert!(unresolved > 0 && unresolved < 20, "{unresolved}");
    assert!(r
        .warnings
        .iter()
        .any(|w| w.message.contains("match no dialogue turn")));
    let back = import(
        "l.jsonl",
        native::write(&r.traces).as_bytes(),
        &ImportOptions::default(),
    )
    .expect("native");
    assert_eq!(back.traces, r.traces);
}

/// Archived logs open as they are: 99 gzipped mini-swe-agent runs (`*.traj.json.gz`), each one
/// trace, read through `import`'s own decompression (the npm and Python path; the CLI's folder
/// walk over the same set is in crates/memlens-cli/tests/gzip.rs).
#[test]
fn mini_swe_agent_gzipped_runs_import_as_99_traces() {
    let dir = shared("traces/mini-swe-agent-deepseek");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("readable")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".traj.json.gz"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 99);
    for file in &files {
        let r = import_path(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(r.format, "mini-swe-agent", "{}", file.display());
        assert_eq!(r.traces.len(), 1, "{}", file.display());
        assert!(r.traces[0].calls.len() > 1, "{}", file.display());
    }
}

#[test]
fn fifty_megabytes_of_garbage_is_an_error_not_a_panic() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let bytes: Vec<u8> = (0..50 * 1024 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    let e = import("garbage.bin", &bytes, &ImportOptions::default()).expect_err("garbage");
    assert!(e.to_string().starts_with("garbage.bin:1:"), "{e}");
    // Garbage whose first line is valid JSON Lines: every other line becomes a counted warning.
    let mut lines = String::from("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"content\":\"y\"}]}\n");
    while lines.len() < 50 * 1024 * 1024 {
        lines.push_str("{\"messages\": [ nope\n");
    }
    let r = import("lines.jsonl", lines.as_bytes(), &ImportOptions::default())
        .expect("first line loads");
    assert_eq!(r.traces.len(), 1);
    assert!(r.warning_count > 1_000_000);
    assert_eq!(r.warnings.len(), memlens_import::MAX_WARNINGS);
}

/// The Labels view's suggestion for a chunk (from the analysis' chunk table) is the hindsight
/// label `memlens labels-from-hindsight` writes for it at the first call that carried it, on every
/// tau-bench trajectory; and both kinds occur.
#[test]
fn suggested_labels_are_the_hindsight_labels_at_each_chunks_first_call() {
    use memlens_core::analysis::{analyze, AnalysisOptions};
    use memlens_core::cost::PriceTable;
    use memlens_core::hindsight::{hindsight_labels, suggested_label};
    use memlens_core::model::Category;
    use memlens_core::references::detect;
    use memlens_core::value::Label;
    let r = import_path(&shared("traces/tau-bench-gpt-4o-airline.json")).expect("tau-bench");
    let (mut important, mut useless) = (0, 0);
    for trace in r.traces.iter().take(40) {
        let a = analyze(trace, &PriceTable::builtin(), &AnalysisOptions::default());
        let labels = hindsight_labels(trace, &detect(trace));
        for row in &a.chunks {
            let got = suggested_label(row.category, row.first_call, &row.used_at);
            let at_first = labels
                .iter()
                .find(|l| l.chunk.0 == row.id && Some(l.call) == row.first_call);
            let want = match at_first {
                _ if row.category == Category::System => None,
                Some(l) if l.used_later() => Some(Label::Important),
                Some(_) => Some(Label::Useless),
                None => None,
            };
            assert_eq!(got, want, "{} {}", trace.id, row.key);
            important += usize::from(got == Some(Label::Important));
            useless += usize::from(got == Some(Label::Useless));
        }
    }
    assert!(
        important > 0 && useless > 0,
        "{important} important, {useless} useless"
    );
}
