//! Retention policies: the configuration format, the incremental engine that applies a policy
//! turn by turn, one file per strategy (`strategy/`), compression actions, and the invariant
//! checks every MemLens policy passes.

pub mod compress;
pub mod config;
pub mod engine;
mod run_kind;
mod strategy;
pub mod validate;

pub use config::{
    Cleanup, PolicyConfig, PolicyError, QuotaOrder, RunKind, StrategyKind, ToolRule, BUILTIN,
};
pub use engine::{ContextEntry, Decision, Engine, EngineOptions, EntryForm, TraceMemo};
pub use strategy::Hindsight;
