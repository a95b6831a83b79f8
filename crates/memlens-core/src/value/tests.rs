use super::engine::MAX_BUCKET;
use super::fit::FIT_FEATURES;
use super::minhash::splitmix64;
use super::*;
use crate::model::{Category, Chunk, ChunkId, ChunkMeta};

fn chunk(id: u32, category: Category, content: &str) -> Chunk {
    Chunk {
        id: ChunkId(id),
        key: format!("m{id}"),
        category,
        content: content.to_string(),
        starts_message: true,
        content_tokens: 0,
        tokens: 0,
        meta: ChunkMeta::default(),
    }
}

/// A deterministic pseudo-random generator for generated cases.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = splitmix64(self.0);
        self.0
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const VOCAB: &[&str] = &[
    "flight", "paris", "lisbon", "booking", "the", "a", "of", "refund", "error", "cargo", "test",
    "failed", "passed", "file", "src", "main", "rs", "json", "{", "}", ":", "123", "ok", "thanks",
    "hello", "user", "order", "status", "shipped", "é", "日本", "",
];

fn random_text(rng: &mut Lcg, max_words: u64) -> String {
    let n = rng.below(max_words + 1);
    (0..n)
        .map(|_| VOCAB[rng.below(VOCAB.len() as u64) as usize])
        .collect::<Vec<_>>()
        .join(if rng.below(2) == 0 { " " } else { "  " })
}

fn prose(seed: u64, words: usize) -> String {
    // Distinct synthetic words: w<seed>_<i>.
    (0..words)
        .map(|i| format!("w{seed}x{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn in_unit(x: f32) -> bool {
    (0.0..=1.0).contains(&x)
}

/// The ranking's paths (no sentences, fixed factors kept per chunk; and `ranked_values`, with
/// the query's matches and the recency decay kept across calls) give the explaining path's
/// numbers exactly, also after the config changes under the chunks.
fn assert_ranking_paths_agree(
    engine: &mut ValueEngine,
    ids: &[ChunkId],
    now: u32,
    now_secs: Option<f64>,
    query: &str,
    case: usize,
) {
    let explained = engine.score_all(ids, now, now_secs, Some(query));
    let values = engine.values(ids, now, now_secs, Some(query));
    let factors = engine.factors(ids, now, now_secs, Some(query));
    for ((e, v), f) in explained.iter().zip(&values).zip(&factors) {
        assert_eq!(e.value.to_bits(), v.to_bits(), "case {case}: {e:?}");
        assert_eq!(Some(e.factors), *f, "case {case}");
    }
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    // Twice (the second from what the first kept), then at a later call and with another
    // query, each against `values` at the same call.
    for (at, q) in [(now, query), (now, query), (now + 7, "order refund")] {
        assert_eq!(
            bits(engine.ranked_values(ids, at, now_secs, Some(q))),
            bits(engine.values(ids, at, now_secs, Some(q))),
            "case {case}, call {at}, query {q:?}"
        );
    }
}

#[test]
fn factors_stay_in_unit_interval_for_arbitrary_inputs() {
    let mut rng = Lcg(7);
    let odd = [
        0.0,
        -1.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e-30,
        1e30,
    ];
    for case in 0..300 {
        let mut config =
            ValueConfig::preset(ValueConfig::PRESETS[case % ValueConfig::PRESETS.len()])
                .expect("preset");
        let pick = |rng: &mut Lcg| {
            if rng.below(3) == 0 {
                odd[rng.below(odd.len() as u64) as usize]
            } else {
                rng.unit() * 100.0
            }
        };
        if case % 2 == 1 {
            config.weights = Weights::from_array([0.0; 8].map(|_| pick(&mut rng)));
            config.recency_half_life_calls = pick(&mut rng);
            config.recency_half_life_secs = Some(pick(&mut rng));
            config.popularity_scale = pick(&mut rng);
            config.density_scale = pick(&mut rng);
            config.redundancy_threshold = pick(&mut rng);
            config.latency_scale_ms = pick(&mut rng);
            config.size_scale_tokens = pick(&mut rng);
            config
                .category_weights
                .insert(Category::ToolResult, pick(&mut rng));
        }
        let mut engine = ValueEngine::new(config);
        let n = 1 + rng.below(25) as u32;
        let mut ids = Vec::new();
        for i in 0..n {
            let mut c = chunk(
                i,
                Category::ALL[rng.below(9) as usize],
                &random_text(&mut rng, 40),
            );
            if rng.below(2) == 0 {
                c.content_tokens = rng.below(100) as u32;
                c.tokens = c.content_tokens + rng.below(5) as u32;
            }
            if rng.below(3) == 0 {
                c.meta.latency_ms = Some(f64::from(pick(&mut rng)) * 100.0);
            }
            let time = match rng.below(3) {
                0 => None,
                1 => Some(f64::from(rng.unit()) * 1e6),
                _ => Some(f64::NAN),
            };
            engine.add(&c, rng.below(50) as u32, time);
            for _ in 0..rng.below(4) {
                engine.record_use(c.id);
            }
            match rng.below(5) {
                0 => engine.set_label(c.id, Some(Label::Important)),
                1 => engine.set_label(c.id, Some(Label::Useless)),
                2 => engine.pin(c.id, true),
                _ => {}
            }
            ids.push(c.id);
        }
        let now_secs = match rng.below(3) {
            0 => None,
            1 => Some(f64::from(rng.unit()) * 1e6),
            _ => Some(f64::INFINITY),
        };
        let query = random_text(&mut rng, 6);
        let rel = engine.relevance(&query, &ids);
        assert!(rel.iter().all(|&r| in_unit(r)), "{rel:?}");
        let now = rng.below(80) as u32;
        assert_ranking_paths_agree(&mut engine, &ids, now, now_secs, &query, case);
        let mut other = engine.clone();
        let mut changed = other.config().clone();
        changed.recency_half_life_calls = pick(&mut rng);
        changed.density_scale = pick(&mut rng);
        changed.redundancy_threshold = pick(&mut rng);
        changed.size_scale_tokens = pick(&mut rng);
        changed.popularity_scale = pick(&mut rng);
        changed.weights = Weights::from_array([0.0; 8].map(|_| pick(&mut rng)));
        other.set_config(changed);
        assert_ranking_paths_agree(&mut other, &ids, now, now_secs, &query, case);
        // More uses than the ranking's popularity table held so far.
        for _ in 0..1 + rng.below(6) {
            other.record_use(ids[rng.below(ids.len() as u64) as usize]);
        }
        assert_ranking_paths_agree(&mut other, &ids, now, now_secs, &query, case);
        for v in engine.score_all(&ids, now, now_secs, Some(&query)) {
            assert!(
                v.factors.to_array().iter().all(|&x| in_unit(x)),
                "case {case}: {v:?}"
            );
            assert!(in_unit(v.value), "case {case}: {v:?}");
            assert!(v.value_per_token.is_finite() && v.value_per_token >= 0.0);
            assert!(v.value_per_1k_tokens.is_finite());
            assert!(v.explanation.len() >= 7);
        }
        // Relevance passed in out of range is clamped too.
        for r in [f32::NAN, -3.0, 7.0] {
            let v = engine.score(ids[0], 0, None, r);
            assert!(in_unit(v.factors.relevance) && in_unit(v.value));
        }
    }
}

#[test]
fn duplicates_are_redundant_and_unrelated_chunks_are_not() {
    let mut engine = ValueEngine::default();
    let original = prose(1, 120);
    let mut near: Vec<String> = original.split(' ').map(str::to_string).collect();
    near[60] = "changed".into();
    let near = near.join(" ");
    engine.add(&chunk(0, Category::ToolResult, &original), 0, None);
    engine.add(&chunk(1, Category::ToolResult, &prose(2, 120)), 1, None);
    engine.add(&chunk(2, Category::ToolResult, &original), 2, None);
    engine.add(&chunk(3, Category::ToolResult, &near), 3, None);
    engine.add(&chunk(4, Category::User, "Hello there!"), 4, None);
    let v: Vec<ChunkValue> = (0..5)
        .map(|i| engine.score(ChunkId(i), 5, None, 0.0))
        .collect();
    assert_eq!(v[0].factors.redundancy, 0.0);
    assert_eq!(v[1].factors.redundancy, 0.0, "{:?}", v[1].explanation);
    assert_eq!(v[2].factors.redundancy, 1.0);
    assert!(v[2].explanation.iter().any(|s| s.contains("of m0")));
    // 117 of 118 shingles kept, 3 changed: Jaccard 115 / 121 ≈ 0.95.
    assert!(v[3].factors.redundancy > 0.8, "{:?}", v[3].factors);
    assert_eq!(v[4].factors.redundancy, 0.0);
    // Redundancy lowers the value.
    assert!(v[2].value < v[0].value);
    // A repeated add is ignored.
    engine.add(&chunk(2, Category::ToolResult, "different"), 9, None);
    assert_eq!(engine.len(), 5);
}

#[test]
fn many_similar_chunks_keep_lookups_bounded() {
    let mut engine = ValueEngine::default();
    let prefix = "the build log says that the tool ran with these options and printed item";
    let suffix = "of the batch then it exited with status zero after writing the report";
    for i in 0..3000u32 {
        let text = format!("{prefix} {i} {suffix}");
        engine.add(&chunk(i, Category::ToolResult, &text), i, None);
    }
    let sizes = || engine.bands.iter().flat_map(|b| b.values().map(Vec::len));
    assert!(sizes().all(|n| n <= MAX_BUCKET));
    assert!(sizes().any(|n| n == MAX_BUCKET), "the cap is exercised");
    let v = engine.score(ChunkId(2999), 3000, None, 0.0);
    assert!(v.factors.redundancy > 0.5, "{v:?}");
}

#[test]
fn recency_decays_with_the_half_life() {
    let config = ValueConfig {
        recency_half_life_calls: 10.0,
        recency_half_life_secs: Some(100.0),
        ..ValueConfig::default()
    };
    let mut engine = ValueEngine::new(config);
    engine.add(
        &chunk(0, Category::User, "where is my order"),
        5,
        Some(1000.0),
    );
    let r = |call, secs| engine.score(ChunkId(0), call, secs, 0.0).factors.recency;
    assert_eq!(r(5, None), 1.0);
    assert_eq!(r(0, None), 1.0, "now before the add: no decay");
    assert!((r(15, None) - 0.5).abs() < 1e-6);
    assert!((r(25, None) - 0.25).abs() < 1e-6);
    assert!((r(5, Some(1100.0)) - 0.5).abs() < 1e-6);
    assert!((r(15, Some(1100.0)) - 0.25).abs() < 1e-6, "product of both");
    let e = engine.score(ChunkId(0), 15, Some(1100.0), 0.0).explanation;
    assert!(
        e[0].contains("10 calls ago") && e[0].contains(", 100 s ago"),
        "{e:?}"
    );
    // Half-life 0 disables decay.
    engine.set_config(ValueConfig {
        recency_half_life_calls: 0.0,
        ..ValueConfig::default()
    });
    assert_eq!(
        engine.score(ChunkId(0), 500, None, 0.0).factors.recency,
        1.0
    );
}

#[test]
fn labels_and_pins() {
    let mut engine = ValueEngine::default();
    for i in 0..3 {
        engine.add(
            &chunk(i, Category::Assistant, &format!("answer number {i}")),
            i,
            None,
        );
    }
    let before = engine.score(ChunkId(0), 3, None, 0.5);
    assert_eq!(before.factors.pinned, 0.0);
    engine.set_label(ChunkId(0), Some(Label::Useless));
    engine.set_label(ChunkId(1), Some(Label::Important));
    engine.pin(ChunkId(2), true);
    let useless = engine.score(ChunkId(0), 3, None, 0.5);
    assert_eq!(useless.value, 0.0);
    assert_eq!(useless.value_per_token, 0.0);
    assert_eq!(useless.factors, before.factors);
    assert!(useless.explanation.iter().any(|s| s.contains("useless")));
    let important = engine.score(ChunkId(1), 3, None, 0.5);
    assert_eq!(important.factors.pinned, 1.0);
    assert!(important.value > before.value);
    assert_eq!(engine.score(ChunkId(2), 3, None, 0.5).factors.pinned, 1.0);
    engine.pin(ChunkId(2), false);
    engine.set_label(ChunkId(0), None);
    assert_eq!(engine.score(ChunkId(2), 3, None, 0.5).factors.pinned, 0.0);
    assert_eq!(engine.score(ChunkId(0), 3, None, 0.5), before);
    // Unknown chunks are harmless.
    engine.pin(ChunkId(99), true);
    engine.record_use(ChunkId(99));
    assert_eq!(engine.score(ChunkId(99), 3, None, 1.0).value, 0.0);
}

#[test]
fn popularity_density_cost_and_relevance() {
    let mut engine = ValueEngine::default();
    let mut slow = chunk(
        0,
        Category::ToolResult,
        "Order 4412: shipped via DHL, tracking JD0142, arriving Friday",
    );
    slow.meta.latency_ms = Some(4000.0);
    engine.add(&slow, 0, None);
    engine.add(&chunk(1, Category::User, "thanks"), 1, None);
    engine.add(
        &chunk(2, Category::ToolResult, &"error error error ".repeat(50)),
        2,
        None,
    );
    engine.add(&chunk(3, Category::User, "Where is order 4412?"), 3, None);
    for _ in 0..3 {
        engine.record_use(ChunkId(0));
    }
    let ids = [ChunkId(0), ChunkId(1), ChunkId(2), ChunkId(3)];
    let v = engine.score_all(&ids, 4, None, Some("where is my order 4412"));
    assert!((v[0].factors.popularity - (1.0 - (-1.5f32).exp())).abs() < 1e-6);
    assert!(v[0]
        .explanation
        .iter()
        .any(|s| s == "used by 3 later steps: popularity 0.78"));
    assert_eq!(v[1].factors.popularity, 0.0);
    // Repetitive output is not dense.
    assert!(v[2].factors.density < 0.2, "{:?}", v[2]);
    assert!(v[0].factors.density > 0.5, "{:?}", v[0]);
    // A slow tool result costs more to regenerate than a greeting.
    assert!(v[0].factors.generation_cost > 0.4);
    assert!(v[1].factors.generation_cost < 0.15);
    assert!(v[0].explanation.iter().any(|s| s.contains("took 4.0 s")));
    // Relevance: normalized by the best candidate.
    let best = v.iter().map(|x| x.factors.relevance).fold(0.0, f32::max);
    assert_eq!(best, 1.0);
    assert_eq!(v[1].factors.relevance, 0.0);
    assert_eq!(v[2].factors.relevance, 0.0);
    assert!(v[0].factors.relevance > 0.0);
    assert!(engine.relevance("zebra", &ids).iter().all(|&r| r == 0.0));
    assert!(engine.relevance("order", &[]).is_empty());
    // Value per token.
    assert_eq!(v[1].tokens, 2); // "thanks": 6 chars, estimated
    assert!((v[1].value_per_token - v[1].value / 2.0).abs() < 1e-7);
}

#[test]
fn presets_parse_and_config_round_trips() {
    for name in ValueConfig::PRESETS {
        let config = ValueConfig::preset(name).expect("listed presets exist");
        let json = serde_json::to_string(&config).expect("serializes");
        let back: ValueConfig = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, config, "{name}");
    }
    assert_eq!(ValueConfig::preset("default"), Some(ValueConfig::default()));
    assert_eq!(ValueConfig::preset("nope"), None);
    let partial: ValueConfig = serde_json::from_str(
        r#"{"weights": {"relevance": 3}, "category_weights": {"tool_result": 0.9},
            "recency_half_life_secs": 60}"#,
    )
    .expect("a partial config parses");
    assert_eq!(partial.weights.relevance, 3.0);
    assert_eq!(partial.weights.recency, Weights::default().recency);
    assert_eq!(partial.category_weight(Category::ToolResult), 0.9);
    assert_eq!(partial.category_weight(Category::System), 1.0);
    assert_eq!(partial.recency_half_life_secs, Some(60.0));
    assert_eq!(partial.recency_half_life_calls, 20.0);
    assert!(serde_json::from_str::<ValueConfig>(r#"{"wieghts": {}}"#).is_err());
    let label: Label = serde_json::from_str("\"useless\"").expect("label");
    assert_eq!(label, Label::Useless);
}

#[test]
fn score_trace_scores_every_chunk() {
    use crate::builder::{Message, TraceBuilder};
    let mut b = TraceBuilder::new("t", "test");
    b.push_message(Message::text("system", "You help with orders."), None);
    b.push_message(Message::text("user", "Where is order 4412?"), None);
    b.push_message(Message::text("assistant", "Let me check order 4412."), None);
    b.push_message(Message::text("user", "Also, hello."), None);
    b.push_message(Message::text("assistant", "Hello!"), None);
    b.reconstruct_calls();
    let (trace, _) = b.finish();
    let uses = [0, 2, 1];
    let v = score_trace(&trace, &ValueConfig::default(), &uses, 2, None);
    assert_eq!(v.len(), trace.chunks.len());
    assert!(v.iter().zip(&trace.chunks).all(|(v, c)| v.chunk == c.id));
    assert_eq!(v[1].factors.relevance, 1.0, "the task matches itself");
    assert!(v[1].factors.popularity > v[2].factors.popularity);
    assert_eq!(
        v[4].factors.recency, 1.0,
        "the last reply is not yet in a call"
    );
    assert!(v[0].factors.recency < 1.0);
    assert_eq!(
        v,
        score_trace(&trace, &ValueConfig::default(), &uses, 2, None)
    );
}

#[test]
fn deterministic() {
    let run = || {
        let mut rng = Lcg(42);
        let mut engine = ValueEngine::new(ValueConfig::preset("coding-agent").expect("p"));
        let mut ids = Vec::new();
        for i in 0..200 {
            let c = chunk(
                i,
                Category::ALL[(i % 9) as usize],
                &random_text(&mut rng, 30),
            );
            engine.add(&c, i / 3, Some(f64::from(i) * 10.0));
            if rng.below(2) == 0 {
                engine.record_use(ChunkId(rng.below(u64::from(i) + 1) as u32));
            }
            ids.push(c.id);
        }
        engine.score_all(&ids, 70, Some(2500.0), Some("cargo test failed"))
    };
    assert_eq!(run(), run());
}

fn synthetic_samples(n: usize, seed: u64) -> Vec<(Factors, Label)> {
    let mut rng = Lcg(seed);
    (0..n)
        .map(|_| {
            let f = Factors {
                recency: rng.unit(),
                popularity: rng.unit(),
                density: rng.unit(),
                redundancy: rng.unit(),
                category: rng.unit(),
                relevance: rng.unit(),
                generation_cost: rng.unit(),
                pinned: 0.0,
            };
            let label = if f.relevance > 0.6 {
                Label::Important
            } else {
                Label::Useless
            };
            (f, label)
        })
        .collect()
}

#[test]
fn fit_recovers_the_factor_behind_the_labels() {
    let samples = synthetic_samples(400, 3);
    let report = fit_weights(&samples, &ValueConfig::default());
    let w = report.weights.to_array();
    for (i, name) in Factors::NAMES.iter().enumerate().take(FIT_FEATURES) {
        if *name != "relevance" {
            assert!(w[5] > 3.0 * w[i], "{name}: {:?}", report.weights);
        }
        assert!(w[i] >= 0.0);
    }
    assert_eq!(report.weights.pinned, Weights::default().pinned);
    assert!(report.precision > 0.9, "{report:?}");
    assert!(report.recall > 0.9, "{report:?}");
    assert!(report.accuracy > 0.9, "{report:?}");
    assert!(report.auc > 0.95, "{report:?}");
    assert_eq!(report.samples, 400);
    // Deterministic.
    assert_eq!(report, fit_weights(&samples, &ValueConfig::default()));
    // The fitted weights agree better than the defaults.
    let before = agreement(&samples, &ValueConfig::default());
    assert!(before.auc < report.auc);
    let fitted = ValueConfig {
        weights: report.weights.clone(),
        ..ValueConfig::default()
    };
    assert!(agreement(&samples, &fitted).accuracy > 0.9);
}

#[test]
fn agreement_of_exact_weights_and_degenerate_inputs() {
    let samples = synthetic_samples(200, 9);
    let only_relevance = ValueConfig {
        weights: Weights::from_array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]),
        ..ValueConfig::default()
    };
    let r = agreement(&samples, &only_relevance);
    assert_eq!(
        (r.precision, r.recall, r.accuracy, r.auc),
        (1.0, 1.0, 1.0, 1.0)
    );
    let empty = fit_weights(&[], &ValueConfig::default());
    assert_eq!(empty.samples, 0);
    assert_eq!(empty.weights, Weights::default());
    let one_class: Vec<_> = samples
        .iter()
        .map(|(f, _)| (*f, Label::Important))
        .collect();
    let r = fit_weights(&one_class, &ValueConfig::default());
    assert_eq!(r.weights, Weights::default());
    assert_eq!(r.auc, 0.5);
}
