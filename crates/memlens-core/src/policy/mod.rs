//! Retention policies: the configuration format, the incremental engine that applies a policy
//! turn by turn, compression actions, and the invariant checks every MemLens policy passes.

pub mod compress;
pub mod config;
pub mod engine;
pub mod validate;

pub use config::{Cleanup, PolicyConfig, PolicyError, Strategy, BUILTIN};
pub use engine::{ContextEntry, Decision, Engine, EngineOptions, EntryForm};
