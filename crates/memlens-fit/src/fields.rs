//! Which JSON fields of each tool's results later steps used: the fit's proposals for
//! `[tools.NAME] drop_fields`.
//!
//! A field of a result is *used* when a call after the first one that carried the result (a
//! tool rule acts from then on) used evidence in it that the result without the field no longer
//! holds, matched as the simulator matches evidence in a compressed chunk
//! ([`contains_evidence`]). A field that later steps of the training traces never read, in
//! enough of its tool's results, is one the fit can propose to drop; the replay decides.

use std::collections::{BTreeMap, HashMap};

use memlens_core::model::{Category, ChunkId};
use memlens_core::policy::compress::compact_json;
use memlens_core::policy::config::JsonCompress;
use memlens_core::references::{contains_evidence, distinctive_tokens, Detector, EvidenceGroup};
use serde::Serialize;
use serde_json::Value;

use crate::Case;

/// JSON fields to drop, by tool name: what goes into `[tools.NAME] drop_fields`.
pub type DropRules = BTreeMap<String, Vec<String>>;

/// One field (object key, at any depth) of one tool's results, over a set of traces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldUse {
    /// The tool.
    pub tool: String,
    /// The field.
    pub field: String,
    /// The tool's results that hold the field.
    pub results: u32,
    /// Of those, the results where a later call used evidence only the field held.
    pub used: u32,
    /// Of those, the results where the field holds something the reference detector could see
    /// a later step use (an identifier, a number of 3 or more digits, a date or time, a run of
    /// 8 or more words): where it holds none (airport codes, seat counts, `"yes"`), "never
    /// used" says nothing, and the field is not proposed.
    pub detectable: u32,
}

/// One JSON tool result of a training trace and the evidence later calls took from it.
struct ResultUse<'a> {
    content: &'a str,
    fields: Vec<String>,
    /// The fields whose values hold something the detector could see used.
    detectable: Vec<String>,
    /// Evidence groups of calls after the first one that carried the result (a tool rule acts
    /// from then on) whose evidence the result holds.
    later: Vec<&'a EvidenceGroup>,
}

impl ResultUse<'_> {
    /// Whether the result without `fields` loses evidence a later call used.
    fn loses(&self, fields: &[String]) -> bool {
        if self.later.is_empty() || !fields.iter().any(|f| self.fields.contains(f)) {
            return false;
        }
        let rules = JsonCompress {
            keep_fields: Vec::new(),
            drop_fields: fields.to_vec(),
            max_array: usize::MAX,
            max_string: usize::MAX,
        };
        let without = compact_json(self.content, &rules).unwrap_or_default();
        self.later
            .iter()
            .any(|g| !contains_evidence(&without, &g.evidence))
    }
}

/// Every tool's JSON results in `cases`, by tool name.
fn results_by_tool<'a>(cases: &[&'a Case<'_>]) -> BTreeMap<String, Vec<ResultUse<'a>>> {
    let mut by_tool: BTreeMap<String, Vec<ResultUse<'a>>> = BTreeMap::new();
    for case in cases {
        let trace = case.trace;
        let mut first_call: HashMap<ChunkId, u32> = HashMap::new();
        for call in &trace.calls {
            for &id in &call.input {
                first_call.entry(id).or_insert(call.index);
            }
        }
        // The detector ignores what the system prompt and tool definitions say: a value made
        // of that (`round_trip` where the prompt says "round trip") is not something it could
        // see used.
        let mut policy = Detector::new();
        for chunk in &trace.chunks {
            if chunk.is_preamble() {
                policy.observe(chunk);
            }
        }
        let mut groups: HashMap<ChunkId, Vec<&'a EvidenceGroup>> = HashMap::new();
        for g in case.graph.groups() {
            for &c in &g.chunks {
                groups.entry(c).or_default().push(g);
            }
        }
        for chunk in &trace.chunks {
            let Some(tool) = chunk.meta.tool_name.as_deref() else {
                continue;
            };
            if chunk.category != Category::ToolResult {
                continue;
            }
            let Ok(value) = serde_json::from_str::<Value>(chunk.content.trim()) else {
                continue;
            };
            let mut fields = Vec::new();
            collect_keys(&value, &mut fields);
            fields.sort_unstable();
            fields.dedup();
            let mut detectable = Vec::new();
            collect_detectable(&value, &policy, &mut detectable);
            detectable.sort_unstable();
            detectable.dedup();
            let after = first_call.get(&chunk.id).copied().unwrap_or(u32::MAX);
            let later = groups
                .get(&chunk.id)
                .into_iter()
                .flatten()
                .copied()
                .filter(|g| g.call > after && contains_evidence(&chunk.content, &g.evidence))
                .collect();
            by_tool
                .entry(tool.to_string())
                .or_default()
                .push(ResultUse {
                    content: &chunk.content,
                    fields: fields.into_iter().map(str::to_string).collect(),
                    detectable: detectable.into_iter().map(str::to_string).collect(),
                    later,
                });
        }
    }
    by_tool
}

/// Every field of every tool's JSON results in `cases`, each on its own: in how many results
/// removing it alone loses evidence a later call used.
pub fn field_uses(cases: &[&Case<'_>]) -> Vec<FieldUse> {
    let mut uses = Vec::new();
    for (tool, results) in results_by_tool(cases) {
        let mut counts: BTreeMap<&str, (u32, u32, u32)> = BTreeMap::new();
        for r in &results {
            for f in &r.fields {
                let e = counts.entry(f).or_default();
                e.0 += 1;
                e.1 += u32::from(r.loses(std::slice::from_ref(f)));
                e.2 += u32::from(r.detectable.contains(f));
            }
        }
        uses.extend(
            counts
                .into_iter()
                .map(|(field, (results, used, detectable))| FieldUse {
                    tool: tool.clone(),
                    field: field.to_string(),
                    results,
                    used,
                    detectable,
                }),
        );
    }
    uses
}

fn collect_keys<'v>(value: &'v Value, out: &mut Vec<&'v str>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.push(k);
                collect_keys(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_keys(v, out)),
        _ => {}
    }
}

/// The keys (at any depth) whose values hold something the detector could see used.
fn collect_detectable<'v>(value: &'v Value, policy: &Detector, out: &mut Vec<&'v str>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if detectable(v, policy) {
                    out.push(k);
                }
                collect_detectable(v, policy, out);
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|v| collect_detectable(v, policy, out)),
        _ => {}
    }
}

/// Whether the value holds a distinctive token the detector does not ignore, or a run of 8 or
/// more words (a quote could be taken from it).
fn detectable(value: &Value, policy: &Detector) -> bool {
    let tokens = || {
        distinctive_tokens(&value.to_string())
            .iter()
            .any(|(_, key, _)| !policy.ignores(key))
    };
    match value {
        Value::String(s) => s.split_whitespace().nth(7).is_some() || tokens(),
        Value::Number(_) => tokens(),
        Value::Object(map) => map.values().any(|v| detectable(v, policy)),
        Value::Array(items) => items.iter().any(|v| detectable(v, policy)),
        Value::Bool(_) | Value::Null => false,
    }
}

/// `drop_fields` per tool, chosen together: fields are added one at a time (the least used on
/// their own first, then the most frequent) while the tool's results that lose evidence a later
/// call used, with every field chosen so far removed, stay at most `max_share` of them. Together,
/// not one by one: two fields can each be redundant and not both (a payment method's id is
/// also its key). Only fields at least `min_results` results hold, at least half of them with
/// something the detector could see used ([`FieldUse::detectable`]), and whose name has no digit
/// (ids used as keys are data), are tried; tools with none chosen are left out.
pub fn drop_rules(cases: &[&Case<'_>], max_share: f64, min_results: u32) -> DropRules {
    let mut rules = DropRules::new();
    let uses = field_uses(cases);
    for (tool, results) in results_by_tool(cases) {
        let mut order: Vec<&FieldUse> = uses
            .iter()
            .filter(|u| {
                u.tool == tool
                    && u.results >= min_results.max(1)
                    && 2 * u.detectable >= u.results
                    // A key with a digit is an id used as a key (`credit_card_4074252`): data
                    // of one user, not a field of the tool's schema.
                    && !u.field.chars().any(|c| c.is_ascii_digit())
            })
            .collect();
        order.sort_by(|a, b| {
            let share = |u: &FieldUse| f64::from(u.used) / f64::from(u.results);
            share(a)
                .total_cmp(&share(b))
                .then(b.results.cmp(&a.results))
                .then(a.field.cmp(&b.field))
        });
        let allowed = max_share * results.len() as f64;
        let mut chosen: Vec<String> = Vec::new();
        for u in order {
            chosen.push(u.field.clone());
            let lost = results.iter().filter(|r| r.loses(&chosen)).count();
            if lost as f64 > allowed {
                chosen.pop();
            }
        }
        if !chosen.is_empty() {
            chosen.sort();
            rules.insert(tool, chosen);
        }
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases;
    use memlens_core::builder::{Message, Part, TraceBuilder};
    use memlens_core::model::Trace;
    use memlens_core::tokens::{count_trace, TokenCounter};

    /// An assistant message that is one tool call, then its result.
    fn exchange(b: &mut TraceBuilder, id: String, tool: &str, arguments: String, content: String) {
        let mut call = Message::text("assistant", "");
        call.parts = vec![Part::ToolCall {
            id: id.clone(),
            name: tool.into(),
            arguments,
        }];
        b.push_message(call, None);
        let mut result = Message::text("tool", "");
        result.parts = vec![Part::ToolResult {
            id,
            name: Some(tool.into()),
            content,
        }];
        b.push_message(result, None);
    }

    /// Six lookups of a user; after each the agent reads the result, the user answers, and the
    /// agent cancels one of the user's reservations by id (a later call uses `reservations`;
    /// nothing ever uses the email or the address).
    fn lookups() -> Trace {
        let mut b = TraceBuilder::new("t", "example");
        b.push_message(
            Message::text(
                "system",
                "You are an airline agent. Trips are one way or round trip.",
            ),
            None,
        );
        for i in 0..6 {
            b.push_message(Message::text("user", format!("Hi, I am user {i}.")), None);
            exchange(
                &mut b,
                format!("call_{i}"),
                "get_user",
                format!(r#"{{"user_id": "user_{i}_x"}}"#),
                format!(
                    r#"{{"email": "person{i}@example.com", "address": {{"city": "Austin", "zip": "7870{i}"}}, "reservations": ["ZFA0{i}Y", "HAT13{i}"], "payment_methods": {{"credit_card_{i}7": {{"id": "credit_card_{i}7", "brand": "visa"}}}}, "default_payment": "credit_card_{i}7", "trip_type": "round_trip"}}"#
                ),
            );
            b.push_message(Message::text("assistant", "Which reservation?"), None);
            b.push_message(
                Message::text("user", "The first one, please cancel it."),
                None,
            );
            exchange(
                &mut b,
                format!("cancel_{i}"),
                "cancel_reservation",
                format!(r#"{{"reservation_id": "ZFA0{i}Y", "refund_to": "credit_card_{i}7"}}"#),
                "cancelled".into(),
            );
            b.push_message(Message::text("assistant", "Done."), None);
        }
        b.reconstruct_calls();
        let (mut trace, _) = b.finish();
        count_trace(&mut trace, &TokenCounter::for_model(None));
        trace
    }

    #[test]
    fn fields_later_calls_read_are_used_and_the_rest_can_be_dropped() {
        let t = lookups();
        let cases = cases(std::slice::from_ref(&t));
        let refs: Vec<&Case> = cases.iter().collect();
        let uses = field_uses(&refs);
        let get = |f: &str| {
            uses.iter()
                .find(|u| u.tool == "get_user" && u.field == f)
                .map(|u| (u.results, u.used))
        };
        let detectable = |f: &str| {
            uses.iter()
                .find(|u| u.tool == "get_user" && u.field == f)
                .map(|u| u.detectable)
        };
        // A zip code and an email are what the detector reads; a city and a card brand are
        // not (their use could not be seen: they are never proposed).
        assert_eq!(detectable("zip"), Some(6));
        assert_eq!(detectable("email"), Some(6));
        assert_eq!(detectable("address"), Some(6));
        assert_eq!(detectable("city"), Some(0));
        assert_eq!(detectable("brand"), Some(0));
        // `round_trip` is the prompt's "round trip": policy vocabulary the detector ignores.
        assert_eq!(detectable("trip_type"), Some(0));
        // The reservation ids are used by the cancel two calls later: dropping the field (and,
        // at any depth, nothing else holds them) loses them.
        assert_eq!(get("reservations"), Some((6, 6)));
        assert_eq!(get("email"), Some((6, 0)));
        assert_eq!(get("address"), Some((6, 0)));
        assert_eq!(get("zip"), Some((6, 0)));
        // The card's id is also its key and the default payment: any one alone can go.
        assert_eq!(get("payment_methods"), Some((6, 0)));
        assert_eq!(get("id"), Some((6, 0)));
        assert_eq!(get("default_payment"), Some((6, 0)));
        assert_eq!(get("credit_card_07"), Some((1, 0)));
        // `cancelled` is not JSON: no fields.
        assert!(uses.iter().all(|u| u.tool == "get_user"));
        let rules = drop_rules(&refs, 0.0, 5);
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            rules.get("get_user"),
            Some(&names(&[
                "address",
                "default_payment",
                "email",
                "id",
                "zip"
            ]))
        );
        // Chosen together: the default payment and the id go, and then the payment methods
        // cannot (the refund's card would be gone), though alone they could. A card's key is
        // never proposed: it is an id, not a field.
        let rules = drop_rules(&refs, 0.0, 1);
        assert!(rules["get_user"].contains(&"id".to_string()));
        assert!(rules["get_user"].contains(&"default_payment".to_string()));
        assert!(!rules["get_user"]
            .iter()
            .any(|f| f.starts_with("credit_card") || f == "payment_methods"));
        assert_eq!(drop_rules(&refs, 1.0, 1)["get_user"].len(), 7);
        // Fewer results than the minimum: nothing proposed.
        assert!(drop_rules(&refs, 0.0, 7).is_empty());
        // The fit drops them where the replay shows no call with a miss more than none.
        let options = crate::FitOptions {
            budget: 100_000,
            min_field_results: 5,
            ..crate::FitOptions::default()
        };
        let prices = memlens_core::cost::PriceTable::builtin();
        let fitted = crate::fit(&refs, &options, &prices).expect("fits");
        let trials = &fitted.field_drops.trials;
        assert_eq!(trials[0].share, None);
        assert!(trials[1].outcome.input_tokens < trials[0].outcome.input_tokens);
        assert_eq!(trials[1].outcome.calls_with_misses, 0);
        assert_eq!(fitted.field_drops.chosen, trials[1].rules);
        assert_eq!(
            fitted.policy.tools["get_user"].drop_fields,
            trials[1].rules["get_user"]
        );
        // A share of 1 proposes every field the minimum allows and the detector reads.
        assert_eq!(drop_rules(&refs, 1.0, 5)["get_user"].len(), 7);
    }

    /// One user's lookup and a cancellation by id; with `quote_email`, the last reply quotes the
    /// email the lookup returned (two calls after the model first saw it).
    fn one_lookup(i: usize, quote_email: bool) -> Trace {
        let mut b = TraceBuilder::new(format!("t{i}"), "example");
        b.push_message(Message::text("system", "You are an airline agent."), None);
        b.push_message(Message::text("user", format!("Hi, I am user {i}.")), None);
        exchange(
            &mut b,
            format!("call_{i}"),
            "get_user",
            format!(r#"{{"user_id": "user_{i}_x"}}"#),
            format!(
                r#"{{"email": "person{i}@example.com", "zip": "7870{i}", "reservations": ["ZFA0{i}Y"]}}"#
            ),
        );
        b.push_message(Message::text("assistant", "Which reservation?"), None);
        b.push_message(
            Message::text("user", "The first one, please cancel it."),
            None,
        );
        exchange(
            &mut b,
            format!("cancel_{i}"),
            "cancel_reservation",
            format!(r#"{{"reservation_id": "ZFA0{i}Y"}}"#),
            "cancelled".into(),
        );
        let reply = if quote_email {
            format!("Done. The confirmation went to person{i}@example.com.")
        } else {
            "Done.".to_string()
        };
        b.push_message(Message::text("assistant", reply), None);
        b.reconstruct_calls();
        let (mut trace, _) = b.finish();
        count_trace(&mut trace, &TokenCounter::for_model(None));
        trace
    }

    #[test]
    fn fields_are_dropped_only_where_choosing_them_without_a_fold_misses_nothing_in_it() {
        // The email is used in one trace of five: on all five it is kept, but chosen on the
        // other four it would be dropped, and the fifth's reply would miss it.
        let traces: Vec<Trace> = (0..5).map(|i| one_lookup(i, i == 0)).collect();
        let cases = cases(&traces);
        let refs: Vec<&Case> = cases.iter().collect();
        let rules = drop_rules(&refs, 0.0, 1);
        assert_eq!(rules["get_user"], ["zip"]);
        let others: Vec<&Case> = refs[1..].to_vec();
        assert_eq!(drop_rules(&others, 0.0, 1)["get_user"], ["email", "zip"]);
        let prices = memlens_core::cost::PriceTable::builtin();
        let fit_with = |folds: usize| {
            let options = crate::FitOptions {
                budget: 100_000,
                min_field_results: 1,
                field_drop_shares: vec![0.0],
                field_drop_folds: folds,
                ..crate::FitOptions::default()
            };
            crate::fit(&refs, &options, &prices)
                .expect("fits")
                .field_drops
        };
        // The training replay alone: dropping the zip misses nothing, so it goes.
        let trusting = fit_with(0);
        assert_eq!(trusting.chosen, rules);
        assert_eq!(trusting.trials[1].held_out, None);
        // Checked fold by fold: the procedure misses the email where it was left out, so no
        // field is dropped.
        let checked = fit_with(5);
        assert_eq!(checked.trials[1].outcome.calls_with_misses, 0);
        let held_out = checked.trials[1].held_out.expect("checked by fold");
        assert!(held_out.calls_with_misses > 0, "{held_out:?}");
        assert!(checked.chosen.is_empty(), "{:?}", checked.chosen);
    }
}
