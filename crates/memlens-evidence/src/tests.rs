//! The benchmark's own tests: evidence ids, the questions scored, the budget kept, BM25's
//! analyzers.

use super::*;
use crate::conversation::verbatim;
use memlens_core::builder::{Message, TraceBuilder};
use memlens_core::{ChunkMeta, Probe};

fn conversation(turns: &[(&str, &str)], probes: Vec<Probe>) -> Trace {
    let mut b = TraceBuilder::new("t", "locomo");
    for (i, (who, text)) in turns.iter().enumerate() {
        let mut m = Message::text("user", *text);
        m.name = Some(who.to_string());
        m.meta = ChunkMeta {
            dia_id: Some(format!("D1:{}", i + 1)),
            ..ChunkMeta::default()
        };
        b.push_message(m, None);
    }
    for p in probes {
        b.push_probe(p);
    }
    b.finish().0
}

fn probe(q: &str, evidence: &[&str], category: u32) -> Probe {
    Probe {
        question: q.into(),
        answer: None,
        evidence: evidence.iter().map(|s| s.to_string()).collect(),
        evidence_chunks: Vec::new(),
        category: Some(category),
    }
}

const TURNS: [(&str, &str); 5] = [
    ("Ann", "I adopted a cat named Pixel."),
    ("Bo", "Wonderful news about the kitten!"),
    ("Ann", "We went to Lisbon in May."),
    ("Bo", "Lisbon is lovely in spring."),
    ("Ann", "Work has been busy lately."),
];

#[test]
fn evidence_splits_on_whitespace_and_skips_unknown_ids() {
    let t = conversation(&TURNS, vec![probe("q", &["D1:1 D1:3", "D1:9;D1:4"], 1)]);
    let conv = Conversation::new(&t);
    assert_eq!(conv.evidence(&t.probes[0]), vec![0, 2, 3]);
}

#[test]
fn only_resolvable_category_1_to_4_questions_are_scored() {
    let t = conversation(
        &TURNS,
        vec![
            probe("a", &["D1:1"], 1),
            probe("b", &["D1:1"], 5),
            probe("c", &[], 2),
            probe("d", &["D30:05"], 3),
        ],
    );
    let traces = [t];
    let bench = Benchmark::new(&traces);
    assert_eq!(bench.questions().len(), 1);
    assert_eq!(bench.questions()[0].text, "a");
}

#[test]
fn builders_respect_the_budget_and_the_oracle_finds_everything_that_fits() {
    let t = conversation(
        &TURNS,
        vec![
            probe("What is the name of Ann's cat?", &["D1:1"], 4),
            probe("When did they go to Lisbon?", &["D1:3", "D1:4"], 2),
        ],
    );
    let traces = [t];
    let bench = Benchmark::new(&traces);
    let conv = &bench.conversations()[0];
    let all: u32 = conv.tokens.iter().sum();
    let mut builders: Vec<Box<dyn ContextBuilder>> = vec![
        Box::new(Recency),
        Box::new(Bm25::new()),
        Box::new(Bm25::adjacent()),
        Box::new(Bm25::new().with_analyzer(Analyzer::Terms)),
        Box::new(Oracle),
    ];
    for budget in 0..=all + 1 {
        for b in builders.iter_mut() {
            for q in bench.questions() {
                let ctx = bench.context(b.as_mut(), q, budget);
                assert!(
                    conv.context_tokens(&ctx) <= u64::from(budget),
                    "{}",
                    b.name()
                );
            }
        }
    }
    let rows = run(&traces, &mut builders, &[all]);
    assert!(rows
        .iter()
        .all(|r| r.all_evidence == 1.0 || r.policy.starts_with("bm25")));
    let oracle = rows
        .iter()
        .find(|r| r.policy == "oracle")
        .expect("oracle row");
    assert_eq!(oracle.by_category["2"].questions, 1);
    assert_eq!(oracle.by_category["1"].questions, 0);
}

#[test]
fn bm25_adjacent_brings_the_neighbours() {
    let t = conversation(&TURNS, vec![]);
    let conv = Conversation::new(&t);
    let mut ctx = Bm25::adjacent().build(&conv, "Pixel", 1000);
    ctx.sort_unstable();
    assert_eq!(ctx, vec![0, 1]);
    assert_eq!(Bm25::new().build(&conv, "Pixel", 1000), vec![0]);
    // Stop words count with the word analyzer, not with MemLens' terms.
    assert!(!Bm25::new().build(&conv, "the", 1000).is_empty());
    let mut terms = Bm25::new().with_analyzer(Analyzer::Terms);
    assert!(terms.build(&conv, "the", 1000).is_empty());
    assert_eq!(terms.name(), "bm25-terms");
}

#[test]
fn verbatim_words_survive_the_analyzer() {
    let v = verbatim("The Flights were booked!");
    assert_eq!(
        memlens_core::text::terms(&v),
        vec!["the_", "flights_", "were_", "booked_"]
    );
    let v = verbatim("The 航班已预订");
    assert_eq!(
        memlens_core::text::terms(&v),
        vec!["the_", "航班", "班已", "已预", "预订"]
    );
}
