//! Exact token counts with the model's encoding, and the chat format's framing.
//!
//! Counting is tiktoken's, pieces for pieces: the vocabularies are tiktoken-rs', the pre-tokenizer
//! is written out by hand ([`pretokenize`]: the same pieces as tiktoken's regular expressions
//! without a backtracking regex engine) and each piece is byte-pair merged as tiktoken does
//! ([`bpe`]). Tests compare every count with tiktoken-rs on real traces and random text.
//!
//! Encodings: o200k for the gpt-4o / gpt-4.1 / o-series / gpt-5 families, cl100k for gpt-4 and
//! gpt-3.5; any model tiktoken-rs does not know (Claude, Gemini, Llama, ...) is counted with o200k and
//! the count is marked estimated. Framing follows OpenAI's cookbook (as tiktoken-rs'
//! `num_tokens_from_messages` does): 3 tokens per message plus the role, 1 plus the name when a
//! message has one, 1 plus the tool name per native tool call (not an action written in the text),
//! and 3 tokens priming every reply.

use crate::model::{Category, Chunk, Trace, TEXT_ACTION_KIND};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;
use tiktoken_rs::tokenizer::{get_tokenizer, Tokenizer};

mod bpe;
mod pretokenize;

use crate::assets::{Asset, AssetError};
use bpe::Vocabulary;
use pretokenize::Pattern;

/// Framing tokens per chat message (`<|start|>role<|message|>...<|end|>` minus the role).
pub const TOKENS_PER_MESSAGE: u32 = 3;
/// Extra tokens when a message has a `name`.
pub const TOKENS_PER_NAME: u32 = 1;
/// Extra tokens per tool call beyond its name and arguments.
pub const TOKENS_PER_TOOL_CALL: u32 = 1;
/// Tokens priming the assistant's reply, once per call.
pub const REPLY_PRIMING_TOKENS: u32 = 3;

/// A BPE encoding MemLens counts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// gpt-4o, gpt-4.1, o1/o3/o4, gpt-5 families; also the default for unknown models.
    O200kBase,
    /// gpt-4, gpt-3.5-turbo.
    Cl100kBase,
}

impl Encoding {
    /// The encoding's tiktoken name.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }

    /// The vocabulary, built once per process on first use (~130 ms for o200k): compiled in, or
    /// parsed from the host loader's bytes ([`crate::assets`]). A failure is kept too: a host
    /// that could not fetch it once is not asked again within the run.
    fn vocabulary(self) -> Result<&'static Vocabulary, &'static AssetError> {
        static O200K: OnceLock<Result<Vocabulary, AssetError>> = OnceLock::new();
        static CL100K: OnceLock<Result<Vocabulary, AssetError>> = OnceLock::new();
        let (cell, asset) = match self {
            Encoding::O200kBase => (&O200K, Asset::O200kBase),
            Encoding::Cl100kBase => (&CL100K, Asset::Cl100kBase),
        };
        cell.get_or_init(|| load_vocabulary(asset)).as_ref()
    }

    fn pattern(self) -> Pattern {
        match self {
            Encoding::O200kBase => Pattern::O200k,
            Encoding::Cl100kBase => Pattern::Cl100k,
        }
    }
}

#[cfg(feature = "embedded-assets")]
fn load_vocabulary(asset: Asset) -> Result<Vocabulary, AssetError> {
    Ok(match asset {
        Asset::Cl100kBase => Vocabulary::cl100k(),
        _ => Vocabulary::o200k(),
    })
}

#[cfg(not(feature = "embedded-assets"))]
fn load_vocabulary(asset: Asset) -> Result<Vocabulary, AssetError> {
    let bytes = crate::assets::load(asset)?;
    Vocabulary::from_tiktoken(&bytes).map_err(|reason| AssetError {
        file: asset.file_name(),
        reason,
    })
}

impl std::fmt::Display for Encoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The encoding chosen for a model, and whether the count is exact for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncodingChoice {
    /// The encoding.
    pub encoding: Encoding,
    /// True when the model is not an OpenAI model tiktoken knows: the count is an estimate.
    pub estimated: bool,
}

/// Chooses the encoding for a model name (`None`: no model in the trace, default, estimated).
pub fn encoding_for_model(model: Option<&str>) -> EncodingChoice {
    let estimated = EncodingChoice {
        encoding: Encoding::O200kBase,
        estimated: true,
    };
    let Some(model) = model else {
        return estimated;
    };
    // Provider prefixes as LiteLLM and OpenRouter write them: "openai/gpt-4o", "azure/gpt-4o".
    let bare = model.rsplit('/').next().unwrap_or(model);
    match get_tokenizer(bare) {
        Some(Tokenizer::O200kBase) => EncodingChoice {
            encoding: Encoding::O200kBase,
            estimated: false,
        },
        Some(Tokenizer::Cl100kBase) => EncodingChoice {
            encoding: Encoding::Cl100kBase,
            estimated: false,
        },
        _ => estimated,
    }
}

/// Counts tokens with one encoding.
///
/// When the encoding's vocabulary cannot be loaded (a host without compiled-in tables whose
/// loader failed, [`crate::assets`]) the counter still counts, with an estimate of one token per
/// [`ESTIMATE_BYTES_PER_TOKEN`] bytes, and its choice is marked estimated;
/// [`TokenCounter::unavailable`] says why.
#[derive(Clone, Copy)]
pub struct TokenCounter {
    choice: EncodingChoice,
    vocabulary: Result<&'static Vocabulary, &'static AssetError>,
}

/// Bytes per token of the fallback estimate (OpenAI's rule of thumb for English text).
pub const ESTIMATE_BYTES_PER_TOKEN: usize = 4;

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("choice", &self.choice)
            .finish()
    }
}

impl TokenCounter {
    /// A counter for this encoding choice. Builds the encoder on first use in the process.
    pub fn new(choice: EncodingChoice) -> TokenCounter {
        let vocabulary = choice.encoding.vocabulary();
        TokenCounter {
            choice: EncodingChoice {
                estimated: choice.estimated || vocabulary.is_err(),
                ..choice
            },
            vocabulary,
        }
    }

    /// Why this counter estimates instead of counting exactly: its vocabulary could not be
    /// loaded. None when it counts with the encoding's vocabulary.
    pub fn unavailable(&self) -> Option<&'static AssetError> {
        self.vocabulary.err()
    }

    /// A counter for a model name.
    pub fn for_model(model: Option<&str>) -> TokenCounter {
        TokenCounter::new(encoding_for_model(model))
    }

    /// The encoding and whether counts are estimates.
    pub fn choice(&self) -> EncodingChoice {
        self.choice
    }

    /// Tokens of `text`, special-token text counted as ordinary text (as the APIs do for content).
    pub fn count(&self, text: &str) -> u32 {
        if text.is_empty() {
            return 0;
        }
        let Ok(vocabulary) = self.vocabulary else {
            return saturate(text.len().div_ceil(ESTIMATE_BYTES_PER_TOKEN));
        };
        let mut tokens = 0usize;
        pretokenize::for_each_piece(self.choice.encoding.pattern(), text, |piece| {
            tokens += vocabulary.count_piece(piece.as_bytes());
        });
        saturate(tokens)
    }
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Token totals of one call, from the counted chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CallTokens {
    /// Input tokens: every input chunk's tokens plus the reply priming.
    pub input: u64,
    /// Output tokens: every output chunk's tokens.
    pub output: u64,
}

/// Fills `content_tokens` and `tokens` of every chunk of the trace with `counter`.
pub fn count_trace(trace: &mut Trace, counter: &TokenCounter) {
    for chunk in &mut trace.chunks {
        count_chunk(chunk, counter);
    }
}

/// Fills `content_tokens` and `tokens` of one chunk (its content plus its share of the chat
/// framing): what [`count_trace`] does per chunk, for hosts that add chunks one at a time.
pub fn count_chunk(chunk: &mut Chunk, counter: &TokenCounter) {
    count_chunk_with(chunk, &mut |text| counter.count(text));
}

/// [`count_chunk`] with the text counted by `count`: a host that already knows some texts' counts
/// (a followed file rebuilt from records it read before) looks them up instead of counting again.
pub fn count_chunk_with(chunk: &mut Chunk, count: &mut dyn FnMut(&str) -> u32) {
    if chunk.category == Category::Unrecorded {
        // Its tokens are an estimate from reported usage; its text only describes it.
        return;
    }
    chunk.content_tokens = count(&chunk.content);
    let mut framing = 0;
    if chunk.starts_message {
        framing += TOKENS_PER_MESSAGE;
        framing += count(chunk.meta.role.as_deref().unwrap_or(""));
        // A speaker name is sent as the message `name` only for chat messages that had one.
        if chunk.meta.dia_id.is_none() {
            if let Some(name) = chunk.meta.speaker.as_deref() {
                framing += TOKENS_PER_NAME + count(name);
            }
        }
    }
    // An action written in the assistant's text (a text-based scaffold's fenced command) was sent
    // as text: only native tool calls carry the provider's tool-call syntax.
    if chunk.category == Category::ToolCall && chunk.meta.kind.as_deref() != Some(TEXT_ACTION_KIND)
    {
        framing += TOKENS_PER_TOOL_CALL;
        framing += count(chunk.meta.tool_name.as_deref().unwrap_or(""));
    }
    chunk.tokens = chunk.content_tokens.saturating_add(framing);
}

/// Input and output token totals of every call of a counted trace.
pub fn call_tokens(trace: &Trace) -> Vec<CallTokens> {
    trace
        .calls
        .iter()
        .map(|call| CallTokens {
            input: call
                .input
                .iter()
                .map(|&id| u64::from(trace.chunk(id).tokens))
                .sum::<u64>()
                + u64::from(REPLY_PRIMING_TOKENS),
            output: call
                .output
                .iter()
                .map(|&id| u64::from(trace.chunk(id).tokens))
                .sum(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_families_map_to_their_encodings() {
        for m in [
            "gpt-4o",
            "gpt-4o-2024-08-06",
            "gpt-4.1-mini",
            "o3",
            "gpt-5",
            "openai/gpt-4o",
        ] {
            let c = encoding_for_model(Some(m));
            assert_eq!(c.encoding, Encoding::O200kBase, "{m}");
            assert!(!c.estimated, "{m}");
        }
        for m in ["gpt-4", "gpt-4-0613", "gpt-3.5-turbo"] {
            assert_eq!(
                encoding_for_model(Some(m)).encoding,
                Encoding::Cl100kBase,
                "{m}"
            );
        }
        for m in [
            Some("claude-3-5-sonnet-20241022"),
            Some("gemini-2.5-pro"),
            None,
        ] {
            let c = encoding_for_model(m);
            assert_eq!(c.encoding, Encoding::O200kBase);
            assert!(c.estimated);
        }
    }

    #[test]
    fn counts_known_strings() {
        let o200k = TokenCounter::for_model(Some("gpt-4o"));
        assert_eq!(o200k.count("hello world"), 2);
        assert_eq!(o200k.count(""), 0);
        // Special-token text in content is ordinary text, not a control token.
        assert!(o200k.count("<|endoftext|>") > 1);
        let cl100k = TokenCounter::for_model(Some("gpt-4"));
        assert_eq!(cl100k.count("hello world"), 2);
    }

    #[test]
    fn text_actions_count_as_the_text_they_were() {
        let o200k = TokenCounter::for_model(Some("gpt-4o"));
        let mut chunk = Chunk {
            id: crate::model::ChunkId(0),
            key: "m2.1".into(),
            category: Category::ToolCall,
            content: "```bash\ncat calc.py\n```".into(),
            starts_message: false,
            content_tokens: 0,
            tokens: 0,
            meta: crate::model::ChunkMeta {
                tool_name: Some("bash".into()),
                ..Default::default()
            },
        };
        count_chunk(&mut chunk, &o200k);
        let native = chunk.tokens;
        assert_eq!(native, chunk.content_tokens + TOKENS_PER_TOOL_CALL + 1);
        chunk.meta.kind = Some(TEXT_ACTION_KIND.into());
        count_chunk(&mut chunk, &o200k);
        assert_eq!(chunk.tokens, chunk.content_tokens);
    }

    fn reference(encoding: Encoding, text: &str) -> u32 {
        let core = match encoding {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        };
        saturate(core.encode_ordinary(text).len())
    }

    fn assert_counts_as_tiktoken(text: &str) {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let counter = TokenCounter::new(EncodingChoice {
                encoding,
                estimated: false,
            });
            assert_eq!(
                counter.count(text),
                reference(encoding, text),
                "{encoding:?} on {text:?}"
            );
        }
    }

    #[test]
    fn long_pieces_count_as_tiktoken() {
        // Pieces of 100 bytes and more take the heap merge.
        let letters: String = (0..3000u32)
            .map(|i| char::from(b'a' + ((i * 7 + i / 13) % 26) as u8))
            .collect();
        assert_counts_as_tiktoken(&letters);
        assert_counts_as_tiktoken(&"!?".repeat(2000));
        assert_counts_as_tiktoken(&" ".repeat(500));
        assert_counts_as_tiktoken(&"\u{4E2D}\u{6587}\u{1F600}".repeat(300));
    }

    #[test]
    fn tiktoken_files_parse_to_the_compiled_in_vocabularies() {
        // The web worker's path: the vocabulary parsed from `.tiktoken` bytes counts as the one
        // compiled in (written back out in tiktoken's format from it: every token and rank).
        for (encoding, embedded) in [
            (Encoding::O200kBase, bpe::Vocabulary::o200k()),
            (Encoding::Cl100kBase, bpe::Vocabulary::cl100k()),
        ] {
            let file = embedded.to_tiktoken();
            let parsed = bpe::Vocabulary::from_tiktoken(&file).expect("the written file parses");
            assert_eq!(parsed.len(), embedded.len(), "{encoding:?}");
            assert_eq!(parsed.to_tiktoken(), file, "{encoding:?}");
            let text = "Refund order #W2378156: the customer's \u{4E2D}\u{6587} note, 42 items!";
            let mut pieces = (0, 0);
            pretokenize::for_each_piece(encoding.pattern(), text, |p| {
                pieces.0 += parsed.count_piece(p.as_bytes());
                pieces.1 += embedded.count_piece(p.as_bytes());
            });
            assert_eq!(pieces.0, pieces.1, "{encoding:?}");
            assert_eq!(pieces.0, reference(encoding, text) as usize, "{encoding:?}");
        }
    }

    #[test]
    fn malformed_tiktoken_files_name_the_line() {
        let cases: [(&[u8], &str); 5] = [
            (b"", "no tokens"),
            (b"IQ== 0\nIg==\n", "line 2: expected `base64-token rank`"),
            (b"IQ== 0\n*** 1\n", "line 2: expected a base64 token"),
            (b"IQ== 0\r\nIg== x\r\n", "line 2: expected a rank"),
            (
                b"IQ== 0\nIQ== 1\n",
                "line 2: expected a non-empty token not listed before",
            ),
        ];
        for (file, expected) in cases {
            let error = bpe::Vocabulary::from_tiktoken(file)
                .err()
                .expect("a malformed file is refused");
            assert!(error.starts_with(expected), "{error:?} for {file:?}");
        }
        let ok =
            bpe::Vocabulary::from_tiktoken(b"IQ== 0\r\nIg== 1\n\n").expect("CRLF and blank lines");
        assert_eq!(ok.len(), 2);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        #[test]
        fn random_text_counts_as_tiktoken(text in "(\\PC|[a-z ]{1,12}|[!-/]{1,8}|\\s{1,4}){0,30}") {
            assert_counts_as_tiktoken(&text);
        }
    }
}
