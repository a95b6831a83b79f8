//! tau-bench trajectory files: a JSON list of `{task_id, trial, reward, info, traj}` where `traj`
//! is an OpenAI message list. One trace per record.

use crate::document::Document;
use crate::error::ImportError;
use crate::json::{array_at, scalar_text};
use crate::openai::push_conversation;
use crate::{Context, Importer};
use memlens_core::builder::TraceBuilder;
use memlens_core::Trace;
use serde_json::Value;

/// The tau-bench importer.
pub struct TauBench;

fn is_record(v: &Value) -> bool {
    array_at(v, "traj").is_some()
}

impl Importer for TauBench {
    fn name(&self) -> &'static str {
        "tau-bench"
    }

    fn description(&self) -> &'static str {
        "tau-bench trajectories: records with a `traj` message list, one trace each"
    }

    fn sniff(&self, first: &Value) -> bool {
        is_record(first)
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let mut traces = Vec::new();
        for item in doc.into_records() {
            let Some((location, record)) = cx.accept(item) else {
                continue;
            };
            let Some(traj) = array_at(&record, "traj") else {
                cx.warn(location, "skipped: record has no \"traj\" message list");
                continue;
            };
            let field = |k: &str| record.get(k).and_then(scalar_text);
            let id = match (field("task_id"), field("trial")) {
                (Some(t), Some(r)) => format!("task-{t}-trial-{r}"),
                (Some(t), None) => format!("task-{t}-{}", traces.len()),
                _ => format!("trajectory-{}", traces.len()),
            };
            let mut b = TraceBuilder::new(id, "tau-bench");
            for key in ["task_id", "trial", "reward"] {
                if let Some(v) = field(key) {
                    b.attribute(key, v);
                }
            }
            push_conversation(&mut b, traj, location, cx);
            traces.push(cx.finish(b, location));
        }
        Ok(traces)
    }
}
