//! OpenAI Codex CLI rollouts and Gemini CLI chat recordings.
