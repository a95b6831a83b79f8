//! Which lines are the conversation: the `parentUuid` chain from the last line, completed with
//! the parallel tool batches the single-parent walk misses.
//!
//! Claude Code streams one line per content block of a response, each block's parent the line
//! written before it, and hangs each tool result off the line of its own tool call
//! (`sourceToolAssistantUUID`). With parallel tool calls the file is a tree: e.g. three `Agent`
//! blocks `a1 → a2 → a3`, their results `r2` (parent `a2`), `r3` (parent `a3`), `r1` (parent
//! `a1`) in the order the agents finished, and the next response hung off `r1`, the last line
//! written. The walk back from the end passes `r1, a1` only. Claude Code's own loader puts the
//! rest back (`recoverOrphanedParallelToolResults`): the response's other block lines and the
//! tool results hung off any of them, right after the response's last line on the chain. So
//! does [`with_parallel_batches`]; the API received them as one assistant message and one user
//! message of results.

use super::lines::{Content, Line};
use crate::error::Location;
use crate::Context;
use std::collections::{HashMap, HashSet};

/// Lines of one subagent.
pub(super) struct Sidechain {
    pub(super) agent_id: Option<String>,
    pub(super) members: Vec<usize>,
}

/// Splits the lines into the main session's and each subagent's (by `agentId`; without one, by
/// the root of the sidechain's chain), in file order.
pub(super) fn partition(lines: &[Line]) -> (Vec<usize>, Vec<Sidechain>) {
    let index = key_index(lines, 0..lines.len());
    let mut main = Vec::new();
    let mut groups: Vec<Sidechain> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut roots: HashMap<usize, usize> = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.sidechain {
            main.push(i);
            continue;
        }
        let key = match &line.agent_id {
            Some(agent) => format!("agent {agent}"),
            None => {
                // Parents come first in the file: their root is known.
                let root = match line.parent.as_deref().and_then(|p| index.get(p)) {
                    Some(&p) if lines[p].sidechain => roots.get(&p).copied().unwrap_or(p),
                    _ => i,
                };
                roots.insert(i, root);
                format!("root {}", lines[root].key)
            }
        };
        let n = *by_key.entry(key).or_insert_with(|| {
            groups.push(Sidechain {
                agent_id: line.agent_id.clone(),
                members: Vec::new(),
            });
            groups.len() - 1
        });
        groups[n].members.push(i);
    }
    (main, groups)
}

/// Line index by key (the first line with a key wins: resumed sessions repeat lines).
fn key_index(lines: &[Line], members: impl IntoIterator<Item = usize>) -> HashMap<&str, usize> {
    let mut index = HashMap::new();
    for i in members {
        index.entry(lines[i].key.as_str()).or_insert(i);
    }
    index
}

/// The session id of the main lines (else of any line).
pub(super) fn session_id(lines: &[Line], main: &[usize]) -> String {
    main.iter()
        .rev()
        .map(|&i| &lines[i])
        .chain(lines.iter())
        .find_map(|l| l.origin.session_id.clone())
        .unwrap_or_else(|| super::FORMAT.to_string())
}

/// The conversation of a group of lines, in order.
pub(super) struct Chain {
    pub(super) lines: Vec<usize>,
    /// User and assistant lines left on abandoned branches.
    pub(super) abandoned: usize,
    /// Lines repeating the uuid of a line read (a resumed session's copies).
    pub(super) repeated: usize,
}

pub(super) fn conversation_chain(lines: &[Line], members: &[usize], cx: &mut Context<'_>) -> Chain {
    let index = key_index(lines, members.iter().copied());
    let Some(&leaf) = members
        .iter()
        .rev()
        .find(|&&i| lines[i].is_conversation())
        .or(members.last())
    else {
        return Chain {
            lines: Vec::new(),
            abandoned: 0,
            repeated: 0,
        };
    };
    let chain = walk_back(lines, &index, leaf, cx);
    let (chain, copies) = with_parallel_batches(lines, members, chain);
    let on_chain: HashSet<usize> = chain.iter().copied().collect();
    let keys: HashSet<&str> = chain.iter().map(|&i| lines[i].key.as_str()).collect();
    let (mut abandoned, mut repeated) = (0, 0);
    for &i in members.iter().filter(|i| !on_chain.contains(i)) {
        if keys.contains(lines[i].key.as_str()) || copies.contains(&i) {
            repeated += 1;
        } else if matches!(lines[i].content, Content::User(_) | Content::Assistant(_)) {
            abandoned += 1;
        }
    }
    let at = lines[leaf].location;
    report(cx, at, abandoned, repeated);
    Chain {
        lines: chain,
        abandoned,
        repeated,
    }
}

fn report(cx: &mut Context<'_>, at: Location, abandoned: usize, repeated: usize) {
    if abandoned > 0 {
        cx.warn(
            at,
            format!(
                "{abandoned} user/assistant line(s) on abandoned branches (edited or retried \
                 messages) are not part of the conversation: left out"
            ),
        );
    }
    if repeated > 0 {
        cx.warn(
            at,
            format!(
                "{repeated} line(s) repeat the uuid of an earlier line (a resumed session's \
                 copies): read once"
            ),
        );
    }
}

/// The chain from `leaf` back to its root, in file order.
fn walk_back(
    lines: &[Line],
    index: &HashMap<&str, usize>,
    leaf: usize,
    cx: &mut Context<'_>,
) -> Vec<usize> {
    let mut chain = Vec::new();
    let mut seen = HashSet::new();
    let mut at = Some(leaf);
    while let Some(i) = at {
        if !seen.insert(i) {
            cx.warn(lines[i].location, "the parentUuid chain loops here: cut");
            break;
        }
        chain.push(i);
        at = lines[i].parent.as_deref().and_then(|p| {
            let found = index.get(p).copied();
            if found.is_none() && !lines.iter().any(|l| l.key == p) {
                cx.warn(
                    lines[i].location,
                    format!("the conversation starts here: its parent {p:?} is not in this file"),
                );
            }
            found
        });
    }
    chain.reverse();
    chain
}

/// A parallel batch's lines off the chain, found by the response they belong to.
struct Batches<'a> {
    /// Assistant lines by response id (in file order).
    blocks: HashMap<&'a str, Vec<usize>>,
    /// User lines carrying tool results, by the key of their parent line.
    results: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Batches<'a> {
    fn new(lines: &'a [Line], members: &[usize]) -> Batches<'a> {
        let mut blocks: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut results: HashMap<&str, Vec<usize>> = HashMap::new();
        for &i in members {
            match &lines[i].content {
                Content::Assistant(a) => {
                    if let Some(response) = a.response.as_deref() {
                        blocks.entry(response).or_default().push(i);
                    }
                }
                Content::User(u) if u.result_ids().next().is_some() => {
                    if let Some(parent) = lines[i].parent.as_deref() {
                        results.entry(parent).or_default().push(i);
                    }
                }
                _ => {}
            }
        }
        Batches { blocks, results }
    }
}

/// Adds the lines of every response on the chain that the walk missed (its other block lines,
/// and the tool results hung off any of its lines), right after the response's last line on the
/// chain: see the module docs. Copies of a line read (same uuid, or the same blocks of the same
/// response, or results already given) are not added again: they are returned apart.
fn with_parallel_batches(
    lines: &[Line],
    members: &[usize],
    chain: Vec<usize>,
) -> (Vec<usize>, HashSet<usize>) {
    let batches = Batches::new(lines, members);
    let mut taken: HashSet<&str> = chain.iter().map(|&i| lines[i].key.as_str()).collect();
    let mut answered: HashSet<&str> = HashSet::new();
    let mut blocks_seen: HashSet<(Option<&str>, u64)> = HashSet::new();
    for &i in &chain {
        match &lines[i].content {
            Content::User(u) => answered.extend(u.result_ids()),
            Content::Assistant(a) => {
                blocks_seen.insert((a.response.as_deref(), a.fingerprint));
            }
            _ => {}
        }
    }
    // Insertions after a chain position.
    let mut inserts: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut copies = HashSet::new();
    let mut done: HashSet<&str> = HashSet::new();
    for (pos, &i) in chain.iter().enumerate() {
        let Content::Assistant(a) = &lines[i].content else {
            continue;
        };
        let group: Vec<usize> = match a.response.as_deref() {
            Some(r) if !done.insert(r) => continue,
            Some(r) => batches.blocks.get(r).cloned().unwrap_or_else(|| vec![i]),
            None => vec![i],
        };
        let anchor = chain.iter().rposition(|j| group.contains(j)).unwrap_or(pos);
        let mut blocks = Vec::new();
        for &j in &group {
            let Content::Assistant(b) = &lines[j].content else {
                continue;
            };
            if !taken.insert(lines[j].key.as_str()) {
                continue; // on the chain, or a line with its uuid
            }
            if blocks_seen.insert((b.response.as_deref(), b.fingerprint)) {
                blocks.push(j);
            } else {
                copies.insert(j);
            }
        }
        let mut results = Vec::new();
        for j in group.iter().flat_map(|&j| {
            let key = lines[j].key.as_str();
            batches.results.get(key).into_iter().flatten().copied()
        }) {
            let Content::User(u) = &lines[j].content else {
                continue;
            };
            if !taken.insert(lines[j].key.as_str()) {
                continue;
            }
            if u.result_ids().any(|id| !answered.contains(id)) {
                answered.extend(u.result_ids());
                results.push(j);
            } else {
                copies.insert(j);
            }
        }
        // In the order written (timestamps, as Claude Code sorts them; file order on ties).
        let by_time = |&j: &usize| (lines[j].timestamp.clone(), j);
        blocks.sort_by_key(by_time);
        results.sort_by_key(by_time);
        blocks.extend(results);
        if !blocks.is_empty() {
            inserts.entry(anchor).or_default().extend(blocks);
        }
    }
    if inserts.is_empty() {
        return (chain, copies);
    }
    let mut out = Vec::with_capacity(chain.len() + inserts.values().map(Vec::len).sum::<usize>());
    for (pos, &i) in chain.iter().enumerate() {
        out.push(i);
        out.extend(inserts.remove(&pos).unwrap_or_default());
    }
    (out, copies)
}
