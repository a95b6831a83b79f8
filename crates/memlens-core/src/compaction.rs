//! Compaction fidelity: what a compaction's summary still carries of the chunks it replaced, and
//! which later calls needed something it dropped.
//!
//! Items are the distinctive tokens the reference detector reads ([`distinctive_tokens`]), sorted
//! into identifiers, file paths, URLs and numbers, plus the shell commands of replaced tool calls
//! (a `command` / `cmd` argument). An item is *kept* when the summary holds it (the same
//! normalized key, or the key inside the summary's lowercase text; a command: its whitespace-
//! normalized text in the summary's). A *miss caused by the compaction* is an evidence group of a
//! later call (see [`AccessGraph::missed`]) whose content was in a replaced chunk and is in nothing
//! that call carried.
//!
//! ```
//! use memlens_core::builder::{CompactionInfo, Message, TraceBuilder};
//! use memlens_core::compaction::compaction_reports;
//! use memlens_core::model::Category;
//! use memlens_core::references::detect;
//!
//! let mut b = TraceBuilder::new("demo", "example");
//! b.push_message(Message::text("user", "Fix the bug in src/engine/policy.rs, ticket MEM-4821."), None);
//! b.push_message(Message::text("assistant", "Looking at src/engine/policy.rs now."), None);
//! b.push_compaction(CompactionInfo::default());
//! let mut summary = Message::text("user", "Summary: the user wants a bug fixed in src/engine/policy.rs.");
//! summary.category = Some(Category::Summary);
//! b.push_message(summary, None);
//! b.push_message(Message::text("assistant", "Fixed; closing MEM-4821."), None);
//! b.reconstruct_calls();
//! let (trace, _) = b.finish();
//!
//! let report = &compaction_reports(&trace, &detect(&trace))[0];
//! assert_eq!((report.paths.replaced, report.paths.kept), (1, 1));
//! assert_eq!((report.identifiers.replaced, report.identifiers.kept), (1, 0)); // MEM-4821 lost
//! assert_eq!(report.later_miss_count, 1); // ... and the last call used it
//! ```

use crate::model::{Category, ChunkId, Trace};
use crate::references::{distinctive_tokens, is_path_token, AccessGraph, Evidence, EvidenceKind};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashSet};

/// How many kept / lost items and misses a report lists in full (all are counted).
pub const MAX_LISTED: usize = 100;

/// What kind of item a compaction may keep or lose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// A code-like name or id (`HAT136`, `user_id`, `parseConfig`, an email).
    Identifier,
    /// A file path (`src/main.rs`, `/etc/hosts`).
    Path,
    /// A shell command the agent ran (a replaced tool call's `command` argument).
    Command,
    /// A number with 3+ significant digits, a date or a clock time.
    Number,
    /// A URL.
    Url,
}

/// One item of the replaced chunks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// What kind.
    pub kind: ItemKind,
    /// As first written in the replaced chunks.
    pub text: String,
}

/// How many distinct items of a kind the replaced chunks held, and how many the summary kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ItemTally {
    /// Distinct items in the replaced chunks.
    pub replaced: u32,
    /// Of those, the ones the summary still carries.
    pub kept: u32,
}

impl ItemTally {
    /// `kept / replaced`; `None` when nothing of the kind was replaced.
    pub fn share(&self) -> Option<f64> {
        (self.replaced > 0).then(|| f64::from(self.kept) / f64::from(self.replaced))
    }
}

/// A later call used something only a replaced chunk held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionMiss {
    /// The call whose output used it.
    pub call: u32,
    /// What it used.
    pub evidence: Evidence,
    /// The replaced chunks that held it (keys).
    pub chunks: Vec<String>,
}

/// One compaction and its fidelity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionReport {
    /// Position in [`Trace::compactions`].
    pub index: usize,
    /// The first call after it.
    pub first_call: u32,
    /// What started it.
    pub trigger: Option<String>,
    /// When.
    pub timestamp: Option<String>,
    /// Context tokens before / after, as the source reported them.
    pub reported_tokens_before: Option<u64>,
    /// See `reported_tokens_before`.
    pub reported_tokens_after: Option<u64>,
    /// How many chunks it replaced, and their tokens (counted).
    pub replaced_chunks: usize,
    /// See `replaced_chunks`.
    pub replaced_tokens: u64,
    /// The summary chunk's key and tokens; `None` when the source recorded no summary.
    pub summary_key: Option<String>,
    /// See `summary_key`.
    pub summary_tokens: u32,
    /// Identifiers kept of those replaced.
    pub identifiers: ItemTally,
    /// File paths kept.
    pub paths: ItemTally,
    /// Commands kept.
    pub commands: ItemTally,
    /// Numbers kept.
    pub numbers: ItemTally,
    /// URLs kept.
    pub urls: ItemTally,
    /// Items the summary kept (at most [`MAX_LISTED`]).
    pub kept: Vec<Item>,
    /// Items it lost (at most [`MAX_LISTED`]).
    pub lost: Vec<Item>,
    /// Later calls' uses of lost content (at most [`MAX_LISTED`]).
    pub later_misses: Vec<CompactionMiss>,
    /// All such uses.
    pub later_miss_count: usize,
    /// Distinct calls with at least one such use.
    pub calls_with_misses: usize,
}

impl CompactionReport {
    /// The tally of one kind.
    pub fn tally(&self, kind: ItemKind) -> ItemTally {
        match kind {
            ItemKind::Identifier => self.identifiers,
            ItemKind::Path => self.paths,
            ItemKind::Command => self.commands,
            ItemKind::Number => self.numbers,
            ItemKind::Url => self.urls,
        }
    }

    fn tally_mut(&mut self, kind: ItemKind) -> &mut ItemTally {
        match kind {
            ItemKind::Identifier => &mut self.identifiers,
            ItemKind::Path => &mut self.paths,
            ItemKind::Command => &mut self.commands,
            ItemKind::Number => &mut self.numbers,
            ItemKind::Url => &mut self.urls,
        }
    }
}

/// Every compaction of a counted trace with its fidelity; `graph` is the trace's access graph
/// ([`crate::references::detect`]).
pub fn compaction_reports(trace: &Trace, graph: &AccessGraph) -> Vec<CompactionReport> {
    trace
        .compactions
        .iter()
        .enumerate()
        .map(|(index, _)| report(trace, graph, index))
        .collect()
}

fn report(trace: &Trace, graph: &AccessGraph, index: usize) -> CompactionReport {
    let compaction = &trace.compactions[index];
    let summary = compaction.summary.map(|id| trace.chunk(id));
    let mut out = fidelity(
        trace,
        &compaction.replaced,
        summary.map(|c| c.content.as_str()),
    );
    out.index = index;
    out.first_call = compaction.first_call;
    out.trigger.clone_from(&compaction.trigger);
    out.timestamp.clone_from(&compaction.timestamp);
    out.reported_tokens_before = compaction.reported_tokens_before;
    out.reported_tokens_after = compaction.reported_tokens_after;
    out.summary_key = summary.map(|c| c.key.clone());
    out.summary_tokens = summary.map_or(0, |c| c.tokens);
    let replaced: HashSet<ChunkId> = compaction.replaced.iter().copied().collect();
    for call in trace.calls.iter().skip(compaction.first_call as usize) {
        let carried: HashSet<ChunkId> = call.input.iter().copied().collect();
        later_misses(trace, graph, &replaced, call.index, &carried, &mut out);
    }
    out
}

/// A summary a policy made in a replay (not one the trace recorded), as a compaction report:
/// what its text kept of the chunks it `covers`, and the later calls of the replay (`carried`:
/// call index and the chunks the policy sent there, from the summary's call on) that used
/// something only those chunks held. `index` numbers the replay's summaries.
pub fn simulated_report<'c>(
    trace: &Trace,
    graph: &AccessGraph,
    summary: SimulatedSummary<'_>,
    carried: impl IntoIterator<Item = (u32, &'c HashSet<ChunkId>)>,
) -> CompactionReport {
    let mut out = fidelity(trace, summary.covers, Some(summary.text));
    out.index = summary.index;
    out.first_call = summary.call;
    out.trigger = Some("policy".into());
    out.summary_tokens = summary.tokens;
    let replaced: HashSet<ChunkId> = summary.covers.iter().copied().collect();
    for (call, sent) in carried {
        later_misses(trace, graph, &replaced, call, sent, &mut out);
    }
    out
}

/// A summary made by a policy in a replay: see [`simulated_report`].
#[derive(Debug, Clone, Copy)]
pub struct SimulatedSummary<'a> {
    /// Its number among the replay's summaries.
    pub index: usize,
    /// The first call that sent it.
    pub call: u32,
    /// The chunks it stands for.
    pub covers: &'a [ChunkId],
    /// Its text.
    pub text: &'a str,
    /// Its tokens.
    pub tokens: u32,
}

/// What a summary's text kept of the items of the chunks it replaced; the report's other fields
/// are left for the caller.
fn fidelity(trace: &Trace, replaced: &[ChunkId], summary: Option<&str>) -> CompactionReport {
    let mut out = CompactionReport {
        index: 0,
        first_call: 0,
        trigger: None,
        timestamp: None,
        reported_tokens_before: None,
        reported_tokens_after: None,
        replaced_chunks: replaced.len(),
        replaced_tokens: replaced
            .iter()
            .map(|&id| u64::from(trace.chunk(id).tokens))
            .sum(),
        summary_key: None,
        summary_tokens: 0,
        identifiers: ItemTally::default(),
        paths: ItemTally::default(),
        commands: ItemTally::default(),
        numbers: ItemTally::default(),
        urls: ItemTally::default(),
        kept: Vec::new(),
        lost: Vec::new(),
        later_misses: Vec::new(),
        later_miss_count: 0,
        calls_with_misses: 0,
    };
    let summary_text = summary.map_or(String::new(), str::to_lowercase);
    let summary_keys: HashSet<String> = summary.map_or_else(HashSet::new, |text| {
        distinctive_tokens(text)
            .into_iter()
            .map(|(_, key, _)| key)
            .collect()
    });
    // A path the summary names by its tail (`src/shop/cart.py` for `/home/dev/shop/src/shop/cart.py`,
    // `checkout.py:42`) still lets the agent find the file: kept.
    let summary_paths: Vec<&str> = summary_keys
        .iter()
        .filter(|k| is_path_token(k) && (k.contains('/') || k.contains('.')))
        .map(String::as_str)
        .collect();
    let summary_words = normalize_command(&summary_text);
    let mut seen: BTreeSet<(ItemKind, String)> = BTreeSet::new();
    for &id in replaced {
        let chunk = trace.chunk(id);
        for (kind, key, text) in items(&chunk.content, chunk.category) {
            if !seen.insert((kind, key.clone())) {
                continue;
            }
            let kept = if kind == ItemKind::Command {
                summary_words.contains(&key)
            } else if kind == ItemKind::Path {
                summary_text.contains(&key)
                    || summary_paths.iter().any(|tail| is_path_tail(&key, tail))
            } else {
                summary_keys.contains(&key) || summary_text.contains(&key)
            };
            let tally = out.tally_mut(kind);
            tally.replaced += 1;
            tally.kept += u32::from(kept);
            let list = if kept { &mut out.kept } else { &mut out.lost };
            if list.len() < MAX_LISTED {
                list.push(Item { kind, text });
            }
        }
    }
    out
}

/// Whether `tail` is `path` or its end after a `/`.
fn is_path_tail(path: &str, tail: &str) -> bool {
    path.strip_suffix(tail)
        .is_some_and(|head| head.is_empty() || head.ends_with('/'))
}

/// The items of one replaced chunk as `(kind, key, text)`.
fn items(content: &str, category: Category) -> Vec<(ItemKind, String, String)> {
    let mut out: Vec<(ItemKind, String, String)> = distinctive_tokens(content)
        .into_iter()
        .map(|(kind, key, text)| {
            let kind = match kind {
                EvidenceKind::Number => ItemKind::Number,
                _ if key.starts_with("http://") || key.starts_with("https://") => ItemKind::Url,
                _ if is_path_token(&text) => ItemKind::Path,
                _ => ItemKind::Identifier,
            };
            (kind, key, text)
        })
        .collect();
    if category == Category::ToolCall {
        if let Some(command) = command_of(content) {
            out.push((ItemKind::Command, normalize_command(&command), command));
        }
    }
    out
}

/// The shell command of a tool call's arguments (`{"command": "..."}`, `{"cmd": [...]}`).
fn command_of(arguments: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let command = value.get("command").or_else(|| value.get("cmd"))?;
    let text = match command {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(serde_json::Value::as_str)
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    };
    let text = text.trim();
    // A multi-line script is known by its first line.
    let first = text.lines().next().unwrap_or_default().trim();
    (!first.is_empty()).then(|| first.to_string())
}

fn normalize_command(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// One later call's evidence groups that only replaced chunks could have answered (`carried`:
/// what the call was sent).
fn later_misses(
    trace: &Trace,
    graph: &AccessGraph,
    replaced: &HashSet<ChunkId>,
    call: u32,
    carried: &HashSet<ChunkId>,
    out: &mut CompactionReport,
) {
    if replaced.is_empty() {
        return;
    }
    let mut any = false;
    for group in graph.missed(call, |id| carried.contains(&id)) {
        let held: Vec<String> = group
            .chunks
            .iter()
            .filter(|id| replaced.contains(id))
            .map(|&id| trace.chunk(id).key.clone())
            .collect();
        if held.is_empty() {
            continue;
        }
        any = true;
        out.later_miss_count += 1;
        if out.later_misses.len() < MAX_LISTED {
            out.later_misses.push(CompactionMiss {
                call,
                evidence: group.evidence.clone(),
                chunks: held,
            });
        }
    }
    out.calls_with_misses += usize::from(any);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{CompactionInfo, Message, Part, TraceBuilder};
    use crate::references::detect;

    fn bash(id: &str, command: &str) -> Message {
        let mut m = Message::text("assistant", "");
        m.parts = vec![Part::ToolCall {
            id: id.into(),
            name: "Bash".into(),
            arguments: serde_json::json!({ "command": command }).to_string(),
        }];
        m
    }

    fn result(id: &str, text: &str) -> Message {
        let mut m = Message::text("tool", "");
        m.parts = vec![Part::ToolResult {
            id: id.into(),
            name: None,
            content: text.into(),
        }];
        m
    }

    fn summary(text: &str) -> Message {
        let mut m = Message::text("user", text);
        m.category = Some(Category::Summary);
        m
    }

    #[test]
    fn tallies_kept_and_lost_items_by_kind() {
        let mut b = TraceBuilder::new("t", "test");
        b.push_message(Message::text("system", "You are a coding agent."), None);
        b.push_message(
            Message::text(
                "user",
                "Tests fail in crates/core/src/lib.rs, see https://ci.example.com/run/88123",
            ),
            None,
        );
        b.push_message(bash("c1", "cargo test -p core\necho done"), None);
        b.push_message(
            result("c1", "error at line 4521: expected parse_config"),
            None,
        );
        b.push_message(
            Message::text("assistant", "The failure is in parse_config."),
            None,
        );
        b.push_compaction(CompactionInfo {
            trigger: Some("auto".into()),
            reported_tokens_before: Some(150_000),
            ..CompactionInfo::default()
        });
        b.push_message(
            summary("We ran `cargo test -p core`; parse_config fails in crates/core/src/lib.rs."),
            None,
        );
        b.push_message(Message::text("user", "Continue."), None);
        b.push_message(
            Message::text("assistant", "Looking at line 4521 of the CI run 88123."),
            None,
        );
        b.reconstruct_calls();
        let (trace, _) = b.finish();
        assert_eq!(trace.compactions.len(), 1);
        let c = &trace.compactions[0];
        assert_eq!(c.first_call, 2);
        // Everything but the system prompt was replaced; the summary is the summary message.
        assert_eq!(c.replaced.len(), 4);
        assert!(!trace.calls[2].input.contains(&c.replaced[0]));
        assert_eq!(
            trace.chunk(c.summary.expect("summary")).category,
            Category::Summary
        );

        let r = &compaction_reports(&trace, &detect(&trace))[0];
        assert_eq!(
            r.paths,
            ItemTally {
                replaced: 1,
                kept: 1
            }
        );
        assert_eq!(
            r.commands,
            ItemTally {
                replaced: 1,
                kept: 1
            }
        );
        assert_eq!(
            r.urls,
            ItemTally {
                replaced: 1,
                kept: 0
            }
        );
        assert_eq!(r.numbers.kept, 0);
        assert!(r.numbers.replaced >= 1);
        assert!(r.identifiers.kept >= 1, "parse_config kept: {r:?}");
        assert!(r.lost.iter().any(|i| i.text.contains("4521")));
        // The last call used 4521, which only a replaced chunk held.
        assert!(r.later_miss_count >= 1);
        assert_eq!(r.calls_with_misses, 1);
        assert!(r.later_misses.iter().all(|m| m.call == 2));
        assert_eq!(r.reported_tokens_before, Some(150_000));
    }

    #[test]
    fn a_path_named_by_its_tail_is_kept() {
        assert!(is_path_tail(
            "/home/dev/shop/src/shop/cart.py",
            "src/shop/cart.py"
        ));
        assert!(is_path_tail("src/shop/checkout.py:42", "checkout.py:42"));
        assert!(is_path_tail("src/a.py", "src/a.py"));
        assert!(!is_path_tail("src/shop/mycart.py", "cart.py"));
        assert!(!is_path_tail("src/shop/cart.py", "src/shop"));
    }

    #[test]
    fn no_summary_means_everything_lost() {
        let mut b = TraceBuilder::new("t", "test");
        b.push_message(Message::text("user", "Order 99812 is late."), None);
        b.push_message(Message::text("assistant", "Checking 99812."), None);
        b.push_compaction(CompactionInfo::default());
        b.push_message(Message::text("user", "And?"), None);
        b.push_message(Message::text("assistant", "Done."), None);
        b.reconstruct_calls();
        let (trace, _) = b.finish();
        let r = &compaction_reports(&trace, &detect(&trace))[0];
        assert_eq!(r.summary_key, None);
        assert_eq!(
            r.numbers,
            ItemTally {
                replaced: 1,
                kept: 0
            }
        );
        assert_eq!(r.numbers.share(), Some(0.0));
        assert_eq!(r.urls.share(), None);
    }

    #[test]
    fn request_log_compaction_resolves_against_the_next_call() {
        let mut b = TraceBuilder::new("t", "test");
        let sys = b.intern_message(&Message::text("system", "Be brief."), 0);
        let u1 = b.intern_message(&Message::text("user", "Read config.toml"), 0);
        let a1 = b.intern_message(&Message::text("assistant", "It sets port 8080."), 0);
        let mut input = sys.clone();
        input.extend(&u1);
        b.push_call(input, a1.clone(), Default::default());
        b.push_compaction(CompactionInfo::default());
        let s = b.intern_message(&summary("The config sets port 8080."), 0);
        let mut input = sys.clone();
        input.extend(&s);
        b.push_call(input, vec![], Default::default());
        let (trace, _) = b.finish();
        let c = &trace.compactions[0];
        assert_eq!(c.first_call, 1);
        assert_eq!(c.replaced, [u1[0], a1[0]]);
        assert_eq!(c.summary, Some(s[0]));
    }
}
