//! mini-swe-agent `.traj.json` (github.com/SWE-agent/mini-swe-agent,
//! `src/minisweagent/run/utils/save.py`, `save_traj`): `{"info": {"exit_status", "submission",
//! "model_stats": {"instance_cost", "api_calls"}, "config", "mini_version"}, "messages": [...],
//! "trajectory_format": "mini-swe-agent-1"}` (`-1.1` since v2). The history is linear and never
//! rewritten: every assistant message is one call whose input is everything before it; its usage
//! is the LiteLLM response kept in `extra.response`. Messages follow the OpenAI chat format
//! (`tool_calls` and `role: "tool"` with tool-calling models); the final `role: "exit"` message is
//! never sent to a model and is left out. With tool calls, the tool definitions sent with every
//! request are not in the file: the attribute `unrecorded` says so.
//!
//! **The text format** (every v1 run; v2 with a `textbased` model): the model writes its command
//! as a fenced block in its reply (`action_regex`, ```` ```bash ```` in v1,
//! ```` ```mswea_bash_command ```` in v2) and the output comes back as a `user` message rendered
//! with the observation template (`<returncode>0</returncode>\n<output>...`) or, in v1, the
//! timeout template (`The last command <command>...</command> timed out...`). Such a block is a
//! tool call `action-<message index>` and its output the tool result ([`super::text_actions`]):
//! - an assistant message issued an action when the scaffold would have parsed exactly one
//!   block from it (v1 `parse_action`: `len(actions) == 1`), or, in v2, when its `extra.actions`
//!   holds one command (a v2 reply without one is never written: only its format error is);
//! - the user message right after it is the output when v2 marked it so (`extra.raw_output` /
//!   `returncode`, from `format_observation_messages`), or (v1, no `extra`) it opens as the run's
//!   observation or timeout template does, or it is the submission the run ended with (v1 adds
//!   the `Submitted` text, the command's output less its first line, as the last message).
//!
//! A format error ("Please always provide EXACTLY ONE action...") is not a tool result: it
//! answers a reply that issued no action (none, or several blocks the scaffold refused to run),
//! and v2 marks it (`extra.interrupt_type`), as it marks a user's interruption or rejection: these
//! stay user messages, and an action they follow is an unanswered call, as is a last action
//! with no output after it.

use super::text_actions::{self, fenced_blocks, locate, Action, Said};
use crate::document::Document;
use crate::error::{ImportError, Location};
use crate::json::{array_at, scalar_text, str_at, type_name};
use crate::openai::parse_message;
use crate::openhands::litellm_usage;
use crate::{Context, Importer};
use memlens_core::builder::{CallInfo, Message, Part, Role, TraceBuilder};
use memlens_core::{SourcePos, Trace};
use serde_json::Value;

/// The mini-swe-agent `.traj.json` importer.
pub struct MiniSweAgent;

pub(super) fn is_mini(v: &Value) -> bool {
    array_at(v, "messages").is_some()
        && (str_at(v, "trajectory_format").is_some_and(|f| f.starts_with("mini-swe-agent"))
            || v.get("info").and_then(|i| i.get("mini_version")).is_some())
}

impl Importer for MiniSweAgent {
    fn name(&self) -> &'static str {
        "mini-swe-agent"
    }

    fn description(&self) -> &'static str {
        "mini-swe-agent .traj.json trajectories: linear message history, usage per response"
    }

    fn sniff(&self, first: &Value) -> bool {
        is_mini(first)
    }

    fn import(&self, doc: Document<'_>, cx: &mut Context<'_>) -> Result<Vec<Trace>, ImportError> {
        let mut traces = Vec::new();
        for item in doc.into_records() {
            let Some((location, record)) = cx.accept(item) else {
                continue;
            };
            let Some(messages) = array_at(&record, "messages") else {
                cx.warn(location, "skipped: record has no \"messages\" list");
                continue;
            };
            let id = ["instance_id", "task_id"]
                .iter()
                .find_map(|k| str_at(&record, k))
                .map_or_else(
                    || format!("mini-swe-agent-{}", traces.len()),
                    str::to_string,
                );
            let mut b = TraceBuilder::new(id, "mini-swe-agent");
            let info = record.get("info").unwrap_or(&Value::Null);
            let model = info
                .get("config")
                .and_then(|c| c.get("model"))
                .and_then(|m| str_at(m, "model_name"))
                .map(str::to_string);
            b.set_model(model.clone());
            let stats = info.get("model_stats").unwrap_or(&Value::Null);
            for key in ["instance_cost", "api_calls"] {
                if let Some(v) = stats.get(key).and_then(scalar_text) {
                    b.attribute(key, v);
                }
            }
            for (key, value) in [
                ("exit_status", info.get("exit_status")),
                ("mini_version", info.get("mini_version")),
                ("trajectory_format", record.get("trajectory_format")),
            ] {
                if let Some(v) = value.and_then(scalar_text) {
                    b.attribute(key, v);
                }
            }
            let mut parsed = Vec::new();
            for (i, m) in messages.iter().enumerate() {
                if let Some((message, call)) = mini_message(m, i, model.as_deref(), location, cx) {
                    parsed.push((i, m, message, call));
                }
            }
            let said = TextFormat::of(&record, messages).map_or_else(
                || vec![Said::Other; parsed.len()],
                |format| format.said(&parsed),
            );
            let mut calls = Vec::with_capacity(parsed.len());
            let mut list = Vec::with_capacity(parsed.len());
            for (_, _, message, call) in parsed {
                list.push(message);
                calls.push(call);
            }
            let linked = text_actions::link(list, &said);
            text_actions::push_all(&mut b, linked, |i| calls[i].take());
            if messages
                .iter()
                .any(|m| array_at(m, "tool_calls").is_some_and(|c| !c.is_empty()))
            {
                b.attribute(
                    memlens_core::report::UNRECORDED_ATTRIBUTE,
                    "tool definitions (sent with every request, not written to the trajectory)",
                );
            }
            b.reconstruct_calls();
            traces.push(cx.finish(b, location));
        }
        Ok(traces)
    }
}

/// One message and what is known of the call that produced it (assistant messages); `None` for
/// the `exit` message (never sent) and, with a warning, for one that is not a message.
fn mini_message(
    m: &Value,
    index: usize,
    model: Option<&str>,
    location: Location,
    cx: &mut Context<'_>,
) -> Option<(Message, Option<CallInfo>)> {
    if str_at(m, "role") == Some("exit") {
        return None;
    }
    let Some(message) = parse_message(m, location, cx) else {
        cx.warn(
            location,
            format!(
                "message {index} skipped: expected an object with a string \"role\", found {}",
                crate::json::describe(m)
            ),
        );
        return None;
    };
    let info = (message.role == Some(Role::Assistant)).then(|| {
        let extra = m.get("extra").unwrap_or(&Value::Null);
        let response = extra.get("response").unwrap_or(&Value::Null);
        let usage = response.get("usage").or_else(|| extra.get("usage"));
        if let Some(other) = usage.filter(|u| !u.is_object() && !u.is_null()) {
            cx.warn(
                location,
                format!(
                    "message {index}: \"usage\" is {}, expected an object: ignored",
                    type_name(other)
                ),
            );
        }
        CallInfo {
            model: str_at(response, "model").or(model).map(str::to_string),
            usage: usage.filter(|u| u.is_object()).map(litellm_usage),
            ended_at: extra.get("timestamp").and_then(scalar_text),
            source: Some(SourcePos {
                line: location.line.unwrap_or(0) as u32,
                record: location.record.unwrap_or(0) as u32,
            }),
            ..CallInfo::default()
        }
    });
    Some((message, info))
}

/// mini-swe-agent's own observation and timeout templates open with these (v1 `default.yaml`,
/// `extra/swebench.yaml`, the `AgentConfig` defaults; v2 `observation_template`).
const OBSERVATION_OPENINGS: [&str; 5] = [
    "<returncode>",
    "<exception>",
    "<output>",
    "Observation:",
    "The last command <command>",
];

/// Its format error templates open with this (v1 and v2, text format).
const FORMAT_ERROR_OPENING: &str = "Please always provide EXACTLY ONE action";

/// How a text-format run writes actions and outputs, from its config.
struct TextFormat {
    /// The fence language of `action_regex`; `None` for a regex of another shape, which this
    /// importer does not run: only messages that name their action (`extra.actions`) split.
    lang: Option<String>,
    /// What an output opens with: the shipped templates' openings and the run's own.
    observations: Vec<String>,
    /// What a format error opens with.
    format_errors: Vec<String>,
    /// The text the run submitted, when it ended `Submitted`.
    submission: Option<String>,
}

impl TextFormat {
    /// The run's text format; `None` for a tool-calling run (its actions are native calls).
    fn of(record: &Value, messages: &[Value]) -> Option<TextFormat> {
        let tool_calling = messages.iter().any(|m| {
            str_at(m, "role") == Some("tool")
                || array_at(m, "tool_calls").is_some_and(|c| !c.is_empty())
        });
        if tool_calling {
            return None;
        }
        let info = record.get("info").unwrap_or(&Value::Null);
        let config = info.get("config").unwrap_or(&Value::Null);
        // v1 keeps the templates in the agent's config, v2 in the model's.
        let setting = |key: &str| {
            ["agent", "model", "environment"]
                .iter()
                .find_map(|part| config.get(*part).and_then(|c| str_at(c, key)))
        };
        let v2 = str_at(record, "trajectory_format").is_some_and(|f| f != "mini-swe-agent-1")
            || str_at(info, "mini_version")
                .and_then(|v| v.split('.').next()?.parse::<u32>().ok())
                .is_some_and(|major| major >= 2);
        let lang = match setting("action_regex") {
            Some(regex) => fence_lang(regex),
            None if v2 => Some("mswea_bash_command".into()),
            None => Some("bash".into()),
        };
        let mut observations: Vec<String> =
            OBSERVATION_OPENINGS.iter().map(|s| s.to_string()).collect();
        for key in [
            "action_observation_template",
            "observation_template",
            "timeout_template",
        ] {
            observations.extend(setting(key).and_then(literal_opening));
        }
        let mut format_errors = vec![FORMAT_ERROR_OPENING.to_string()];
        format_errors.extend(setting("format_error_template").and_then(literal_opening));
        let submitted = str_at(info, "exit_status") == Some("Submitted");
        Some(TextFormat {
            lang,
            observations,
            format_errors,
            submission: str_at(info, "submission")
                .filter(|_| submitted)
                .map(str::to_string),
        })
    }

    /// What the record says of each parsed message (`(index, raw, message, _)`).
    fn said<C>(&self, parsed: &[(usize, &Value, Message, C)]) -> Vec<Said> {
        let last = parsed.len().saturating_sub(1);
        parsed
            .iter()
            .enumerate()
            .map(|(k, (index, raw, message, _))| match message.role {
                Some(Role::Assistant) => self.action(raw, message).map_or(Said::Other, |at| {
                    Said::Action(format!("action-{index}"), at)
                }),
                Some(Role::User) if self.is_output(raw, message, k == last) => Said::Observation,
                _ => Said::Other,
            })
            .collect()
    }

    /// Where the action an assistant message issued sits, if it issued one.
    fn action(&self, raw: &Value, message: &Message) -> Option<Action> {
        let texts = message
            .parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                Part::Text(t) => Some((i, t.as_str())),
                _ => None,
            });
        let extra = raw.get("extra").unwrap_or(&Value::Null);
        if let Some(actions) = array_at(extra, "actions") {
            // v2 records what it ran; a text-format reply runs exactly one command.
            let [action] = actions.as_slice() else {
                return None;
            };
            let command = str_at(action, "command")?.trim();
            let langs: Vec<&str> = match &self.lang {
                Some(lang) => vec![lang.as_str()],
                None => vec!["mswea_bash_command", "bash"],
            };
            let mut found = None;
            for (part, text) in texts {
                let fenced = langs
                    .iter()
                    .flat_map(|l| fenced_blocks(text, l))
                    .filter(|b| text[b.command.0..b.command.1].trim() == command);
                let span = fenced
                    .map(|b| (b.start, b.end))
                    .max()
                    .or_else(|| locate(text, command));
                if let Some((start, end)) = span {
                    found = Some(Action { part, start, end });
                }
            }
            return found;
        }
        // v1 parses the reply with its regex and runs it when it finds exactly one block.
        let lang = self.lang.as_deref()?;
        let mut blocks = texts.flat_map(|(part, text)| {
            fenced_blocks(text, lang).into_iter().map(move |b| Action {
                part,
                start: b.start,
                end: b.end,
            })
        });
        match (blocks.next(), blocks.next()) {
            (Some(one), None) => Some(one),
            _ => None,
        }
    }

    /// Whether a user message is the environment's output (to an action just before, which
    /// [`text_actions::link`] checks). `last`: the run's last message.
    fn is_output(&self, raw: &Value, message: &Message, last: bool) -> bool {
        let extra = raw.get("extra").unwrap_or(&Value::Null);
        if extra.get("interrupt_type").is_some() {
            return false;
        }
        if extra.get("raw_output").is_some() || extra.get("returncode").is_some() {
            return true;
        }
        let [Part::Text(text)] = message.parts.as_slice() else {
            return false;
        };
        let opening = text.trim_start();
        if self
            .format_errors
            .iter()
            .any(|f| opening.starts_with(f.as_str()))
        {
            return false;
        }
        self.observations
            .iter()
            .any(|o| opening.starts_with(o.as_str()))
            || (last && self.submission.as_deref() == Some(text.as_str()))
    }
}

/// The fence language of an action regex of mini-swe-agent's shape,
/// `` ```LANG\s*\n(.*?)\n``` ``; `None` for any other regex.
fn fence_lang(regex: &str) -> Option<String> {
    let lang = regex
        .strip_prefix("```")?
        .strip_suffix(r"\s*\n(.*?)\n```")?;
    lang.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        .then(|| lang.to_string())
}

/// The literal text a Jinja template opens with, up to its first tag or expression; `None`
/// when it opens with one (the opening then depends on the values).
fn literal_opening(template: &str) -> Option<String> {
    let opening = template[..template.find('{').unwrap_or(template.len())].trim();
    (opening.len() >= 3).then(|| opening.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_config_shapes() {
        assert_eq!(
            fence_lang(r"```bash\s*\n(.*?)\n```").as_deref(),
            Some("bash")
        );
        assert_eq!(
            fence_lang(r"```mswea_bash_command\s*\n(.*?)\n```").as_deref(),
            Some("mswea_bash_command")
        );
        assert_eq!(fence_lang(r"<bash>(.*?)</bash>"), None);
        assert_eq!(
            literal_opening("The last command <command>{{action['action']}}</command>").as_deref(),
            Some("The last command <command>")
        );
        assert_eq!(
            literal_opening("{% if output.exception_info -%}<exception>"),
            None
        );
    }
}
