//! Claude Code sessions: subagents, compactions, cache usage.
