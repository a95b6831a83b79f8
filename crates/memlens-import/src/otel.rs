//! (in progress)
use crate::document::Document;
use crate::error::ImportError;
use crate::{Context, Importer};
use memlens_core::Trace;
use serde_json::Value;

/// Importer.
pub struct Otel;
impl Importer for Otel {
    fn name(&self) -> &'static str { "otel" }
    fn description(&self) -> &'static str { "" }
    fn sniff(&self, _first: &Value) -> bool { false }
    fn import(&self, _doc: &Document, _cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> { Ok(vec![]) }
}
