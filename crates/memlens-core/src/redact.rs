//! Redaction: makes a trace safe to share by replacing secrets and personal data with stable
//! placeholders.
//!
//! What is replaced: API keys of the common providers (OpenAI/Anthropic `sk-…`, AWS `AKIA…`,
//! GitHub `ghp_…`/`github_pat_…`, GitLab `glpat-…`, Slack `xox…-`, Google `AIza…`, Hugging Face
//! `hf_…`, Stripe `sk_live_…`/`rk_live_…`), JSON Web Tokens, PEM private key blocks, bearer tokens,
//! passwords in URLs (`scheme://user:PASSWORD@host`), `password=…`/`api_key: …`/`secret…`
//! assignments, e-mail addresses, and high-entropy strings (24+ characters of letters, digits and
//! `+/_=-`, with upper and lower case and digits, at least 4 bits of entropy per character: keys
//! nobody listed). Git hashes and UUIDs (hex) are not high-entropy by that rule and stay.
//!
//! Placeholders are stable: the same secret gets the same placeholder everywhere in the traces a
//! [`Redactor`] sees (`[REDACTED_EMAIL_2]`), so a reader can still tell that two calls used the
//! same key. Token counts change with the text: recount after redacting
//! ([`crate::tokens::count_trace`]) and report both.
//!
//! ```
//! use memlens_core::redact::Redactor;
//!
//! let mut r = Redactor::new();
//! let text = "curl -H 'Authorization: Bearer abcDEF1234567890ghiJKL' https://bob:hunter22@db.example.com";
//! let out = r.redact_text(text);
//! assert_eq!(out, "curl -H 'Authorization: Bearer [REDACTED_BEARER_TOKEN_1]' https://bob:[REDACTED_URL_PASSWORD_1]@db.example.com");
//! assert_eq!(r.redact_text("again: abcDEF1234567890ghiJKL"), "again: [REDACTED_BEARER_TOKEN_1]");
//! ```

use crate::model::Trace;
use crate::tokens::{count_trace, TokenCounter};
use regex::{Captures, Regex};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

/// What kind of secret a placeholder replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretKind {
    /// A PEM private key block.
    PrivateKey,
    /// A provider API key with a known prefix.
    ApiKey,
    /// A JSON Web Token.
    Jwt,
    /// The token of an `Authorization: Bearer` header.
    BearerToken,
    /// The password part of a URL.
    UrlPassword,
    /// The value of a `password=` / `api_key:` / `secret` assignment.
    #[serde(rename = "assigned_secret")]
    Assigned,
    /// An e-mail address.
    Email,
    /// A high-entropy string.
    HighEntropy,
}

impl SecretKind {
    /// The snake_case name used in JSON and reports.
    pub fn name(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "private_key",
            SecretKind::ApiKey => "api_key",
            SecretKind::Jwt => "jwt",
            SecretKind::BearerToken => "bearer_token",
            SecretKind::UrlPassword => "url_password",
            SecretKind::Assigned => "assigned_secret",
            SecretKind::Email => "email",
            SecretKind::HighEntropy => "high_entropy",
        }
    }

    fn label(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "PRIVATE_KEY",
            SecretKind::ApiKey => "API_KEY",
            SecretKind::Jwt => "JWT",
            SecretKind::BearerToken => "BEARER_TOKEN",
            SecretKind::UrlPassword => "URL_PASSWORD",
            SecretKind::Assigned => "SECRET",
            SecretKind::Email => "EMAIL",
            SecretKind::HighEntropy => "HIGH_ENTROPY",
        }
    }
}

/// What a redaction replaced.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RedactionReport {
    /// Occurrences replaced, by kind.
    pub replaced: BTreeMap<SecretKind, u64>,
    /// Distinct secrets replaced.
    pub distinct: u64,
}

impl RedactionReport {
    /// All occurrences replaced.
    pub fn total(&self) -> u64 {
        self.replaced.values().sum()
    }
}

/// One pattern: a regex, the kind, and which capture group is the secret (0: the whole match).
struct Rule {
    kind: SecretKind,
    regex: Regex,
    group: usize,
}

fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let rule = |kind, pattern: &str, group| Rule {
            kind,
            // The patterns are constants of this file, covered by its tests.
            regex: Regex::new(pattern).expect("redaction patterns are valid regexes"),
            group,
        };
        vec![
            rule(
                SecretKind::PrivateKey,
                r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
                0,
            ),
            rule(
                SecretKind::ApiKey,
                concat!(
                    r"\b(?:sk-(?:proj-|ant-|live-)?[A-Za-z0-9_-]{20,}",
                    r"|(?:sk|rk)_live_[A-Za-z0-9]{16,}",
                    r"|AKIA[0-9A-Z]{16}",
                    r"|gh[pousr]_[A-Za-z0-9]{30,}",
                    r"|github_pat_[A-Za-z0-9_]{22,}",
                    r"|glpat-[A-Za-z0-9_-]{20,}",
                    r"|xox[abposr]-[A-Za-z0-9-]{10,}",
                    r"|AIza[0-9A-Za-z_-]{35}",
                    r"|hf_[A-Za-z0-9]{30,})"
                ),
                0,
            ),
            rule(
                SecretKind::Jwt,
                r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
                0,
            ),
            rule(
                SecretKind::BearerToken,
                r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{12,})",
                1,
            ),
            rule(
                SecretKind::UrlPassword,
                r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:([^/\s@]+)@",
                1,
            ),
            rule(
                SecretKind::Assigned,
                concat!(
                    r#"(?i)\b(?:password|passwd|pwd|secret|client_secret|api[_-]?key|access[_-]?token"#,
                    r#"|auth[_-]?token|private[_-]?key)\b["']?\s*[:=]\s*["']?([^\s"',;}{\]\[)]{6,})"#
                ),
                1,
            ),
            rule(
                SecretKind::Email,
                r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
                0,
            ),
            rule(
                SecretKind::HighEntropy,
                r"[A-Za-z0-9+/_=-]{24,}",
                0,
            ),
        ]
    })
}

/// Prefixes of tool call, message and request ids (Anthropic, OpenAI): ids, not secrets.
const ID_PREFIXES: [&str; 7] = [
    "toolu_",
    "call_",
    "msg_",
    "req_",
    "chatcmpl-",
    "resp_",
    "fc_",
];

/// Whether a candidate of the high-entropy rule looks like a secret (see the module docs).
fn is_high_entropy(s: &str) -> bool {
    let has = |f: fn(&char) -> bool| s.chars().any(|c| f(&c));
    if !(has(char::is_ascii_uppercase)
        && has(char::is_ascii_lowercase)
        && has(char::is_ascii_digit))
    {
        return false;
    }
    // Paths and dotted names are not keys; nor are the providers' own record ids, which a
    // reader needs to follow a trace.
    if s.matches('/').count() > 2
        || s.contains("__")
        || ID_PREFIXES.iter().any(|p| s.starts_with(p))
    {
        return false;
    }
    let mut counts = [0u32; 128];
    for b in s.bytes() {
        counts[usize::from(b & 0x7f)] += 1;
    }
    let n = s.len() as f64;
    let entropy: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum();
    entropy >= 4.0
}

fn already_placeholder(s: &str) -> bool {
    s.starts_with("[REDACTED_") || s.starts_with("REDACTED_")
}

/// Secrets shorter than this are replaced only where a rule matches them.
const MIN_KNOWN_SECRET_LEN: usize = 12;

/// Replaces secrets with stable placeholders; one per set of traces to be shared together.
#[derive(Debug, Default)]
pub struct Redactor {
    /// Secret → (placeholder, kind).
    placeholders: HashMap<String, (String, SecretKind)>,
    numbers: HashMap<SecretKind, u64>,
    report: RedactionReport,
}

impl Redactor {
    /// A redactor with no placeholders yet.
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// What was replaced so far.
    pub fn report(&self) -> &RedactionReport {
        &self.report
    }

    fn placeholder(&mut self, kind: SecretKind, secret: &str) -> String {
        *self.report.replaced.entry(kind).or_insert(0) += 1;
        if let Some((p, _)) = self.placeholders.get(secret) {
            return p.clone();
        }
        let n = self.numbers.entry(kind).or_insert(0);
        *n += 1;
        self.report.distinct += 1;
        let p = format!("[REDACTED_{}_{n}]", kind.label());
        self.placeholders
            .insert(secret.to_string(), (p.clone(), kind));
        p
    }

    /// Replaces the secrets already found elsewhere that appear here without the context a rule
    /// needs (a key seen after `Bearer` and again bare in an environment dump). Short secrets
    /// are left alone: a 6-character password would match ordinary words.
    fn replace_known(&mut self, text: &str) -> String {
        let mut known: Vec<(&String, &(String, SecretKind))> = self
            .placeholders
            .iter()
            .filter(|(secret, _)| {
                secret.len() >= MIN_KNOWN_SECRET_LEN && text.contains(secret.as_str())
            })
            .collect();
        if known.is_empty() {
            return text.to_string();
        }
        // Longest first, so a secret containing another is replaced whole.
        known.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
        let mut out = text.to_string();
        let mut counts: Vec<(SecretKind, u64)> = Vec::new();
        for (secret, (placeholder, kind)) in known {
            let n = out.matches(secret.as_str()).count() as u64;
            if n > 0 {
                out = out.replace(secret.as_str(), placeholder);
                counts.push((*kind, n));
            }
        }
        for (kind, n) in counts {
            *self.report.replaced.entry(kind).or_insert(0) += n;
        }
        out
    }

    /// The text with every secret replaced (rules applied in the order of the module docs; a
    /// secret already replaced is not matched again).
    pub fn redact_text(&mut self, text: &str) -> String {
        let mut out = text.to_string();
        for rule in rules() {
            if !rule.regex.is_match(&out) {
                continue;
            }
            let replaced = rule.regex.replace_all(&out, |caps: &Captures<'_>| {
                let whole = caps.get(0).map_or("", |m| m.as_str());
                let Some(secret) = caps.get(rule.group) else {
                    return whole.to_string();
                };
                let secret = secret.as_str();
                if already_placeholder(secret)
                    || (rule.kind == SecretKind::HighEntropy && !is_high_entropy(secret))
                {
                    return whole.to_string();
                }
                let placeholder = self.placeholder(rule.kind, secret);
                let start = secret.as_ptr() as usize - whole.as_ptr() as usize;
                format!(
                    "{}{placeholder}{}",
                    &whole[..start],
                    &whole[start + secret.len()..]
                )
            });
            out = replaced.into_owned();
        }
        self.replace_known(&out)
    }

    /// Redacts every chunk's content and every attribute value of a trace. Token counts are
    /// stale afterwards: recount.
    pub fn redact_trace(&mut self, trace: &mut Trace) {
        for chunk in &mut trace.chunks {
            chunk.content = self.redact_text(&chunk.content);
        }
        for value in trace.attributes.values_mut() {
            *value = self.redact_text(value);
        }
        // A second pass for secrets first recognised in a later chunk but present, bare, in an
        // earlier one.
        for chunk in &mut trace.chunks {
            chunk.content = self.replace_known(&chunk.content);
        }
        for value in trace.attributes.values_mut() {
            *value = self.replace_known(value);
        }
    }
}

/// What [`redact_traces`] did: the occurrences replaced and the token totals (each chunk once)
/// before and after.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RedactionSummary {
    /// What was replaced.
    pub report: RedactionReport,
    /// Tokens of all chunks before redacting.
    pub tokens_before: u64,
    /// Tokens of all chunks after redacting and recounting.
    pub tokens_after: u64,
}

impl RedactionSummary {
    /// One line for a person: `redacted 7 occurrence(s) of 5 secret(s) (email 3, ...); tokens 201 -> 168 (-33)`.
    pub fn describe(&self) -> String {
        let kinds: Vec<String> = self
            .report
            .replaced
            .iter()
            .map(|(kind, n)| format!("{} {n}", kind.name()))
            .collect();
        format!(
            "redacted {} occurrence(s) of {} secret(s){}; tokens {} -> {} ({:+})",
            self.report.total(),
            self.report.distinct,
            if kinds.is_empty() {
                String::new()
            } else {
                format!(" ({})", kinds.join(", "))
            },
            self.tokens_before,
            self.tokens_after,
            self.tokens_after as i64 - self.tokens_before as i64
        )
    }
}

/// Redacts the traces with one [`Redactor`] (a secret gets the same placeholder in all of them)
/// and recounts their tokens, with `model`'s encoding when given (as `--model` counted them),
/// else each trace's own.
pub fn redact_traces(traces: &mut [Trace], model: Option<&str>) -> RedactionSummary {
    let total = |traces: &[Trace]| -> u64 {
        traces
            .iter()
            .flat_map(|t| &t.chunks)
            .map(|c| u64::from(c.tokens))
            .sum()
    };
    let tokens_before = total(traces);
    let mut redactor = Redactor::new();
    for trace in traces.iter_mut() {
        redactor.redact_trace(trace);
        let counter = TokenCounter::for_model(model.or(trace.main_model()));
        count_trace(trace, &counter);
    }
    RedactionSummary {
        report: redactor.report().clone(),
        tokens_before,
        tokens_after: total(traces),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(text: &str) -> String {
        Redactor::new().redact_text(text)
    }

    #[test]
    fn provider_keys_tokens_and_private_keys() {
        assert_eq!(
            redact("OPENAI_API_KEY sk-proj-AbCdEf0123456789AbCdEf0123"),
            "OPENAI_API_KEY [REDACTED_API_KEY_1]"
        );
        assert_eq!(
            redact("aws AKIAIOSFODNN7EXAMPLE."),
            "aws [REDACTED_API_KEY_1]."
        );
        assert_eq!(
            redact("token ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            "token [REDACTED_API_KEY_1]"
        );
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        assert_eq!(redact(jwt), "[REDACTED_JWT_1]");
        let pem = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAKC\n-----END RSA PRIVATE KEY-----\nend";
        assert_eq!(redact(pem), "key:\n[REDACTED_PRIVATE_KEY_1]\nend");
    }

    #[test]
    fn assignments_emails_and_url_passwords() {
        assert_eq!(
            redact(r#"{"password": "correct-horse", "user": "ann"}"#),
            r#"{"password": "[REDACTED_SECRET_1]", "user": "ann"}"#
        );
        assert_eq!(redact("API_KEY=abc123xyz"), "API_KEY=[REDACTED_SECRET_1]");
        assert_eq!(
            redact("mail mia.li@example.co.uk or mia.li@example.co.uk"),
            "mail [REDACTED_EMAIL_1] or [REDACTED_EMAIL_1]"
        );
        assert_eq!(
            redact("postgres://admin:s3cr3t!@db:5432/x"),
            "postgres://admin:[REDACTED_URL_PASSWORD_1]@db:5432/x"
        );
    }

    #[test]
    fn high_entropy_strings_but_not_hashes_uuids_or_paths() {
        assert_eq!(
            redact("key Zx81KqPm2vRt9WsYb4NcLd7Hf3Ja6Ge"),
            "key [REDACTED_HIGH_ENTROPY_1]"
        );
        for kept in [
            "commit 4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
            "id 123e4567-e89b-12d3-a456-426614174000",
            "see crates/memlens-core/src/policy/engine.rs",
            "TheQuickBrownFoxJumpsOverTheLazyDog",
            "call_AbCdEfGh",
            "toolu_01A09q90qw90lq917835lq9X",
        ] {
            assert_eq!(redact(kept), kept);
        }
    }

    #[test]
    fn stable_placeholders_and_report() {
        let mut r = Redactor::new();
        let a = r.redact_text("a@example.com b@example.com a@example.com");
        assert_eq!(
            a,
            "[REDACTED_EMAIL_1] [REDACTED_EMAIL_2] [REDACTED_EMAIL_1]"
        );
        assert_eq!(r.report().total(), 3);
        assert_eq!(r.report().distinct, 2);
        // Redacting redacted text changes nothing.
        assert_eq!(r.redact_text(&a), a);
    }
}
