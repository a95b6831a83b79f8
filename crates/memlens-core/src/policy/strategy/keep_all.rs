//! Keep everything: the baseline every saving is measured against.

use super::Strategy;
use crate::policy::engine::decision::Decision;
use crate::policy::engine::state::State;

/// Sends every live chunk.
#[derive(Debug)]
pub(crate) struct KeepAll;

impl Strategy for KeepAll {
    fn decide(&self, _s: &mut State, _query: &str, _d: &mut Decision) {}

    fn repairs_invariants(&self) -> bool {
        true
    }

    fn marks_changes(&self) -> bool {
        true
    }
}
