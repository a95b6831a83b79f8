//! Chinese text end to end, on a conversation written for MemLens
//! (`tests/fixtures/openai/chinese-travel-planning.json`): a user states a budget and a seafood
//! allergy, a tool-calling assistant searches flights, hotels (twice) and restaurants through
//! many turns of chatter, and its last answer goes back to the allergy and the budget. Checks
//! that the directives are protected, the reference detector links the last answer to them, BM25
//! and recall find them, and the repeated hotel search (the same hotels, a price and a few words
//! of their descriptions changed) is redundant. All of it needs the CJK analysis (runs of Han
//! characters as character bigrams, `memlens_core::text`) and the Chinese directive patterns:
//! each test fails without them.

use crate::{import_path, root};
use memlens_core::builder::{Message, TraceBuilder};
use memlens_core::policy::{Engine, EngineOptions, PolicyConfig};
use memlens_core::recall::{RecallIndex, RecallParams};
use memlens_core::references::{detect, EvidenceKind};
use memlens_core::retrieval::Bm25Index;
use memlens_core::tokens::{count_trace, TokenCounter};
use memlens_core::value::ValueEngine;
use memlens_core::{Chunk, ChunkId, Trace};

fn trace() -> Trace {
    let path = root().join("tests/fixtures/openai/chinese-travel-planning.json");
    let mut t = import_path(&path).expect("imports").traces.remove(0);
    let counter = TokenCounter::for_model(t.main_model());
    count_trace(&mut t, &counter);
    t
}

/// The one chunk whose content starts with `prefix`.
fn starting(t: &Trace, prefix: &str) -> ChunkId {
    let found: Vec<&Chunk> = t
        .chunks
        .iter()
        .filter(|c| c.content.starts_with(prefix))
        .collect();
    assert_eq!(found.len(), 1, "one chunk starts with {prefix:?}");
    found[0].id
}

/// Replays the trace under a policy as the simulator does; the chunks of each call's context.
fn replay(t: &Trace, policy: &str, budget: u32) -> Vec<Vec<ChunkId>> {
    let config = PolicyConfig::builtin(policy).expect("built-in");
    let options = EngineOptions {
        budget,
        input_usd_per_mtok: None,
    };
    let mut engine =
        Engine::new(config, options, TokenCounter::for_model(t.main_model())).expect("engine");
    let mut out = Vec::new();
    for call in &t.calls {
        for &id in &call.input {
            if !engine.contains(id) {
                engine.add(t.chunk(id));
            }
        }
        engine.retain(&call.input);
        out.push(engine.context(None).chunk_ids().collect());
    }
    out
}

#[test]
fn chinese_directives_are_pinned_under_a_small_budget() {
    let t = trace();
    let budget = 400;
    let total: u32 = t.chunks.iter().map(|c| c.tokens).sum();
    assert!(total > 3 * budget, "the budget must bite ({total} tokens)");
    let requirements = starting(&t, "需求是预算不超过5000元");
    let allergy = starting(&t, "请记住我对海鲜过敏");
    let greeting = starting(&t, "你好！");
    let late = starting(&t, "我总是迟到"); // casual: "always" is not a directive here
    let noted = starting(&t, "我记住了"); // casual: "I've noted it" is not "remember"
    let contexts = replay(&t, "value", budget);
    for (call, ctx) in t.calls.iter().zip(&contexts) {
        for directive in [requirements, allergy] {
            if call.input.contains(&directive) {
                assert!(ctx.contains(&directive), "call {}: {ctx:?}", call.index);
            }
        }
    }
    // Older turns were evicted meanwhile, the casual ones among them: they are not pinned.
    let last = contexts.last().expect("calls");
    for casual in [greeting, late, noted] {
        assert!(
            contexts.iter().any(|c| c.contains(&casual)),
            "{casual:?} was sent once"
        );
        assert!(!last.contains(&casual), "{casual:?} is evicted: {last:?}");
    }
}

#[test]
fn chinese_directive_patterns_pin_directives_not_casual_talk() {
    let directives = [
        "需求是两晚以内的酒店。",
        "请记住我不吃辣。",
        "目标是下周五之前订好所有票。",
        "记住，我只坐靠窗的座位。",
        "务必在出发前一天提醒我。",
        "一定要选可以免费取消的房间。",
        "不要忘记我的会员号。",
        "永远不要给我订红眼航班。",
        "总是用人民币报价。",
        "好的。另外，我的要求是早餐要包含在内。",
    ];
    let casual = [
        "我总是迟到，真不好意思。",
        "我记住了，谢谢！",
        "我的目标是明年当上医生。",
        "我一定要去看看那家书店。",
        "他说，总是这样也没办法。",
        "这个需求是谁提的？",
        "我永远不要再去那里了。",
    ];
    let mut b = TraceBuilder::new("directives", "test");
    b.set_model(Some("gpt-4o".into()));
    b.push_message(Message::text("system", "你是一个助手。"), None);
    for text in directives.iter().chain(&casual) {
        b.push_message(Message::text("user", *text), None);
        b.push_message(Message::text("assistant", "好的。"), None);
    }
    for _ in 0..3 {
        b.push_message(Message::text("user", "继续。"), None);
        b.push_message(Message::text("assistant", "好的。"), None);
    }
    b.reconstruct_calls();
    let (mut t, _) = b.finish();
    count_trace(&mut t, &TokenCounter::for_model(Some("gpt-4o")));
    // A budget far below the protected messages: everything else goes.
    let contexts = replay(&t, "value", 50);
    let last: Vec<&str> = contexts
        .last()
        .expect("calls")
        .iter()
        .map(|&id| t.chunk(id).content.as_str())
        .collect();
    for d in directives {
        assert!(last.contains(&d), "directive {d:?} is pinned: {last:?}");
    }
    for c in casual {
        assert!(!last.contains(&c), "casual {c:?} is not pinned: {last:?}");
    }
}

#[test]
fn the_last_answer_is_linked_to_the_allergy_and_the_budget() {
    let t = trace();
    let requirements = starting(&t, "需求是预算不超过5000元");
    let allergy = starting(&t, "请记住我对海鲜过敏");
    let answer = starting(&t, "总结一下");
    let graph = detect(&t);
    let used = |chunk: ChunkId| {
        graph
            .references()
            .iter()
            .find(|r| r.by == answer && r.used == chunk)
            .unwrap_or_else(|| panic!("{answer:?} uses {chunk:?}: {:?}", graph.references()))
    };
    // "您对海鲜过敏" shares four rare bigrams with "我对海鲜过敏".
    let r = used(allergy);
    assert_eq!(r.evidence[0].kind, EvidenceKind::RareTerm, "{r:?}");
    assert!(r.evidence[0].text.contains("海鲜"), "{r:?}");
    // "5000元" is the number 5000, no longer glued to the Han characters around it.
    let r = used(requirements);
    assert_eq!(r.evidence[0].kind, EvidenceKind::Number, "{r:?}");
    assert_eq!(r.evidence[0].text, "5000");
    // A policy that had dropped the allergy turn would miss it.
    let call = t
        .calls
        .iter()
        .find(|c| c.output.contains(&answer))
        .expect("the answer's call");
    let missed = graph.missed(call.index, |c| c != allergy);
    assert!(missed.iter().any(|g| g.chunks == [allergy]), "{missed:?}");
}

#[test]
fn bm25_and_recall_find_the_earlier_turn_for_a_chinese_query() {
    let t = trace();
    let answer = starting(&t, "总结一下");
    let earlier: Vec<&Chunk> = t.chunks.iter().take_while(|c| c.id != answer).collect();
    let best = |scores: Vec<f32>| {
        let (i, s) = scores
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
            .expect("chunks");
        assert!(*s > 0.0);
        earlier[i].id
    };
    let mut bm25 = Bm25Index::new();
    let mut recall = RecallIndex::new();
    let mut light = RecallIndex::light();
    for c in &earlier {
        bm25.add(&c.content);
        recall.add(&c.content, None, None, c.tokens);
        light.add(&c.content, None, None, c.tokens);
    }
    // The parameters of the engine's archive (no passage smoothing: with it a turn also scores
    // by its neighbours, so the ranking is by passage, not by turn).
    let archive = RecallParams {
        window: 0.0,
        session_weight: 0.3,
        ..RecallParams::default()
    };
    for (query, want) in [
        ("我对什么过敏？", "请记住我对海鲜过敏"),
        ("预算不超过多少钱？", "需求是预算不超过5000元"),
        ("订单号是什么", "{\"状态\": \"已确认\""),
    ] {
        let want = starting(&t, want);
        assert_eq!(best(bm25.scores(query)), want, "bm25: {query}");
        assert_eq!(
            best(recall.scores(query, &archive)),
            want,
            "recall: {query}"
        );
        assert_eq!(best(light.scores(query, &archive)), want, "light: {query}");
        // The conversation defaults (passages, neighbours) bring it into a small context.
        let context = recall.query(query, 100, &RecallParams::default());
        assert!(
            context.iter().any(|&i| earlier[i].id == want),
            "recall query: {query}: {context:?}"
        );
    }
}

#[test]
fn the_repeated_hotel_search_is_redundant() {
    let t = trace();
    let results: Vec<&Chunk> = t
        .chunks
        .iter()
        .filter(|c| c.content.starts_with("{\"酒店\""))
        .collect();
    assert_eq!(results.len(), 2);
    let (first, again) = (results[0], results[1]);
    assert_ne!(
        first.content, again.content,
        "a price and a few words differ"
    );
    let mut engine = ValueEngine::default();
    for (i, c) in t.chunks.iter().enumerate() {
        engine.add(c, i as u32, None);
    }
    let now = t.chunks.len() as u32;
    let v = engine.score(again.id, now, None, 0.0);
    // About 0.7 estimated Jaccard of word 3-grams (bigram 3-grams); with a Han run read as one
    // word, each reworded clause is a new word and the two results share less than 0.4.
    assert!(v.factors.redundancy > 0.6, "{v:?}");
    assert!(
        v.explanation
            .iter()
            .any(|s| s.contains("near-duplicate") && s.contains(&first.key)),
        "{v:?}"
    );
    // The repeated search call is an exact repeat of the first; no other chunk is a duplicate.
    let calls: Vec<&Chunk> = t
        .chunks
        .iter()
        .filter(|c| c.meta.tool_name.as_deref() == Some("search_hotels"))
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].content, calls[1].content);
    for c in t
        .chunks
        .iter()
        .filter(|c| c.id != again.id && c.id != calls[1].id)
    {
        let v = engine.score(c.id, now, None, 0.0);
        assert_eq!(v.factors.redundancy, 0.0, "{}: {v:?}", c.key);
    }
}
