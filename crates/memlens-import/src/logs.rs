//! Request/response logs: every record is one call that lists its whole input. Records are grouped
//! into traces (by an explicit session id, else by history continuity) and each trace interns its
//! messages so that history resent on every call is one chunk per message.

use crate::error::Location;
use crate::Context;
use memlens_core::builder::{CallInfo, Message, TraceBuilder};
use memlens_core::Trace;

/// One logged call, in normalized form.
pub struct LoggedCall {
    /// Explicit session/trace id, when the record has one.
    pub group: Option<String>,
    /// The request's messages, in order.
    pub input: Vec<Message>,
    /// The response's message(s).
    pub output: Vec<Message>,
    /// Model, usage, times.
    pub info: CallInfo,
    /// Where the record is.
    pub location: Location,
}

struct Group {
    key: Option<String>,
    builder: TraceBuilder,
    /// Identity hashes of the last call's input followed by its output.
    history: Vec<u64>,
    first: Location,
}

/// Turns logged calls into traces named `{prefix}{n}` (or by their explicit group id).
pub fn build_traces(calls: Vec<LoggedCall>, format: &str, cx: &mut Context<'_>) -> Vec<Trace> {
    let mut groups: Vec<Group> = Vec::new();
    for call in calls {
        let hashes: Vec<u64> = call.input.iter().map(Message::identity_hash).collect();
        let found = match &call.group {
            Some(key) => groups.iter().position(|g| g.key.as_ref() == Some(key)),
            // Continuity: the newest group whose last history is a prefix of this input.
            None => groups.iter().rposition(|g| {
                g.key.is_none() && !g.history.is_empty() && hashes.starts_with(&g.history)
            }),
        };
        let index = match found {
            Some(i) => i,
            None => {
                let id = call
                    .group
                    .clone()
                    .unwrap_or_else(|| format!("{format}-{}", groups.len()));
                groups.push(Group {
                    key: call.group.clone(),
                    builder: TraceBuilder::new(id, format),
                    history: Vec::new(),
                    first: call.location,
                });
                groups.len() - 1
            }
        };
        let group = &mut groups[index];
        let input = group.builder.intern_messages(&call.input);
        let mut output = Vec::new();
        let mut seen_output = std::collections::HashMap::new();
        for message in &call.output {
            // The response becomes a new occurrence: the next request will resend it.
            let hash = message.identity_hash();
            let already_in_input = hashes.iter().filter(|h| **h == hash).count();
            let n = seen_output.entry(hash).or_insert(already_in_input);
            output.extend(group.builder.intern_message(message, *n));
            *n += 1;
        }
        group.history = hashes;
        group
            .history
            .extend(call.output.iter().map(Message::identity_hash));
        group.builder.push_call(input, output, call.info);
    }
    groups
        .into_iter()
        .map(|g| cx.finish(g.builder, g.first))
        .collect()
}
