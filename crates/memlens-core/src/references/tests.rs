use super::analysis::Analysis;
use super::scan::word;
use super::*;
use crate::builder::{Message, Part, TraceBuilder};
use crate::model::{Category, ChunkId};

fn keys(text: &str) -> Vec<(EvidenceKind, String)> {
    Analysis::of(text)
        .tokens
        .into_iter()
        .map(|t| (t.kind, t.key))
        .collect()
}

fn id(s: &str) -> (EvidenceKind, String) {
    (EvidenceKind::Identifier, s.to_string())
}

fn num(s: &str) -> (EvidenceKind, String) {
    (EvidenceKind::Number, s.to_string())
}

#[test]
fn non_ascii_digit_spans_end_without_tokens() {
    // Found by the pool's random-message property test: these recursed until the stack
    // overflowed (a trap in wasm).
    for w in ["²", "٣٤", "²-³", "x²", "½"] {
        let mut n = 0;
        word(w, None, &mut |_| n += 1);
        assert!(n <= 1, "{w}: {n} tokens");
    }
}

#[test]
fn tokens_are_distinctive_codes_and_numbers() {
    assert_eq!(
        keys("Book HAT136 for mia_li_3668 on 2024-05-20, pay $1,234.50 with certificate_7504069."),
        vec![
            id("hat136"),
            id("mia_li_3668"),
            num("2024-05-20"),
            num("1234.5"),
            id("certificate_7504069"),
        ]
    );
    // Small numbers, ordinals, plain words, abbreviations: nothing.
    assert!(keys("On the 20th at 5pm, 2 bags, 99 dollars, e.g. one-way, U.S.A.").len() == 1);
    assert_eq!(keys("at 5pm"), vec![num("17:00")]);
    assert_eq!(keys("06:00:00 and 6:00 AM and 6am"), vec![num("6:00")]);
    assert_eq!(keys("12:30 PM"), vec![num("12:30")]);
    assert_eq!(
        keys("mail mia.li3818@example.com, see https://x.org/a?b=1. or src/lib.rs"),
        vec![
            id("mia.li3818@example.com"),
            id("mia.li3818"),
            id("https://x.org/a?b=1"),
            id("src/lib.rs"),
        ]
    );
    assert_eq!(
        keys("call parseJson then os.path.join in __init__"),
        vec![id("parsejson"), id("os.path.join"), id("__init__")]
    );
    assert_eq!(
        keys("2024-05-20T10:30:00Z"),
        vec![num("2024-05-20"), num("10:30")]
    );
    assert_eq!(keys("250.0 and 250 and 0.5 and 007"), vec![num("250")]);
}

#[test]
fn clock_suffixes_in_any_case_and_plain_words() {
    // The meridiem is read from the word's last two letters, in any case; words that merely
    // end in "am"/"pm" (or are all letters) are plain words unless camelCase.
    assert_eq!(keys("10:30AM"), vec![num("10:30")]);
    assert_eq!(keys("6PM and 7Pm"), vec![num("18:00"), num("19:00")]);
    assert!(keys("Madam, the program and spam at 3am").len() == 1);
    assert_eq!(keys("an iPhone for the Team"), vec![id("iphone")]);
    assert!(keys("am pm AM PM Tpm xam").is_empty());
}

#[test]
fn contains_evidence_matches_like_the_detector() {
    let e = |kind, text: &str| Evidence {
        kind,
        text: text.into(),
    };
    let result = r#"{"price": 1234.5, "departs": "22:00:00", "id": "hat136"}"#;
    assert!(contains_evidence(
        result,
        &e(EvidenceKind::Number, "1,234.50")
    ));
    assert!(contains_evidence(
        result,
        &e(EvidenceKind::Number, "10:00 PM")
    ));
    assert!(!contains_evidence(
        result,
        &e(EvidenceKind::Number, "10:00")
    ));
    assert!(contains_evidence(
        result,
        &e(EvidenceKind::Identifier, "HAT136")
    ));
    assert!(!contains_evidence(
        result,
        &e(EvidenceKind::Identifier, "HAT137")
    ));
    // A TOON row: `121,239` are two values there, and a thousands-grouped number in prose.
    let row = "[1]{flight,prices{economy,business}}:\n  HAT069,121,239";
    assert!(contains_evidence(row, &e(EvidenceKind::Number, "121")));
    assert!(contains_evidence(row, &e(EvidenceKind::Number, "$239")));
    assert!(!contains_evidence(row, &e(EvidenceKind::Number, "122")));
    let prose = "Note: the quarterly marketing budget review meeting moved to Thursday.";
    let quote = "The quarterly marketing budget review meeting moved";
    assert!(contains_evidence(prose, &e(EvidenceKind::Quote, quote)));
    assert!(!contains_evidence(
        "budget review",
        &e(EvidenceKind::Quote, quote)
    ));
    assert!(contains_evidence(
        "I bought kilns and glazes for pottery",
        &e(EvidenceKind::RareTerm, "glazes kiln pottery")
    ));
    assert!(!contains_evidence("", &e(EvidenceKind::Quote, "")));
}

#[test]
fn json_keys_are_schema_unless_they_hold_data() {
    let a = Analysis::of(
        r#"{"user_id": "mia_li_3668", "payment_methods": {"credit_card_4421486": {"amount": 250}}}"#,
    );
    let k: Vec<String> = a.tokens.into_iter().map(|t| t.key).collect();
    assert_eq!(k, vec!["mia_li_3668", "credit_card_4421486", "250"]);
}

fn tool_call(id: &str, name: &str, args: &str) -> Message {
    let mut m = Message::text("assistant", "");
    m.parts = vec![Part::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }];
    m
}

fn tool_result(id: &str, content: &str) -> Message {
    let mut m = Message::text("tool", "");
    m.parts = vec![Part::ToolResult {
        id: id.into(),
        name: None,
        content: content.into(),
    }];
    m
}

fn build(messages: Vec<Message>) -> Trace {
    let mut b = TraceBuilder::new("t", "test");
    for m in messages {
        b.push_message(m, None);
    }
    b.reconstruct_calls();
    b.finish().0
}

fn incremental(trace: &Trace) -> AccessGraph {
    let mut d = Detector::new();
    let mut all = Vec::new();
    for call in &trace.calls {
        for &i in &call.input {
            d.observe(trace.chunk(i));
        }
        let outs: Vec<&Chunk> = call.output.iter().map(|&i| trace.chunk(i)).collect();
        all.extend(d.outputs(call.index, &outs));
    }
    assert_eq!(all, d.graph().references());
    d.into_graph()
}

#[test]
fn an_identifier_from_a_tool_result_used_in_a_later_tool_call() {
    let t = build(vec![
        Message::text(
            "system",
            "You are an airline agent. Your code is AGENT007X.",
        ),
        Message::text("user", "Hi, I am mia_li_3668. Find me a flight to Seattle."),
        tool_call("c1", "search", r#"{"origin": "JFK", "destination": "SEA"}"#),
        tool_result(
            "c1",
            r#"[{"flight_number": "HAT136", "price": 121}, {"flight_number": "HAT039", "price": 90}]"#,
        ),
        Message::text("assistant", "I found two flights. Shall I book one?"),
        Message::text("user", "Yes, the first one."),
        tool_call(
            "c2",
            "book",
            r#"{"user_id": "mia_li_3668", "flight_number": "HAT136", "agent": "AGENT007X"}"#,
        ),
    ]);
    let g = detect(&t);
    let refs = g.references();
    // Call 0 (search) uses nothing distinctive; call 1 (text) neither; call 2 (book) uses the
    // user turn (mia_li_3668) and the tool result (HAT136); the system prompt's code is ignored.
    let user = t.chunks[1].id;
    let result = t.chunks[3].id;
    let book = t.chunks[6].id;
    assert_eq!(refs.len(), 2, "{refs:#?}");
    assert_eq!((refs[0].call, refs[0].by, refs[0].used), (2, book, user));
    assert_eq!(
        refs[0].evidence,
        vec![Evidence {
            kind: EvidenceKind::Identifier,
            text: "mia_li_3668".into()
        }]
    );
    assert_eq!((refs[1].call, refs[1].by, refs[1].used), (2, book, result));
    assert_eq!(refs[1].evidence[0].text, "HAT136");
    assert_eq!(g.used_at(2), &[user, result]);
    assert!(g.used_at(0).is_empty() && g.used_at(99).is_empty());
    assert_eq!(g.uses_of(result), &[2]);
    assert_eq!(g.use_count(result), 1);
    assert_eq!(g.next_use_after(result, 0), Some(2));
    assert_eq!(g.next_use_after(result, 2), None);
    // Missing the result misses HAT136 only.
    let missed = g.missed(2, |c| c != result);
    assert_eq!(missed.len(), 1);
    assert_eq!(missed[0].evidence.text, "HAT136");
    assert_eq!(missed[0].chunks, vec![result]);
    assert_eq!(g, incremental(&t));
}

#[test]
fn a_greeting_echoed_is_not_a_use() {
    let t = build(vec![
        Message::text("user", "Hello there! How are you doing today?"),
        Message::text("assistant", "Hello there! I am doing well today, thanks."),
        Message::text(
            "user",
            "Thanks! Your support really means a lot to me, friend.",
        ),
        Message::text("assistant", "Your support really means a lot to me too."),
    ]);
    assert!(detect(&t).references().is_empty());
}

#[test]
fn system_prompt_identifiers_and_numbers_are_not_evidence() {
    let t = build(vec![
        Message::text(
            "system",
            "Policy POL_2024_A: refunds above 500 need approval.",
        ),
        Message::text(
            "user",
            "Does POL_2024_A let me get 500 back? My order is 48213.",
        ),
        Message::text(
            "assistant",
            "Under POL_2024_A, 500 needs approval for order 48213.",
        ),
    ]);
    let g = detect(&t);
    assert_eq!(g.references().len(), 1);
    assert_eq!(
        g.references()[0].evidence,
        vec![Evidence {
            kind: EvidenceKind::Number,
            text: "48213".into()
        }]
    );
}

#[test]
fn policy_vocabulary_and_tool_definitions_are_not_evidence() {
    let mut tools = Message::text("tools", "");
    tools.parts = vec![Part::Other {
        kind: "tool_definitions".into(),
        text: r#"[{"name": "book", "parameters": {"cabin": {"enum": ["economy_plus_x"]}}}]"#.into(),
    }];
    tools.unframed = true;
    let t = build(vec![
        Message::text("system", "Trip type is one way or round trip."),
        tools,
        Message::text("user", "Book it."),
        tool_call("c1", "get", r#"{"id": "x"}"#),
        tool_result(
            "c1",
            r#"{"flight_type": "round_trip", "cabin": "economy_plus_x", "code": "QQ12345"}"#,
        ),
        tool_call(
            "c2",
            "book",
            r#"{"flight_type": "round_trip", "cabin": "economy_plus_x", "code": "QQ12345"}"#,
        ),
    ]);
    assert_eq!(t.chunks[1].category, Category::Other);
    let g = detect(&t);
    let evidence: Vec<&str> = g
        .references()
        .iter()
        .flat_map(|r| r.evidence.iter().map(|e| e.text.as_str()))
        .collect();
    assert_eq!(evidence, vec!["QQ12345"]);
    assert!(g.uses_of(t.chunks[1].id).is_empty());
}

#[test]
fn every_copy_is_an_alternative_and_the_recent_ones_are_credited() {
    let mut msgs = vec![Message::text("user", "My booking is ABC123.")];
    for i in 0..4 {
        msgs.push(tool_call(&format!("c{i}"), "get", r#"{"id": "ABC123"}"#));
        msgs.push(tool_result(
            &format!("c{i}"),
            r#"{"id": "ABC123", "ok": true}"#,
        ));
    }
    msgs.push(Message::text("assistant", "Booking ABC123 is confirmed."));
    let t = build(msgs);
    let g = detect(&t);
    let last = t.calls.len() as u32 - 1;
    let groups = g.groups_at(last);
    assert_eq!(groups.len(), 1);
    // The user turn, the 4 tool calls and the 4 results all contain it.
    assert_eq!(groups[0].chunks.len(), 9);
    let credited: Vec<ChunkId> = g
        .references()
        .iter()
        .filter(|r| r.call == last)
        .map(|r| r.used)
        .collect();
    assert_eq!(credited.len(), MAX_REFERENCED);
    // The three most recent chunks.
    let n = t.chunks.len() as u32;
    assert_eq!(
        credited,
        vec![ChunkId(n - 4), ChunkId(n - 3), ChunkId(n - 2)]
    );
    // Keeping only the oldest copy is not a miss.
    assert!(g.missed(last, |c| c == ChunkId(0)).is_empty());
    assert_eq!(g, incremental(&t));
}

#[test]
fn tool_call_ids_and_quotes() {
    let t = build(vec![
        Message::text(
            "user",
            "Please note: the quarterly marketing budget review meeting moved to Thursday afternoon.",
        ),
        tool_call("call_abc123", "lookup", r#"{"q": "x"}"#),
        tool_result("call_abc123", "nothing"),
        Message::text(
            "assistant",
            "Noted: the quarterly marketing budget review meeting moved to Thursday. Result of call_abc123 was empty.",
        ),
    ]);
    let g = detect(&t);
    let kinds: Vec<(u32, EvidenceKind, &str)> = g
        .references()
        .iter()
        .flat_map(|r| {
            r.evidence
                .iter()
                .map(move |e| (r.used.0, e.kind, e.text.as_str()))
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            (
                0,
                EvidenceKind::Quote,
                "the quarterly marketing budget review meeting moved to Thursday"
            ),
            (1, EvidenceKind::ToolCallId, "call_abc123"),
            (2, EvidenceKind::ToolCallId, "call_abc123"),
        ]
    );
    assert_eq!(g, incremental(&t));
}

#[test]
fn outputs_never_link_to_their_own_call() {
    let mut m = Message::text("assistant", "Booking XYZ789 now.");
    m.parts.push(Part::ToolCall {
        id: "c9".into(),
        name: "book".into(),
        arguments: r#"{"id": "XYZ789"}"#.into(),
    });
    let t = build(vec![Message::text("user", "hi"), m]);
    assert!(detect(&t).references().is_empty());
}

#[test]
fn rare_terms_need_three_and_a_history() {
    let with = |reply: &str, history: usize| {
        let mut msgs = Vec::new();
        for i in 0..history {
            msgs.push(Message::text("user", format!("filler message number {i}")));
        }
        msgs.push(Message::text(
            "user",
            "I started a pottery class and bought a kiln and some glazes.",
        ));
        msgs.push(Message::text("assistant", reply));
        detect(&build(msgs))
    };
    let g = with("A kiln and glazes for your pottery? Nice!", 22);
    assert_eq!(g.references().len(), 1);
    assert_eq!(
        g.references()[0].evidence,
        vec![Evidence {
            kind: EvidenceKind::RareTerm,
            text: "glazes kiln pottery".into()
        }]
    );
    // Two shared terms, or too short a history: nothing.
    assert!(with("A kiln for your pottery? Nice!", 22)
        .references()
        .is_empty());
    assert!(with("A kiln and glazes for your pottery? Nice!", 12)
        .references()
        .is_empty());
}

#[test]
fn out_of_order_calls_keep_the_graph_sorted() {
    let t = build(vec![
        Message::text("user", "Order 55512 and order 66613."),
        Message::text("assistant", "Order 55512 noted."),
    ]);
    let user = t.chunk(ChunkId(0));
    let out = t.chunk(ChunkId(1));
    let mut d = Detector::new();
    d.observe(user);
    d.outputs(5, &[out]);
    let mut later = out.clone();
    later.id = ChunkId(7);
    later.content = "And 66613.".into();
    d.outputs(2, &[&later]);
    let calls: Vec<u32> = d.graph().references().iter().map(|r| r.call).collect();
    assert_eq!(calls, vec![2, 5]);
    assert_eq!(d.graph().uses_of(ChunkId(0)), &[2, 5]);
}
