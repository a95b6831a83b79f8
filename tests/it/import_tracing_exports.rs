//! OpenInference spans, Langfuse and LangSmith exports.
