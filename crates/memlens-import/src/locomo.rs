//! LoCoMo-style long conversations: a list of `{sample_id, conversation, qa}` where `conversation`
//! has `speaker_a`, `speaker_b`, `session_N` turn lists (`{speaker, dia_id, text, blip_caption?}`)
//! and `session_N_date_time`. One trace per conversation; every turn is a chunk keyed by its
//! dialogue id with its session date. `speaker_a` is taken as the user and `speaker_b` as the
//! agent, so each of `speaker_b`'s turns is a call whose input is everything said before it.
//! Questions become probes (question, answer, evidence ids, category).

use crate::document::Document;
use crate::error::{ImportError, Location};
use crate::json::{array_at, scalar_text, str_at};
use crate::{Context, Importer};
use memlens_core::builder::{Message, TraceBuilder};
use memlens_core::{ChunkMeta, Probe, Trace};
use serde_json::Value;

/// The LoCoMo importer.
pub struct Locomo;

fn is_record(v: &Value) -> bool {
    v.get("conversation").is_some_and(Value::is_object)
        && (v.get("qa").is_some() || v.get("sample_id").is_some())
}

impl Importer for Locomo {
    fn name(&self) -> &'static str {
        "locomo"
    }

    fn description(&self) -> &'static str {
        "LoCoMo conversations: sessions of dialogue turns, with questions kept as probes"
    }

    fn sniff(&self, first: &Value) -> bool {
        is_record(first)
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let mut traces = Vec::new();
        for item in doc.into_records() {
            let Some((location, record)) = cx.accept(item) else {
                continue;
            };
            match conversation(&record, location, cx, traces.len()) {
                Some(t) => traces.push(t),
                None => cx.warn(
                    location,
                    "skipped: expected an object with a \"conversation\" object",
                ),
            }
        }
        Ok(traces)
    }
}

fn conversation(
    record: &Value,
    location: Location,
    cx: &mut Context<'_>,
    n: usize,
) -> Option<Trace> {
    let conv = record.get("conversation").filter(|c| c.is_object())?;
    let id = record
        .get("sample_id")
        .and_then(scalar_text)
        .unwrap_or_else(|| format!("conversation-{n}"));
    let speaker_b = str_at(conv, "speaker_b");
    let mut b = TraceBuilder::new(id, "locomo");
    // Sessions in numeric order: `session_10` comes after `session_9`.
    let mut sessions: Vec<(u32, &Vec<Value>)> = conv
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("session_")?.parse::<u32>().ok()?;
            Some((n, v.as_array()?))
        })
        .collect();
    sessions.sort_by_key(|(n, _)| *n);
    for (session, turns) in sessions {
        let date = str_at(conv, &format!("session_{session}_date_time")).map(str::to_string);
        for (i, turn) in turns.iter().enumerate() {
            let Some(text) = str_at(turn, "text") else {
                cx.warn(
                    location,
                    format!("session {session} turn {i} skipped: no \"text\" string"),
                );
                continue;
            };
            let speaker = str_at(turn, "speaker").map(str::to_string);
            let mut content = text.to_string();
            if let Some(caption) = str_at(turn, "blip_caption") {
                content.push_str(&format!(" [shares a photo: {caption}]"));
            }
            let role = if speaker.is_some() && speaker.as_deref() == speaker_b {
                "assistant"
            } else {
                "user"
            };
            let mut message = Message::text(role, content);
            message.name = speaker;
            message.meta = ChunkMeta {
                dia_id: str_at(turn, "dia_id").map(str::to_string),
                session_date: date.clone(),
                timestamp: date.clone(),
                ..ChunkMeta::default()
            };
            b.push_message(message, None);
        }
    }
    b.reconstruct_calls();
    for (i, qa) in array_at(record, "qa").into_iter().flatten().enumerate() {
        let Some(question) = str_at(qa, "question") else {
            cx.warn(
                location,
                format!("question {i} skipped: no \"question\" string"),
            );
            continue;
        };
        let evidence = array_at(qa, "evidence")
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            // A few evidence entries list several ids in one string ("D8:6; D9:17", "D9:1 D4:4").
            .flat_map(|s| s.split([';', ',']).flat_map(str::split_whitespace))
            .map(str::to_string)
            .collect();
        b.push_probe(Probe {
            question: question.to_string(),
            answer: qa
                .get("answer")
                .or_else(|| qa.get("adversarial_answer"))
                .and_then(scalar_text),
            evidence,
            evidence_chunks: Vec::new(),
            category: qa
                .get("category")
                .and_then(crate::json::as_u64)
                .map(|c| c as u32),
        });
    }
    Some(cx.finish(b, location))
}
