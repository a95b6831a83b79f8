//! The conversation's lines as a trace: user lines merged while consecutive, the block lines of
//! one API response joined into one call.

use super::chain::Chain;
use super::lines::{AssistantLine, Content, Line, Origin, ReportedUsage};
use super::FORMAT;
use crate::error::source_pos;
use crate::error::Location;
use crate::Context;
use memlens_core::builder::{CallInfo, CompactionInfo, Message, Part, Role, TraceBuilder};
use memlens_core::Trace;
use std::collections::{BTreeMap, HashMap};

/// Why reported input tokens exceed the counted ones.
const UNRECORDED: &str =
    "system prompt and tool definitions (not written to Claude Code session files)";

/// One message of the conversation, or a compaction, in order.
enum Item {
    User(Message),
    Call(Box<PendingCall>),
    Compaction(CompactionInfo),
}

/// An assistant message and the call that produced it, while its block lines come in.
struct PendingCall {
    response: Option<String>,
    message: Message,
    info: CallInfo,
    usage: Option<ReportedUsage>,
}

/// What a trace's attributes report besides its messages.
#[derive(Default)]
struct Tally {
    origin: Origin,
    spawned: BTreeMap<String, String>,
    tool_errors: usize,
    synthetic: usize,
}

/// Turns the chain into messages: user lines merged while consecutive, the block lines of one API
/// response joined into one call (even when tool results were written between them).
fn conversation(lines: &[Line], chain: &[usize], tally: &mut Tally) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::new();
    // The call further lines of the same response join.
    let mut open: Option<usize> = None;
    let mut last_user_time: Option<String> = None;
    let mut tool_names: HashMap<String, String> = HashMap::new();
    for &i in chain {
        let line = &lines[i];
        let origin = &mut tally.origin;
        for (field, value) in [
            (&mut origin.cwd, &line.origin.cwd),
            (&mut origin.version, &line.origin.version),
            (&mut origin.git_branch, &line.origin.git_branch),
        ] {
            if field.is_none() {
                field.clone_from(value);
            }
        }
        match &line.content {
            Content::Structural => {}
            Content::Compaction(info) => {
                open = None;
                items.push(Item::Compaction(info.clone()));
            }
            Content::User(user) => {
                tally.tool_errors += user.tool_errors;
                if let Some((agent, call)) = &user.spawned {
                    tally.spawned.insert(agent.clone(), call.clone());
                }
                let mut message = user.message.clone();
                for part in &mut message.parts {
                    if let Part::ToolResult { id, name, .. } = part {
                        name.clone_from(&tool_names.get(id.as_str()).cloned());
                    }
                }
                last_user_time.clone_from(&line.timestamp);
                match items.last_mut() {
                    Some(Item::User(previous)) if previous.category == message.category => {
                        previous.parts.extend(message.parts);
                    }
                    _ => items.push(Item::User(message)),
                }
            }
            Content::Assistant(a) if a.synthetic => tally.synthetic += 1,
            Content::Assistant(a) => {
                for part in &a.parts {
                    if let Part::ToolCall { id, name, .. } = part {
                        tool_names.insert(id.clone(), name.clone());
                    }
                }
                let joined = match open.and_then(|n| items.get_mut(n)) {
                    Some(Item::Call(call))
                        if call.response.is_some() && call.response == a.response =>
                    {
                        call.message.parts.extend(a.parts.iter().cloned());
                        call.info.ended_at.clone_from(&line.timestamp);
                        if a.usage.is_some() {
                            call.usage = a.usage;
                        }
                        true
                    }
                    _ => false,
                };
                if !joined {
                    open = Some(items.len());
                    items.push(new_call(line, a, last_user_time.take()));
                }
            }
        }
    }
    items
}

fn new_call(line: &Line, a: &AssistantLine, started_at: Option<String>) -> Item {
    let mut message = Message {
        role: Some(Role::Assistant),
        role_name: "assistant".into(),
        parts: a.parts.clone(),
        ..Message::default()
    };
    message.meta.timestamp.clone_from(&line.timestamp);
    message.meta.source = Some(source_pos(line.location));
    Item::Call(Box::new(PendingCall {
        response: a.response.clone(),
        message,
        info: CallInfo {
            model: a.model.clone(),
            // The request went out when the last input line was written.
            started_at,
            ended_at: line.timestamp.clone(),
            source: Some(source_pos(line.location)),
            ..CallInfo::default()
        },
        usage: a.usage,
    }))
}

pub(super) fn build_trace(id: String, lines: &[Line], chain: Chain, cx: &mut Context<'_>) -> Trace {
    let mut b = TraceBuilder::new(id, FORMAT);
    let mut tally = Tally::default();
    let (mut write_5m, mut write_1h): (Option<u64>, Option<u64>) = (None, None);
    for item in conversation(lines, &chain.lines, &mut tally) {
        match item {
            Item::User(message) => {
                b.push_message(message, None);
            }
            Item::Call(call) => {
                let PendingCall {
                    message,
                    mut info,
                    usage,
                    ..
                } = *call;
                if let Some(reported) = usage {
                    info.usage = Some(reported.usage);
                    for (sum, n) in [
                        (&mut write_5m, reported.write_5m),
                        (&mut write_1h, reported.write_1h),
                    ] {
                        if let Some(n) = n {
                            *sum = Some(sum.unwrap_or(0).saturating_add(n));
                        }
                    }
                }
                b.push_message(message, Some(info));
            }
            Item::Compaction(info) => b.push_compaction(info),
        }
    }
    b.reconstruct_calls();
    b.attribute("unrecorded", UNRECORDED);
    let origin = tally.origin;
    for (key, value) in [
        ("cwd", origin.cwd),
        ("version", origin.version),
        ("git_branch", origin.git_branch),
    ] {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            b.attribute(key, value);
        }
    }
    for (agent, call) in tally.spawned {
        b.attribute(&format!("agent_tool_call.{agent}"), call);
    }
    for (key, n) in [
        ("tool_errors", tally.tool_errors),
        ("skipped_synthetic_messages", tally.synthetic),
        ("abandoned_branch_lines", chain.abandoned),
        ("repeated_lines", chain.repeated),
    ] {
        if n > 0 {
            b.attribute(key, n.to_string());
        }
    }
    for (key, n) in [
        ("cache_write_5m_tokens", write_5m),
        ("cache_write_1h_tokens", write_1h),
    ] {
        if let Some(n) = n {
            b.attribute(key, n.to_string());
        }
    }
    let location = chain
        .lines
        .first()
        .map_or_else(Location::default, |&i| lines[i].location);
    cx.finish(b, location)
}
