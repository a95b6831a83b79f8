//! MemLens' live memory pool, binding-neutral: the npm package (through `memlens-wasm`) and the
//! Python package (through `memlens-py`) wrap this crate thinly, so both make the same decisions
//! with the same code.
//!
//! A [`Pool`] takes the caller's message objects (OpenAI or Anthropic JSON) one at a time, keeps
//! them as chunks in the policy engine, and answers each [`Pool::context`] with what to send:
//! mostly references to the caller's own messages (never copied), patched copies where a part was
//! compressed or removed, and summaries for the host to produce. [`policy_from_value`] and
//! [`budget_from_f64`] read the options every binding takes, with the same messages.
//!
//! [`Pool::add_with`] takes what the host knows of a message beyond its object ([`AddOptions`]):
//! its time (the caller's, else the host's clock: this crate reads none, so the npm and Python
//! packages pass `Date.now()` / `time.time()`), written as the chunks' `meta.timestamp` for
//! `max_age_seconds` and value half-lives in seconds; a tool result's latency (given, else the
//! time since its call's message), written as `meta.latency_ms` for the generation-cost factor;
//! and a preference mark (category `preference`, protected by default). The importers record
//! the same fields, so the pool decides as `memlens simulate` does on its exported trace.
//! [`Pool::add`] adds without them (no timestamp: rules by wall-clock time pass it by).
//!
//! - `pool`: calls and usage are recorded for export; `Pool::violations` checks the latest
//!   context's invariants independently of the engine. With `keep_history: false` the engine
//!   forgets what its policy gave up for good (`Engine::forget_dropped`), the released messages
//!   are reported to the host (`PoolContext::released_messages`), and the trace being built drops
//!   what `trace_lines` already wrote (`TraceBuilder::drop_front`), so memory follows the context
//!   and the archive, not the run.
//! - `render`: patching per provider, at the slots the importer recorded for each part; a
//!   context the engine extended extends the latest rendering in place (`PoolContext::extends`
//!   says how much of it was kept).
//!
//! ```
//! use memlens_pool::{policy_from_value, Pool, PoolOptions};
//! use serde_json::json;
//!
//! let mut pool = Pool::new(PoolOptions {
//!     model: Some("gpt-4o".into()),
//!     budget: 1000,
//!     policy: policy_from_value(&json!("value")).unwrap(),
//!     summarizer: false,
//!     dialect: None,
//!     keep_history: true,
//! }).unwrap();
//! pool.add(json!({"role": "system", "content": "Be brief."})).unwrap();
//! pool.add(json!({"role": "user", "content": "Hi"})).unwrap();
//! let ctx = pool.context(None);
//! assert_eq!(ctx.items.len(), 2);
//! assert!(!ctx.over_budget);
//!
//! // A tool call at 12:00:00 and its result 2.5 s later: the result's latency is measured.
//! use memlens_pool::{parse_timestamp, AddOptions};
//! let at = |t: &str| AddOptions { timestamp: Some(parse_timestamp(t).unwrap()), ..AddOptions::default() };
//! let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
//!     "type": "function", "function": {"name": "search", "arguments": "{}"}}]});
//! pool.add_with(call, at("2025-06-02T12:00:00Z")).unwrap();
//! let result = json!({"role": "tool", "tool_call_id": "c1", "content": "42"});
//! let ids = pool.add_with(result, at("2025-06-02T12:00:02.5Z")).unwrap();
//! assert!(pool.explain(ids[0]).unwrap().value.explanation.iter().any(|s| s.contains("took 2.5")));
//! ```

pub mod pool;
pub mod render;

pub use pool::{
    counter_for, parse_timestamp, prices, AddOptions, Explanation, Held, Pool, PoolContext,
    PoolError, PoolOptions, PoolStats, Rendered,
};

use memlens_core::policy::{PolicyConfig, BUILTIN};
use memlens_core::value::Label;
use serde_json::Value;

/// Reads a label as every binding takes it: `"important"`, `"useless"`, or none (clears it).
pub fn label_from_str(label: Option<&str>) -> Result<Option<Label>, PoolError> {
    match label {
        None => Ok(None),
        Some("important") => Ok(Some(Label::Important)),
        Some("useless") => Ok(Some(Label::Useless)),
        Some(other) => Err(PoolError::Label(other.to_string())),
    }
}

/// Reads a policy as every binding takes it: `null` (the default, `value`), a built-in name,
/// JSON or TOML text, or an object (as JSON).
pub fn policy_from_value(value: &Value) -> Result<PolicyConfig, PoolError> {
    match value {
        Value::Null => Ok(PolicyConfig::builtin("value")?),
        Value::String(text) => {
            let t = text.trim();
            if BUILTIN.contains(&t) {
                Ok(PolicyConfig::builtin(t)?)
            } else if t.starts_with('{') || t.contains('=') || t.contains('\n') {
                Ok(PolicyConfig::parse(t)?)
            } else {
                Ok(PolicyConfig::builtin(t)?)
            }
        }
        Value::Object(_) => Ok(PolicyConfig::from_json(&value.to_string())?),
        other => Err(PoolError::PolicyValue(format!(
            "expected a built-in name, JSON or TOML text, or an object; found {}",
            match other {
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                _ => "an array",
            }
        ))),
    }
}

/// Reads a budget in tokens given as a number (JavaScript and Python hand over floats):
/// required, finite, at least 1, at most `u32::MAX`.
pub fn budget_from_f64(budget: Option<f64>) -> Result<u32, PoolError> {
    match budget {
        Some(b) if b.is_finite() && b >= 1.0 && b <= f64::from(u32::MAX) => Ok(b as u32),
        Some(b) => Err(PoolError::Options(format!(
            "budget must be a positive number of tokens, got {b}"
        ))),
        None => Err(PoolError::Options("`budget` (tokens) is required".into())),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn policies_read_from_every_form() {
        assert_eq!(policy_from_value(&Value::Null).unwrap().name, "value");
        assert_eq!(policy_from_value(&json!("window")).unwrap().name, "window");
        let toml = "name = \"mine\"\nstrategy = \"window\"";
        assert_eq!(policy_from_value(&json!(toml)).unwrap().name, "mine");
        let obj = json!({"name": "obj", "strategy": "value"});
        assert_eq!(policy_from_value(&obj).unwrap().name, "obj");
        assert!(policy_from_value(&json!("no-such-policy")).is_err());
        let e = policy_from_value(&json!(3)).unwrap_err().to_string();
        assert!(e.contains("found a number"), "{e}");
    }

    #[test]
    fn budgets_are_positive_finite_token_counts() {
        assert_eq!(budget_from_f64(Some(4000.0)).unwrap(), 4000);
        for bad in [Some(0.0), Some(-1.0), Some(f64::NAN), Some(1e12), None] {
            assert!(budget_from_f64(bad).is_err(), "{bad:?}");
        }
    }
}
