//! The archive: offloaded units are indexed by MemLens recall as they arrive, and each call
//! the ones most relevant to the query come back within the reserve.

use super::decision::Decision;
use super::state::{State, Status};
use crate::model::Category;
use crate::recall::{RecallIndex, RecallParams};

impl State {
    /// Switches the archive's index to the light analysis (no word vectors, light stemmer) and
    /// re-adds what it held. Conversations keep the full analysis (vectors and Snowball stems:
    /// +.03 on LoCoMo's evidence for the `recall` policy); once a trace carries tool calls the
    /// light one is used, since on tau-bench the full one raised the `recall` policy's misses at
    /// 4,000 from 84 to 99 (docs/recall.md). Happens once, at the first tool call or result.
    pub(crate) fn use_light_recall(&mut self) {
        let mut light = RecallIndex::light();
        for id in &self.doc_chunk {
            match self.position(*id).map(|i| &self.items[i].chunk) {
                Some(c) => light.add(
                    &c.content,
                    c.meta.speaker.as_deref(),
                    c.meta.session_date.as_deref(),
                    c.tokens,
                ),
                // Compacted away (dropped for good): an empty entry keeps the numbering.
                None => light.add("", None, None, 0),
            };
        }
        self.recall = light;
    }

    pub(crate) fn retrieve(&mut self, query: &str, d: &mut Decision) {
        let Some(offload) = self.config.offload.clone() else {
            return;
        };
        if query.is_empty() {
            return;
        }
        // Chunk-level scores for the archive: in agent traces a chunk's neighbours are often a
        // different kind of item (a tool call beside its result), so the passage smoothing that
        // helps conversations is left off; the session prior stands in for it. Which analysis
        // the index uses: see `use_light_recall`.
        let params = RecallParams {
            window: 0.0,
            session_weight: 0.3,
            ..RecallParams::default()
        };
        let scores = self.recall.scores(query, &params);
        let mut total = self.active_tokens();
        // What fits now: a document whose own item is larger can never be taken (the room only
        // shrinks below). Once the context is full that is most of what the query matched.
        let room = u64::from(self.options.budget).saturating_sub(total);
        let candidates = self.candidates(&scores, room);
        if candidates.is_empty() || offload.top_k == 0 {
            return;
        }
        let mut candidates = candidates.into_iter();
        let archived = self.archived_pairs();
        let mut taken: Vec<(usize, u64, u32)> = Vec::new(); // (first member, tokens, unit)
        while taken.len() < offload.top_k {
            let Some(Candidate { doc, .. }) = candidates.next() else {
                break;
            };
            // Past what is left without finding its item: the usual case once a few are taken.
            let own = self
                .doc_tokens
                .get(doc as usize)
                .copied()
                .unwrap_or(u32::MAX);
            if total + u64::from(own) > u64::from(self.options.budget) {
                continue;
            }
            let Some(i) = self.position(self.doc_chunk[doc as usize]) else {
                continue;
            };
            if self.items[i].status != Status::Archived {
                continue;
            }
            let unit = self.items[i].unit;
            if taken.iter().any(|t| t.2 == unit) {
                continue;
            }
            let members = members(&archived, unit);
            let tokens = self.tokens_of(members);
            if total + tokens > u64::from(self.options.budget) {
                continue;
            }
            total += tokens;
            // `members` holds item `i`, so it is not empty.
            taken.push((members[0].1, tokens, unit));
        }
        // The context must still start on a user message: in position order, a retrieved unit
        // that would come first without being a user turn brings the user turn before it (the
        // question it answered) when that fits, and is given up otherwise.
        taken.sort_unstable();
        let mut first = (0..self.items.len())
            .find(|&i| self.active(i) && self.items[i].category != Category::System)
            .unwrap_or(usize::MAX);
        let mut chosen: Vec<u32> = Vec::new();
        for (start, tokens, unit) in taken {
            if start < first && self.items[start].category != Category::User {
                let lead = (0..start).rev().find(|&j| {
                    self.items[j].status == Status::Archived
                        && self.items[j].category == Category::User
                });
                let lead_unit = lead
                    .map(|j| self.items[j].unit)
                    .filter(|u| !chosen.contains(u));
                let lead_tokens = lead_unit.map_or(0, |u| self.tokens_of(members(&archived, u)));
                match (lead, lead_unit) {
                    (Some(j), Some(u)) if total + lead_tokens <= u64::from(self.options.budget) => {
                        total += lead_tokens;
                        chosen.push(u);
                        first = j;
                    }
                    _ => {
                        total -= tokens;
                        continue;
                    }
                }
            }
            first = first.min(start);
            chosen.push(unit);
        }
        chosen.sort_unstable();
        chosen.dedup();
        for unit in chosen {
            d.retrieved.extend(
                members(&archived, unit)
                    .iter()
                    .map(|&(_, j)| self.items[j].id),
            );
        }
    }

    /// The documents the query matched (`scores`, by document) whose own item fits in `room`,
    /// best first; ties: the earlier item first (documents are numbered in the order their items
    /// arrived, so the document order is the item order).
    fn candidates(&self, scores: &[f32], room: u64) -> Vec<Candidate> {
        let mut candidates: Vec<Candidate> = scores
            .iter()
            .enumerate()
            .filter(|&(doc, s)| {
                *s > 0.0
                    && self
                        .doc_tokens
                        .get(doc)
                        .is_some_and(|&t| u64::from(t) <= room)
            })
            .map(|(doc, &score)| Candidate {
                score,
                doc: doc as u32,
            })
            .collect();
        // The keys are distinct (one per document), so an unstable sort gives the one order.
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        candidates
    }

    /// `(unit, item)` for every archived item, sorted: each unit's archived items are one run,
    /// in item order ([`members`] finds it).
    fn archived_pairs(&self) -> Vec<(u32, usize)> {
        let mut pairs: Vec<(u32, usize)> = self
            .items
            .iter()
            .enumerate()
            .filter(|(_, it)| it.status == Status::Archived)
            .map(|(i, it)| (it.unit, i))
            .collect();
        // Unit ids follow their first item, so the pairs are nearly sorted already.
        pairs.sort_unstable();
        pairs
    }

    fn tokens_of(&self, members: &[(u32, usize)]) -> u64 {
        members
            .iter()
            .map(|&(_, j)| u64::from(self.items[j].tokens))
            .sum()
    }
}

/// The archived items of `unit`, from [`State::archived_pairs`] (empty when it has none).
fn members(pairs: &[(u32, usize)], unit: u32) -> &[(u32, usize)] {
    let start = pairs.partition_point(|p| p.0 < unit);
    let end = start + pairs[start..].partition_point(|p| p.0 == unit);
    &pairs[start..end]
}

/// A document the query matched, ordered best first: higher score, then the earlier document.
#[derive(PartialEq)]
struct Candidate {
    score: f32,
    doc: u32,
}

impl Eq for Candidate {}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Greater is better: the higher score, and among equals the lower document.
        self.score
            .total_cmp(&other.score)
            .then(other.doc.cmp(&self.doc))
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Category;
    use crate::policy::strategy::testing::{builtin, engine, Script};
    use crate::policy::PolicyConfig;

    /// Retrieval passes over an archived document by the tokens kept beside it: they must be its
    /// item's tokens now, after compression too (no built-in policy both compresses and archives,
    /// so the data sets' replays do not check it).
    #[test]
    fn archive_documents_know_their_items_tokens_after_compression() {
        let policy = PolicyConfig {
            name: "offload-compress".into(),
            compress: builtin("value-compress").compress,
            ..builtin("value-offload")
        };
        let mut engine = engine(policy, 1_500);
        let mut script = Script::default();
        script.msg("sys", Category::System, 50);
        for k in 0..12 {
            let (call, result) = (format!("c{k}"), format!("r{k}"));
            let fields: Vec<String> = (0..20)
                .map(|f| format!("    \"field_{f}\":   \"order {k} value {f}\""))
                .collect();
            script
                .msg(&format!("u{k}"), Category::User, 20)
                .content(&format!("Where is order {k}?"))
                .call(&call, "lookup", 30, true)
                .result(&result, &call, "lookup", 400)
                .content(&format!("{{\n{}\n}}", fields.join(",\n")));
        }
        let mut compressed = 0;
        let mut archived = 0;
        for (n, c) in script.chunks.iter().enumerate() {
            engine.add(c);
            if c.category != Category::ToolResult {
                continue;
            }
            let query = format!("order {}", n % 5);
            engine.context(Some(&query));
            let state = &engine.state;
            for it in &state.items {
                assert_eq!(
                    state.doc_tokens[it.seq as usize], it.tokens,
                    "document of {}",
                    it.chunk.key
                );
            }
            compressed += state
                .items
                .iter()
                .filter(|it| it.compressed.is_some())
                .count();
            archived += state
                .items
                .iter()
                .filter(|it| it.status == super::Status::Archived)
                .count();
        }
        // The case the test is for happened: items compressed, and an archive to search.
        assert!(
            compressed > 0 && archived > 0,
            "{compressed} compressed, {archived} archived"
        );
    }
}
