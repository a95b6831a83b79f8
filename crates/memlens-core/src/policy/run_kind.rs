//! The kinds of run a policy rule can be limited to.

use serde::{Deserialize, Serialize};

/// Which runs a rule acts in (see [`super::PolicyConfig::value_threshold_runs`],
/// [`super::PolicyConfig::size_exponent_runs`], [`super::PolicyConfig::cleanup_runs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunKind {
    /// Every run.
    #[default]
    Any,
    /// A tool-using agent's run: from its first tool call or result on.
    Agent,
    /// A conversation: until the run has a tool call or result.
    Conversation,
}

impl RunKind {
    /// Whether this is [`RunKind::Any`].
    pub fn is_any(&self) -> bool {
        *self == RunKind::Any
    }

    /// Whether a run acts as this kind, given whether it has had a tool call or result yet.
    pub fn includes(self, saw_tools: bool) -> bool {
        match self {
            RunKind::Any => true,
            RunKind::Agent => saw_tools,
            RunKind::Conversation => !saw_tools,
        }
    }
}
