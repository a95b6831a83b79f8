//! Following a growing JSON Lines trace file (`memlens_import::follow`): MemLens JSON Lines, a
//! Claude Code session, a Codex rollout. Whatever the pieces the bytes arrive in, the traces equal
//! a whole import of the same bytes, and nothing is parsed or counted twice.

use crate::root;
use memlens_import::follow::{is_followable, Follower};
use memlens_import::{import, native, ImportError, ImportOptions};

fn whole(text: &[u8], options: &ImportOptions) -> Vec<memlens_core::Trace> {
    import("run.jsonl", text, options)
        .expect("whole file imports")
        .traces
}

/// Pieces of pseudo-random lengths (1..=max), cutting lines and UTF-8 sequences anywhere.
fn pieces(bytes: &[u8], max: usize, mut seed: u64) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let n = 1 + (seed >> 33) as usize % max;
        let (piece, tail) = rest.split_at(n.min(rest.len()));
        out.push(piece);
        rest = tail;
    }
    out
}

#[test]
fn tau_bench_followed_in_pieces_equals_the_whole_import() {
    let path = root().join("../shared/data/traces/tau-bench-gpt-4o-airline.json");
    let bytes = std::fs::read(&path).expect("tau-bench");
    let traces = import("tau.json", &bytes, &ImportOptions::default())
        .expect("tau-bench imports")
        .traces;
    let text = native::write(&traces);
    for (max, options) in [
        (4096, ImportOptions::default()),
        (
            97,
            ImportOptions {
                model: Some("gpt-4o-mini".into()),
                ..ImportOptions::default()
            },
        ),
    ] {
        let mut follower = Follower::new("tau.memlens.jsonl", &options);
        let (mut records, mut counted) = (0, 0);
        for piece in pieces(text.as_bytes(), max, 7) {
            let update = follower.push(piece).expect("every piece reads");
            records += update.records;
            counted += update.counted;
        }
        assert_eq!(follower.traces(), whole(text.as_bytes(), &options));
        assert_eq!(records, text.lines().count(), "each line read once");
        let chunks: usize = traces.iter().map(|t| t.chunks.len()).sum();
        assert_eq!(counted, chunks, "each chunk counted once");
        assert_eq!(follower.bytes(), text.len() as u64);
    }
}

#[test]
fn a_pool_trace_file_followed_step_by_step_equals_each_steps_import() {
    // What a live agent's file looks like: the npm/Python pool appends after every message.
    let mut pool = memlens_pool::Pool::new(memlens_pool::PoolOptions {
        model: Some("gpt-4o".into()),
        budget: 2000,
        policy: memlens_core::policy::PolicyConfig::builtin("window").expect("built-in"),
        summarizer: false,
        dialect: None,
        keep_history: true,
    })
    .expect("pool");
    let mut follower = Follower::new("live.jsonl", &ImportOptions::default());
    let mut file = String::new();
    let messages = [
        serde_json::json!({"role": "system", "content": "You are terse."}),
        serde_json::json!({"role": "user", "content": "Weather in Paris?"}),
        serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
            "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]}),
        serde_json::json!({"role": "tool", "tool_call_id": "c1", "content": "18°C, cloudy"}),
        serde_json::json!({"role": "assistant", "content": "18°C and cloudy."}),
        serde_json::json!({"role": "user", "content": "And tomorrow?"}),
        serde_json::json!({"role": "assistant", "content": "Rain."}),
    ];
    for m in messages {
        if m["role"] == "assistant" {
            let _ = pool.context(None);
        }
        pool.add(m).expect("a chat message");
        let lines = pool.trace_lines(false).expect("the pool keeps its history");
        file.push_str(&lines);
        let update = follower
            .push(lines.as_bytes())
            .expect("appended lines read");
        assert_eq!(update.records, lines.lines().count());
        if file.lines().count() > 1 {
            assert_eq!(
                follower.traces(),
                whole(file.as_bytes(), &ImportOptions::default())
            );
        }
    }
    let last = pool.trace_lines(true).expect("the pool keeps its history");
    follower.push(last.as_bytes()).expect("the last lines read");
    file.push_str(&last);
    let traces = follower.traces();
    assert_eq!(traces, whole(file.as_bytes(), &ImportOptions::default()));
    assert_eq!(traces[0].calls.len(), 3);
}

const HEAD: &str = concat!(
    r#"{"type":"memlens","$schema":"https://memlens.dev/schema/trace-v1.json","version":1}"#,
    "\n"
);

#[test]
fn a_model_named_by_the_first_call_recounts_the_chunks_before_it() {
    // No model on the trace line: chunks are counted with the default encoding until the first
    // call names gpt-4 (cl100k), then recounted, as a whole import counts them.
    let text = format!(
        "{HEAD}{}\n{}\n{}\n{}\n",
        r#"{"type":"trace","id":"t","format":"openai"}"#,
        r#"{"type":"chunk","id":0,"key":"m0","category":"user","content":"Ünïcödé façade — 東京タワー 🚀","starts_message":true}"#,
        r#"{"type":"chunk","id":1,"key":"m1","category":"assistant","content":"ok","starts_message":true}"#,
        r#"{"type":"call","index":0,"input":[0],"output":[1],"model":"gpt-4"}"#,
    );
    let mut follower = Follower::new("t.jsonl", &ImportOptions::default());
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    follower
        .push(lines[..4].concat().as_bytes())
        .expect("reads");
    let before = follower.traces()[0].chunks[0].tokens;
    let update = follower.push(lines[4].as_bytes()).expect("reads");
    assert_eq!(update.counted, 2, "both chunks recounted as gpt-4");
    assert_ne!(follower.traces()[0].chunks[0].tokens, before);
    assert_eq!(
        follower.traces(),
        whole(text.as_bytes(), &ImportOptions::default())
    );
}

#[test]
fn bad_records_are_errors_naming_the_line_and_bad_json_is_a_warning() {
    let trace = r#"{"type":"trace","id":"t","format":"openai"}"#;
    // A line that is not JSON: skipped with a warning, CRLF endings read.
    let mut follower = Follower::new("w.jsonl", &ImportOptions::default());
    let text = format!("{}\r\n{trace}\r\nnot json\r\n", HEAD.trim_end());
    let update = follower
        .push(text.as_bytes())
        .expect("a bad line is a warning");
    assert_eq!((update.records, update.changed.clone()), (3, vec![0]));
    let (warnings, count) = follower.warnings();
    assert_eq!(count, 1);
    assert!(warnings[0]
        .to_string()
        .starts_with("w.jsonl: line 3 (record 2): skipped: invalid JSON"));

    // A call referring to a chunk not defined: an error naming the line, and it sticks.
    let mut follower = Follower::new("e.jsonl", &ImportOptions::default());
    let bad = format!(
        "{HEAD}{trace}\n{}\n",
        r#"{"type":"call","index":0,"input":[5],"output":[]}"#
    );
    let e = follower.push(bad.as_bytes()).expect_err("undefined chunk");
    assert!(matches!(e, ImportError::Invalid { .. }));
    assert!(
        e.to_string()
            .starts_with("e.jsonl: line 3 (record 2): chunk 5 is referenced before"),
        "{e}"
    );
    assert_eq!(follower.traces().len(), 1, "what came before stays read");
    assert_eq!(follower.push(b"{}\n").expect_err("stuck"), e);

    // No header first.
    let mut follower = Follower::new("h.jsonl", &ImportOptions::default());
    let e = follower
        .push(format!("{trace}\n").as_bytes())
        .expect_err("no header");
    assert!(
        e.to_string().contains("line 1 (record 0): expected the"),
        "{e}"
    );

    // An unfinished line waits; nothing is read from it.
    let mut follower = Follower::new("p.jsonl", &ImportOptions::default());
    let update = follower.push(HEAD.trim_end().as_bytes()).expect("waits");
    assert_eq!(update.records, 0);
    assert_eq!(follower.bytes(), HEAD.trim_end().len() as u64);
}

#[test]
fn json_lines_are_followed_in_parts_and_one_json_document_is_not() {
    assert!(is_followable(HEAD.as_bytes()));
    assert!(is_followable(format!("\n\n{HEAD}").as_bytes()));
    let session =
        std::fs::read(root().join("tests/fixtures/claude-code/session.jsonl")).expect("fixture");
    assert!(is_followable(&session));
    // One line of a session: not yet known to be lines, not one JSON document either.
    let first_line = session.split(|&b| b == b'\n').next().expect("a line");
    assert!(!is_followable(first_line));
    assert!(!is_followable(
        br#"{"type":"user","message":{"role":"user","content":"hi"}}"#
    ));
    assert!(!is_followable(b"[{\"role\":\"user\"}]"));
    assert!(!is_followable(b""));
}

/// Chunks of `after` whose text their trace (same id, same model) did not have in `before`: the
/// ones a follower must count; every other chunk keeps the count it had (and the unrecorded
/// item is an estimate, never counted).
fn new_texts(before: &[memlens_core::Trace], after: &[memlens_core::Trace]) -> usize {
    after
        .iter()
        .map(|t| {
            let had: std::collections::HashSet<&str> = before
                .iter()
                .filter(|b| b.id == t.id && b.main_model() == t.main_model())
                .flat_map(|b| b.chunks.iter().map(|c| c.content.as_str()))
                .collect();
            t.chunks
                .iter()
                .filter(|c| c.category != memlens_core::Category::Unrecorded)
                .filter(|c| !had.contains(c.content.as_str()))
                .count()
        })
        .sum()
}

/// Follows `bytes` in pieces; after every piece that ends a line, the traces equal a whole
/// import of the lines so far, and the push counted exactly the chunks whose text is new to their
/// trace. Returns the records read and the chunks counted in all.
fn follow_in_pieces(
    name: &str,
    bytes: &[u8],
    max: usize,
    options: &ImportOptions,
) -> (usize, usize) {
    let mut follower = Follower::new(name, options);
    let (mut records, mut counted, mut sent) = (0, 0, 0);
    for piece in pieces(bytes, max, 11) {
        let before = follower.traces().to_vec();
        let update = follower.push(piece).expect("every piece reads");
        assert_eq!(
            update.counted,
            new_texts(&before, follower.traces()),
            "{name}: a push counts only the texts new to their trace"
        );
        records += update.records;
        counted += update.counted;
        sent += piece.len();
        let so_far = &bytes[..sent];
        let complete = &so_far[..so_far
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)];
        // A whole import of one line reads one JSON document, not lines: compare from two.
        let lines_so_far = complete
            .split(|&b| b == b'\n')
            .filter(|l| !l.trim_ascii().is_empty());
        if update.records > 0 && lines_so_far.count() >= 2 {
            // A whole import also needs a conversation line to find a trace.
            if let Ok(whole) = import(name, complete, options) {
                assert_eq!(
                    follower.traces(),
                    whole.traces,
                    "{name}: after {sent} bytes"
                );
                assert_eq!(
                    follower.warnings().1,
                    whole.warning_count,
                    "{name}: warnings"
                );
            }
        }
    }
    let whole = import(name, bytes, options).expect("whole file imports");
    assert_eq!(follower.traces(), whole.traces, "{name}: the whole file");
    assert_eq!(follower.format(), Some(whole.format));
    assert_eq!(follower.bytes(), bytes.len() as u64);
    (records, counted)
}

#[test]
fn claude_code_and_codex_sessions_followed_in_pieces_equal_the_whole_import() {
    for fixture in [
        "claude-code/session.jsonl",
        "claude-code/branches-and-inline-sidechain.jsonl",
        "claude-code/malformed-lines.jsonl",
        // A 2.1 session opens with a `permission-mode` line: the follower looks past it.
        "claude-code/v2.1-permission-mode-first.jsonl",
        "claude-code/parallel-tool-calls.jsonl",
        "codex/session.jsonl",
        "codex/replacement-history.jsonl",
        "codex/malformed.jsonl",
    ] {
        let bytes = std::fs::read(root().join("tests/fixtures").join(fixture)).expect("fixture");
        let text = String::from_utf8_lossy(&bytes);
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
        for (max, options) in [
            (61, ImportOptions::default()),
            (
                400,
                ImportOptions {
                    model: Some("gpt-4o-mini".into()),
                    ..ImportOptions::default()
                },
            ),
        ] {
            let (records, counted) = follow_in_pieces(fixture, &bytes, max, &options);
            assert_eq!(records, lines, "{fixture}: each line read once");
            // Each push counted exactly the texts new to their trace (checked per push above);
            // every chunk of the whole file was counted at some push.
            let whole = import(fixture, &bytes, &options).expect("imports");
            let chunks: usize = whole.traces.iter().map(|t| t.chunks.len()).sum();
            assert!(
                counted >= chunks.min(1),
                "{fixture}: counted {counted} of {chunks}"
            );
        }
    }
}

#[test]
fn a_growing_claude_code_session_counts_only_what_each_append_adds() {
    let bytes =
        std::fs::read(root().join("tests/fixtures/claude-code/session.jsonl")).expect("fixture");
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut follower = Follower::new("session.jsonl", &ImportOptions::default());
    let first = follower
        .push(lines[..lines.len() - 1].concat().as_bytes())
        .expect("reads");
    assert_eq!(follower.format(), Some("claude-code"));
    let counted = |traces: &[memlens_core::Trace]| -> usize {
        traces
            .iter()
            .flat_map(|t| &t.chunks)
            .filter(|c| c.category != memlens_core::Category::Unrecorded)
            .count()
    };
    let before = counted(follower.traces());
    assert_eq!(first.counted, before, "the first read counts every chunk");
    let last = follower
        .push(lines[lines.len() - 1].as_bytes())
        .expect("reads");
    let after = counted(follower.traces());
    assert_eq!(last.records, 1);
    assert!(
        last.counted <= after - before + 1,
        "an append counts the chunks it adds (and one it extends), not the file: {} of {after}",
        last.counted
    );
    assert_eq!(last.changed, vec![0]);
}
