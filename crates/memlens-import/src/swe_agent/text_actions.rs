//! Actions a text-based scaffold parses out of the model's text, and the environment's output
//! it sends back as a user message: made a tool call and its result.
//!
//! SWE-agent without function calling and mini-swe-agent's text format ask the model for one
//! fenced shell block per reply, run it, and send the output back in a `user` message. Left as
//! text, such a run reads as a conversation: no tool pairs, no tool-result rules. The importers
//! say, from the scaffold's own record, which assistant message issued which action and which
//! user message is its output ([`Said`]); [`link`] then splits the action out of the assistant's
//! text as a [`Part::ToolCall`] and turns the output into the matching [`Part::ToolResult`], so
//! the engine's units and the invariants (a call and its result kept or dropped together) apply.
//!
//! Counting stays what the model was sent. The action chunk is marked [`TEXT_ACTION_KIND`], so it
//! carries no tool-call framing (it was text, not a native call); the result keeps the user
//! message's framing (it starts that message). The text is cut where o200k's and cl100k's
//! pre-tokenizers cut anyway ([`neutral_span`]), so the two parts count what the whole did.

use memlens_core::builder::{CallInfo, Message, Part, Role, TraceBuilder};
use memlens_core::model::TEXT_ACTION_KIND;
use memlens_core::{Category, ChunkId};

/// The tool name of a text action: both scaffolds run the block in a shell (SWE-agent's own
/// commands, `open`, `edit`, `submit`, are installed in that shell).
pub(crate) const ACTION_TOOL: &str = "bash";

/// What the scaffold's record says of one message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Said {
    /// An assistant message that issued an action: its id and where the action sits in the
    /// message's text ([`Action`]).
    Action(String, Action),
    /// The environment's output to the action issued by the message just before.
    Observation,
    /// Anything else (the task, a format error, a user's interruption).
    Other,
}

/// Where an action sits: the index of the text part, and the byte range in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Action {
    pub part: usize,
    pub start: usize,
    pub end: usize,
}

/// A message, and what [`link`] made of it.
pub(crate) struct Linked {
    pub message: Message,
    /// An action was split out of its text.
    pub text_action: bool,
    /// It became an action's result.
    pub text_result: bool,
}

impl Linked {
    /// A message left as it is.
    pub(crate) fn plain(message: Message) -> Linked {
        Linked {
            message,
            text_action: false,
            text_result: false,
        }
    }
}

/// A fenced block in a text: the byte range of the whole block and of the command inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Block {
    pub start: usize,
    pub end: usize,
    pub command: (usize, usize),
}

/// The fenced blocks `` ```LANG\s*\n(.*?)\n``` `` of `text`, as Python's `re.findall` with
/// `re.DOTALL` finds them (leftmost first, non-overlapping): mini-swe-agent's `action_regex`.
pub(crate) fn fenced_blocks(text: &str, lang: &str) -> Vec<Block> {
    let open = format!("```{lang}");
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text.get(from..).and_then(|t| t.find(&open)) {
        let start = from + at;
        let after = start + open.len();
        let rest = &text[after..];
        let run = rest.len() - rest.trim_start().len();
        // `\s*\n` takes the whitespace run up to one of its newlines, the last one first (greedy):
        // the lazy command then runs to the first `\n```` after it.
        let close = rest[..run].match_indices('\n').rev().find_map(|(nl, _)| {
            let inner = after + nl + 1;
            text[inner..].find("\n```").map(|c| (inner, inner + c))
        });
        match close {
            Some((inner, close)) => {
                let end = close + "\n```".len();
                found.push(Block {
                    start,
                    end,
                    command: (inner, close),
                });
                from = end;
            }
            // The fence opens no block here; the scan goes on from the next byte (a backtick).
            None => from = start + 1,
        }
    }
    found
}

/// Where `command` sits in `text` as a scaffold wrote it: its last occurrence inside a fence
/// (```` ```lang ````, the command, ```` ``` ````: SWE-agent's and mini-swe-agent's blocks) or
/// `<command>` tags (SWE-agent's XML parser), the whole block; or the whole reply when it is the
/// command alone. `None` otherwise.
pub(crate) fn locate(text: &str, command: &str) -> Option<(usize, usize)> {
    let command = command.trim();
    if command.is_empty() {
        return None;
    }
    for (at, _) in text.rmatch_indices(command) {
        if let Some(span) = enclosing(text, at, at + command.len()) {
            return Some(span);
        }
    }
    // A reply that is the command alone (SWE-agent's `action_only` parser); a command named in
    // prose is not where the action was written.
    (text.trim() == command).then(|| {
        let at = text.len() - text.trim_start().len();
        (at, at + command.len())
    })
}

/// The fence or `<command>` tags right around `text[at..end]`, when both sides are there.
fn enclosing(text: &str, at: usize, end: usize) -> Option<(usize, usize)> {
    let before = &text[..at];
    let opened = before.trim_end();
    let after = &text[end..];
    let closed = after.trim_start();
    let (gap_before, gap_after) = (
        &before[opened.len()..],
        &after[..after.len() - closed.len()],
    );
    if let Some(fence) = opened.rfind("```") {
        let lang = &opened[fence + 3..];
        let is_lang = !lang.contains(|c: char| c.is_whitespace() || c == '`');
        if is_lang
            && gap_before.contains('\n')
            && gap_after.contains('\n')
            && closed.starts_with("```")
        {
            return Some((fence, text.len() - closed.len() + 3));
        }
    }
    if let (Some(open), true) = (
        opened.strip_suffix("<command>"),
        closed.starts_with("</command>"),
    ) {
        return Some((open.len(), text.len() - closed.len() + "</command>".len()));
    }
    None
}

/// `(start, end)` moved to where the pre-tokenizers cut anyway, so the text before, the action
/// and the text after count, together, what the whole text did.
///
/// o200k's and cl100k's patterns take one space before punctuation into the punctuation's piece
/// (`` ?[^\s\p{L}\p{N}]+``) and the newlines after it (`[\r\n]*`): the cut goes before that space
/// and after those newlines. A fence written right after other punctuation (`` (``` ``) or a
/// closing fence followed by punctuation is one piece cut in two: a token or two more, the only
/// case where the parts differ from the whole.
pub(crate) fn neutral_span(text: &str, start: usize, end: usize) -> (usize, usize) {
    let mut start = start;
    if text[..start].ends_with(' ') {
        start -= 1;
    }
    if text[..start].trim().is_empty() {
        // Only whitespace before: one part, not a blank chunk (whitespace is its own piece).
        start = 0;
    }
    let rest = &text[end..];
    let end = if rest.trim().is_empty() {
        text.len()
    } else {
        end + (rest.len() - rest.trim_start_matches(['\r', '\n']).len())
    };
    (start, end)
}

/// Splits the actions out of the assistant messages and turns their outputs into results.
/// `said[i]` is what the record says of `messages[i]`; an observation becomes a result only
/// right after the message that issued its action, and only when it is plain text (one part):
/// anything else stays as it was.
pub(crate) fn link(messages: Vec<Message>, said: &[Said]) -> Vec<Linked> {
    let mut out: Vec<Linked> = Vec::with_capacity(messages.len());
    let mut open: Option<String> = None;
    for (i, message) in messages.into_iter().enumerate() {
        let mut linked = Linked::plain(message);
        match said.get(i) {
            Some(Said::Action(id, at)) if linked.message.role == Some(Role::Assistant) => {
                if let Some(parts) = split(&linked.message.parts, id, *at) {
                    linked.message.parts = parts;
                    linked.text_action = true;
                    open = Some(id.clone());
                    out.push(linked);
                    continue;
                }
            }
            Some(Said::Observation) => {
                if let (Some(id), [Part::Text(text)]) =
                    (open.as_ref(), linked.message.parts.as_slice())
                {
                    linked.message.parts = vec![Part::ToolResult {
                        id: id.clone(),
                        name: Some(ACTION_TOOL.into()),
                        content: text.clone(),
                    }];
                    linked.text_result = true;
                }
            }
            _ => {}
        }
        open = None;
        out.push(linked);
    }
    out
}

/// The parts with the text part `at.part` cut in up to three: the text before the action, the
/// action as a tool call, the text after. `None` when `at` is not a range of a text part.
fn split(parts: &[Part], id: &str, at: Action) -> Option<Vec<Part>> {
    let Some(Part::Text(text)) = parts.get(at.part) else {
        return None;
    };
    if at.start >= at.end || text.get(at.start..at.end).is_none() {
        return None;
    }
    let (start, end) = neutral_span(text, at.start, at.end);
    let mut cut = Vec::with_capacity(3);
    if start > 0 {
        cut.push(Part::Text(text[..start].to_string()));
    }
    cut.push(Part::ToolCall {
        id: id.to_string(),
        name: ACTION_TOOL.into(),
        arguments: text[start..end].to_string(),
    });
    if end < text.len() {
        cut.push(Part::Text(text[end..].to_string()));
    }
    let mut out = parts.to_vec();
    out.splice(at.part..=at.part, cut);
    Some(out)
}

/// Marks the tool-call chunks of a split message as text actions (no tool-call framing).
pub(crate) fn mark(b: &mut TraceBuilder, text_action: bool, ids: &[ChunkId]) {
    if !text_action {
        return;
    }
    for &id in ids {
        if let Some(chunk) = b.chunk_mut(id) {
            if chunk.category == Category::ToolCall {
                chunk.meta.kind = Some(TEXT_ACTION_KIND.into());
            }
        }
    }
}

/// Pushes linked messages of a final message list (`info(i)`: what is known of the call that
/// produced message `i`), marking text actions.
pub(crate) fn push_all(
    b: &mut TraceBuilder,
    linked: Vec<Linked>,
    mut info: impl FnMut(usize) -> Option<CallInfo>,
) {
    for (i, l) in linked.into_iter().enumerate() {
        let ids = b.push_message(l.message, info(i));
        mark(b, l.text_action, &ids);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks<'a>(text: &'a str, lang: &str) -> Vec<&'a str> {
        fenced_blocks(text, lang)
            .into_iter()
            .map(|b| &text[b.command.0..b.command.1])
            .collect()
    }

    #[test]
    fn fenced_blocks_match_python_findall() {
        // re.findall(r"```bash\s*\n(.*?)\n```", text, re.DOTALL) on each text.
        assert_eq!(blocks("T\n\n```bash\ncat a\n```", "bash"), ["cat a"]);
        assert_eq!(blocks("```bash  \n\n ls\n```\nx", "bash"), [" ls"]);
        assert_eq!(
            blocks("```bash\na\n```\n```bash\nb\nc\n```", "bash"),
            ["a", "b\nc"]
        );
        assert_eq!(blocks("```bash\n\n```", "bash"), [""]);
        assert!(blocks("```bash ls\n```", "bash").is_empty());
        assert!(blocks("```bash\nls", "bash").is_empty());
        assert!(blocks("```python\nls\n```", "bash").is_empty());
        assert_eq!(
            blocks("```mswea_bash_command\nls\n```", "mswea_bash_command"),
            ["ls"]
        );
    }

    #[test]
    fn locate_widens_to_the_fence_or_the_tags() {
        let text = "DISCUSSION\nopen it.\n\n```\nopen calc.py\n```";
        let (s, e) = locate(text, "open calc.py\n").expect("found");
        assert_eq!(&text[s..e], "```\nopen calc.py\n```");
        let text = "Look.\n<command>\nls -la\n</command>";
        let (s, e) = locate(text, "ls -la").expect("found");
        assert_eq!(&text[s..e], "<command>\nls -la\n</command>");
        assert_eq!(locate(" ls -la\n", "ls -la"), Some((1, 7)));
        assert_eq!(locate("I will run ls -la now.", "ls -la"), None);
        assert_eq!(locate("nothing", "ls"), None);
        assert_eq!(locate("x", "  "), None);
    }

    #[test]
    fn cuts_keep_the_pretokenizer_pieces() {
        let counter = memlens_core::tokens::TokenCounter::for_model(Some("gpt-4o"));
        for text in [
            "THOUGHT: Look.\n\n```bash\ncat calc.py\n```",
            "Run: ```bash\nls\n```\n\nThen we see.",
            "  ```bash\nls\n```  \n",
            "Indented:\n   ```bash\nls\n```\nDone.",
        ] {
            let block = fenced_blocks(text, "bash")[0];
            let (s, e) = neutral_span(text, block.start, block.end);
            let parts = [&text[..s], &text[s..e], &text[e..]];
            let sum: u32 = parts.iter().map(|p| counter.count(p)).sum();
            assert_eq!(sum, counter.count(text), "{text:?} cut as {parts:?}");
        }
    }

    #[test]
    fn link_pairs_an_action_with_the_next_observation_only() {
        let messages = vec![
            Message::text("assistant", "Look.\n\n```bash\nls\n```"),
            Message::text("user", "<returncode>0</returncode>"),
            Message::text("assistant", "No block here."),
            Message::text("user", "Please always provide EXACTLY ONE action"),
        ];
        let block = fenced_blocks("Look.\n\n```bash\nls\n```", "bash")[0];
        let at = Action {
            part: 0,
            start: block.start,
            end: block.end,
        };
        let said = [
            Said::Action("action-0".into(), at),
            Said::Observation,
            Said::Other,
            Said::Observation,
        ];
        let linked = link(messages, &said);
        assert!(linked[0].text_action);
        assert!(
            matches!(&linked[0].message.parts[1], Part::ToolCall { arguments, .. } if arguments == "```bash\nls\n```")
        );
        assert!(
            matches!(&linked[1].message.parts[0], Part::ToolResult { id, .. } if id == "action-0")
        );
        // An "observation" after a message that issued nothing stays a user message.
        assert!(matches!(&linked[3].message.parts[0], Part::Text(_)));
    }
}
