//! The archive: offloaded units are indexed by MemLens recall as they arrive, and each call
//! the ones most relevant to the query come back within the reserve.

use super::decision::Decision;
use super::state::{State, Status};
use crate::model::Category;
use crate::recall::{RecallIndex, RecallParams};
use std::collections::HashMap;

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
        let mut candidates: Vec<(f32, usize)> = scores
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .filter_map(|(doc, s)| Some((s, self.position(self.doc_chunk[doc])?)))
            .filter(|(_, i)| self.items[*i].status == Status::Archived)
            .collect();
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        // Archived units and their members, found once.
        let mut archived: HashMap<u32, Vec<usize>> = HashMap::new();
        for (j, it) in self.items.iter().enumerate() {
            if it.status == Status::Archived {
                archived.entry(it.unit).or_default().push(j);
            }
        }
        let mut total = self.active_tokens();
        let mut taken: Vec<(usize, u64, u32)> = Vec::new(); // (first member, tokens, unit)
        for (_, i) in candidates {
            if taken.len() >= offload.top_k {
                break;
            }
            let unit = self.items[i].unit;
            if taken.iter().any(|t| t.2 == unit) {
                continue;
            }
            let Some(members) = archived.get(&unit) else {
                continue;
            };
            let tokens: u64 = members
                .iter()
                .map(|&j| u64::from(self.items[j].tokens))
                .sum();
            if total + tokens > u64::from(self.options.budget) {
                continue;
            }
            total += tokens;
            taken.push((
                members.iter().copied().min().unwrap_or(usize::MAX),
                tokens,
                unit,
            ));
        }
        // The context must still start on a user message: in position order, a retrieved unit
        // that would come first without being a user turn brings the user turn before it (the
        // question it answered) when that fits, and is given up otherwise.
        taken.sort_unstable();
        let mut first = (0..self.items.len())
            .find(|&i| self.active(i) && self.items[i].chunk.category != Category::System)
            .unwrap_or(usize::MAX);
        let mut chosen: Vec<u32> = Vec::new();
        for (start, tokens, unit) in taken {
            if start < first && self.items[start].chunk.category != Category::User {
                let lead = (0..start).rev().find(|&j| {
                    self.items[j].status == Status::Archived
                        && self.items[j].chunk.category == Category::User
                });
                let lead_unit = lead
                    .map(|j| self.items[j].unit)
                    .filter(|u| !chosen.contains(u));
                let lead_tokens: u64 = lead_unit.and_then(|u| archived.get(&u)).map_or(0, |m| {
                    m.iter().map(|&j| u64::from(self.items[j].tokens)).sum()
                });
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
            if let Some(members) = archived.get(&unit) {
                d.retrieved
                    .extend(members.iter().map(|&j| self.items[j].chunk.id));
            }
        }
    }
}
