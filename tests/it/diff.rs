//! Why each call's cached prefix ended (`memlens_core::diff`), on a request/response log written
//! for it (`tests/fixtures/openai/cache-breaks.jsonl`): ten calls of a support conversation, a
//! ten-minute pause before call 3, a second tool added to the tool list at call 5, and the first
//! user message edited (order 1142 -> 1143) at call 8. The expected causes, chunks and figures
//! below are derived by hand from the file.

use crate::{import_path, root};
use memlens_core::cost::{trace_cost, PriceTable};
use memlens_core::diff::{call_changes, PrefixCause};
use memlens_core::tokens::{count_trace, TokenCounter};
use memlens_core::{Category, Trace};

fn trace() -> Trace {
    let path = root().join("tests/fixtures/openai/cache-breaks.jsonl");
    let mut t = import_path(&path).expect("imports").traces.remove(0);
    let counter = TokenCounter::for_model(t.main_model());
    count_trace(&mut t, &counter);
    t
}

#[test]
fn a_miss_costs_the_cache_reads_it_lost() {
    // The same conversation sent to Claude (cache breakpoints, no minimum modelled): every
    // re-sent token was a lost cache read, at the input price minus the cache-read price.
    let mut t = trace();
    let model = "claude-sonnet-4-5";
    t.model = Some(model.into());
    for call in &mut t.calls {
        call.model = Some(model.into());
    }
    let prices = PriceTable::builtin();
    let (_, price) = prices.lookup(model).expect("priced");
    let per_token = (price.input.expect("input") - price.cache_read.expect("cache read")) / 1e6;
    let changes = call_changes(&t, &prices);
    let mut breaks = 0;
    for c in &changes[1..] {
        assert_eq!(c.missed_cache_tokens, c.resent_tokens, "call {}", c.call);
        let miss = c.miss_usd.expect("priced");
        assert!(
            (miss - c.resent_tokens as f64 * per_token).abs() < 1e-12,
            "call {}: {miss}",
            c.call
        );
        breaks += usize::from(c.resent_tokens > 0);
    }
    assert_eq!(breaks, 3, "the idle gap, the tool list, the edit");
}

#[test]
fn each_call_names_why_its_prefix_ended() {
    let t = trace();
    let prices = PriceTable::builtin();
    let changes = call_changes(&t, &prices);
    let causes: Vec<PrefixCause> = changes.iter().map(|c| c.cause).collect();
    use PrefixCause::*;
    assert_eq!(
        causes,
        [
            FirstCall,
            Intact,
            Intact,
            IdleGap,
            Intact,
            ToolDefinitions,
            Intact,
            Intact,
            Edited,
            Intact
        ]
    );
    let tokens = |ids: &[memlens_core::ChunkId]| -> u64 {
        ids.iter().map(|&id| u64::from(t.chunk(id).tokens)).sum()
    };

    // Call 3 comes 600 s after call 2 (no end times: start to start): the whole prefix is re-sent.
    let c3 = &changes[3];
    assert_eq!(c3.idle_secs, Some(600.0));
    assert_eq!(c3.shared_prefix_chunks, t.calls[2].input.len());
    assert_eq!(c3.resent_tokens, tokens(&t.calls[2].input));

    // Call 5: the tool list (the first item of every input) changed, so nothing is shared and
    // everything else of call 4's input is re-sent.
    let c5 = &changes[5];
    let old_tools = t.calls[4].input[0];
    let new_tools = t.calls[5].input[0];
    assert_eq!(
        t.chunk(old_tools).meta.kind.as_deref(),
        Some("tool_definitions")
    );
    assert!(t.chunk(new_tools).content.contains("refund_order"));
    assert_eq!(c5.at, Some(old_tools));
    assert_eq!(c5.shared_prefix_chunks, 0);
    assert_eq!(c5.diff.edited, vec![[old_tools, new_tools]]);
    assert!(c5.diff.removed.is_empty());
    // Added: call 4's reply and the new question.
    assert_eq!(
        c5.diff.added,
        t.calls[5].input[t.calls[5].input.len() - 2..]
    );
    assert_eq!(
        c5.resent_tokens,
        tokens(&t.calls[4].input) - u64::from(t.chunk(old_tools).tokens)
    );
    // gpt-4o caches automatically, but only prefixes of 1,024 tokens and more: these calls are
    // shorter, so the break cost no cache reads.
    assert_eq!(c5.missed_cache_tokens, 0);
    assert_eq!(c5.miss_usd, Some(0.0));

    // Call 8: tools and system prompt are shared; the first user message was edited.
    let c8 = &changes[8];
    assert_eq!(c8.shared_prefix_chunks, 2);
    let (before, after) = (t.calls[7].input[2], t.calls[8].input[2]);
    assert_eq!(t.chunk(before).category, Category::User);
    assert!(t.chunk(before).content.contains("1142"));
    assert!(t.chunk(after).content.contains("1143"));
    assert_eq!(c8.at, Some(before));
    assert_eq!(c8.diff.edited, vec![[before, after]]);

    // Intact calls re-send nothing and add only the newest turn; shared prefixes agree with
    // the cost model's.
    let cost = trace_cost(&t, &prices);
    for (change, call_cost) in changes.iter().zip(&cost.calls) {
        assert_eq!(change.shared_prefix_tokens, call_cost.shared_prefix_tokens);
        if change.cause == Intact {
            assert_eq!(change.resent_tokens, 0);
            assert_eq!(change.at, None);
            assert!(change.diff.removed.is_empty() && change.diff.edited.is_empty());
        }
    }
}

#[test]
fn the_call_view_breaks_a_call_down_and_adds_up() {
    use memlens_core::analysis::call_view;
    let t = trace();
    let prices = PriceTable::builtin();
    let cost = trace_cost(&t, &prices);
    for (i, call) in t.calls.iter().enumerate() {
        let v = call_view(&t, &prices, i as u32).expect("the call exists");
        // Chunks and components each add up to the counted input, less the reply priming.
        let chunk_sum: u64 = v.chunks.iter().map(|c| u64::from(c.tokens)).sum();
        let component_sum: u64 = v.components.iter().map(|c| c.tokens).sum();
        assert_eq!(chunk_sum + v.priming_tokens, v.input_tokens, "call {i}");
        assert_eq!(component_sum, chunk_sum);
        assert_eq!(v.input_tokens, cost.calls[i].counted.input);
        assert_eq!(v.chunks.len(), call.input.len());
        // New at this call: exactly what the previous input did not have.
        let new: Vec<u32> = v.chunks.iter().filter(|c| c.new).map(|c| c.id).collect();
        let expected: Vec<u32> = match i.checked_sub(1) {
            None => call.input.iter().map(|c| c.0).collect(),
            Some(p) => call
                .input
                .iter()
                .filter(|c| !t.calls[p].input.contains(c))
                .map(|c| c.0)
                .collect(),
        };
        assert_eq!(new, expected, "call {i}");
        // Input cost by chunk adds up to the component costs.
        let by_chunk: f64 = v.chunks.iter().filter_map(|c| c.cost_usd).sum();
        let by_component: f64 = v.components.iter().filter_map(|c| c.cost_usd).sum();
        assert!((by_chunk - by_component).abs() < 1e-12);
    }
    let v = call_view(&t, &prices, 5).expect("call 5");
    let names: Vec<&str> = v.components.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names[0], "tool definitions",
        "the largest component: {names:?}"
    );
    assert!(names.contains(&"system") && names.contains(&"user") && names.contains(&"assistant"));
    assert_eq!(v.change.cause, PrefixCause::ToolDefinitions);
    assert!(call_view(&t, &prices, 10).is_none());
}
