//! The value strategy: the lowest value per token goes first (the value engine's score of each
//! unit's members, summed, over the unit's tokens), with every MemLens rule applied.

use super::{rules, Strategy};
use crate::policy::engine::decision::Decision;
use crate::policy::engine::state::State;

/// Lowest value per token first.
#[derive(Debug)]
pub(crate) struct Value;

impl Strategy for Value {
    fn decide(&self, s: &mut State, query: &str, d: &mut Decision) {
        rules::apply(s, query, rules::by_value_per_token, d);
    }

    fn repairs_invariants(&self) -> bool {
        true
    }

    fn reads_values(&self) -> bool {
        true
    }
}
