#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use super::*;

/// The first tau-bench system prompt, then the other messages of the first `n` trajectories.
fn long_run(n: usize) -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/traces/tau-bench-gpt-4o-airline.json"
    );
    let raw: Vec<Value> =
        serde_json::from_slice(&std::fs::read(path).expect("the shared tau-bench file"))
            .expect("tau-bench JSON");
    let mut run = Vec::new();
    for record in raw.iter().take(n) {
        for m in record["traj"].as_array().expect("traj") {
            if m["role"] != "system" || run.is_empty() {
                run.push(m.clone());
            }
        }
    }
    run
}

fn pool(policy: &str, budget: u32) -> Pool {
    Pool::new(PoolOptions {
        model: Some("gpt-4o".into()),
        budget,
        policy: PolicyConfig::builtin(policy).expect("built-in policy"),
        summarizer: policy.contains("summar"),
        dialect: None,
        keep_history: true,
    })
    .expect("valid pool options")
}

/// A message sent patched in consecutive contexts is patched once and shared after that (the
/// render cache), and a context that only appends extends the latest rendering in place. Every
/// context must be what the same pool renders with its cache emptied and nothing extended. The
/// run exercises both paths: patches sent again as they were (hundreds), and a message patched
/// differently from one context to the next; and summaries, retrieval and cleared tool results
/// among them.
#[test]
fn patches_shared_across_contexts_are_what_a_fresh_render_gives() {
    let run = long_run(30);
    // Budgets where compressed messages stay in the context turn after turn (at 1,500 the
    // context churns and little is sent twice).
    let mut repatched = 0;
    let mut summaries = 0;
    for (policy, budget) in [
        ("value-compress", 8000),
        ("value", 4000),
        ("letta-summarize", 4000),
        ("value-offload", 4000),
        ("anthropic-clear-tool-uses", 4000),
    ] {
        let (mut cached, mut uncached) = (pool(policy, budget), pool(policy, budget));
        let (mut shared, mut extended) = (0, 0);
        let mut latest: Option<*const Vec<Rendered>> = None;
        for (t, m) in run.iter().enumerate() {
            cached.add(m.clone()).expect("a tau-bench message");
            uncached.add(m.clone()).expect("a tau-bench message");
            if m["role"] == "assistant" {
                continue;
            }
            let before = cached.patched.clone();
            let got = cached.context(None);
            uncached.patched.clear();
            uncached.last_is_engines = false;
            let want = uncached.context(None);
            assert_eq!(got.items, want.items, "{policy}: context after message {t}");
            // Extended in place, the rendering is the same allocation as the latest (which
            // `got` of the last turn, dropped, no longer shares); rendered afresh, a new one
            // made while the latest was still held.
            extended += usize::from(latest == Some(Arc::as_ptr(&got.items)));
            latest = Some(Arc::as_ptr(&got.items));
            summaries += got
                .items
                .iter()
                .filter(|r| matches!(r, Rendered::Summary { .. }))
                .count();
            for (message, (states, value)) in &cached.patched {
                match before.get(message) {
                    Some((s, v)) if s == states => {
                        assert!(Arc::ptr_eq(v, value), "{policy}: patched again");
                        shared += 1;
                    }
                    Some(_) => repatched += 1,
                    None => {}
                }
            }
        }
        assert!(
            !policy.starts_with("value") || shared > 100,
            "{policy}: {shared} patches sent again unchanged"
        );
        assert!(
            // (The archive's retrieval changes most of value-offload's contexts.)
            !matches!(policy, "value" | "value-compress") || extended > 10,
            "{policy}: {extended} contexts extended"
        );
    }
    assert!(summaries > 0, "no context had a summary");
    assert!(
        repatched > 0,
        "no message patched differently in a later context"
    );
}
