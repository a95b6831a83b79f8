// Types of the `memlens` package. Hand-written; kept in step with crates/memlens-wasm.

/**
 * Built-in policies (see docs/policies.md in the repository); the package's tests check this list
 * against `builtinPolicies()`. `oracle` is for replays only: `new MemoryPool` refuses it.
 */
export type PolicyName =
  | "keep-all"
  | "window"
  | "value"
  | "value-compress"
  | "value-offload"
  | "recall"
  | "oracle"
  | "langchain-trim"
  | "anthropic-clear-tool-uses"
  | "llamaindex-memory"
  | "letta-summarize"
  | "openai-keep-last-n"
  | "swe-agent-observation-masking"
  | "swe-agent-observation-masking-10";

/** What a chunk (one part of a message) is. */
export type Category =
  | "system"
  | "user"
  | "assistant"
  | "tool_call"
  | "tool_result"
  | "reasoning"
  | "summary"
  | "preference"
  | "other";

/** A policy: a built-in name, JSON or TOML text (as exported by the web app), or an object. */
export type Policy = PolicyName | string | PolicyObject;

/** A policy object (every field optional; see `policyConfig(name)` for a complete one). */
export interface PolicyObject {
  name?: string;
  strategy?: "keep-all" | "window" | "value" | "oracle" | "langchain-trim" | "anthropic-clear-tool-uses"
    | "llamaindex-memory" | "letta-summarize" | "openai-keep-last-n" | "swe-agent-observation-masking";
  /** Window/value: evict what is worth less than this at every call, also under budget. */
  value_threshold?: number;
  /** The runs the value threshold acts in: "any" (default), "agent" (from the first tool call or result on), "conversation" (until then). */
  value_threshold_runs?: "any" | "agent" | "conversation";
  /** The runs `size_exponent` applies in, as `value_threshold_runs`. */
  size_exponent_runs?: "any" | "agent" | "conversation";
  /** The runs `cleanup` acts in, as `value_threshold_runs`. */
  cleanup_runs?: "any" | "agent" | "conversation";
  /** Window/value: no eviction until the context passes `trigger` x budget, then down to `target` x budget. */
  cleanup?: { trigger: number; target: number };
  /** Rules per tool name: keep only some JSON fields, drop some, clear after N calls, never compress. */
  tools?: Record<string, { keep_fields?: string[]; drop_fields?: string[]; clear_after_calls?: number; compress?: boolean }>;
  /** Quotas give up the least valuable units first ("value") or the oldest ("oldest", default). */
  quota_order?: "oldest" | "value";
  /** The runs the quotas act in, as `value_threshold_runs`. */
  quotas_runs?: "any" | "agent" | "conversation";
  /** The runs in which an assistant reply the model has seen goes once every id, number, date or path it holds is also in another chunk still sent (off when unset; "agent" is the usual setting). */
  evict_echoed_replies?: "any" | "agent" | "conversation";
  /** The share of the budget the context fills before `value_threshold` and `evict_echoed_replies` act (unset: from the first call; the `value` family: 0.25). */
  act_from?: number;
  /** Value strategy and value quotas give up the lowest value / tokens^e first: 1 (default) value per token, 0 value alone. */
  size_exponent?: number;
  /**
   * Evict units older than this many seconds, by the messages' own timestamps (`add`'s
   * `timestamp`, else the time they were added; "now" is the newest message's time).
   */
  max_age_seconds?: number;
  /** Units worth at least this never age out (max_age_calls, max_age_seconds). */
  age_exempt_value?: number;
  /** Value settings from a preset by key; leave `value` out then. */
  value_preset?: "default" | "support-bot" | "coding-agent" | "research";
  [setting: string]: unknown;
}

/** Any chat message object: OpenAI Chat Completions or Anthropic Messages shape. */
export type Message = { role: string; [field: string]: unknown };

export interface MemoryPoolOptions {
  /** Model name: the tokenizer (exact for OpenAI models) and the prices. Default: o200k, estimated. */
  model?: string;
  /** Token budget of the context (input tokens, reply priming included). */
  budget: number;
  /** Default "value". */
  policy?: Policy;
  /** Produces summaries for summarizing policies; without it, the summary action is unavailable. */
  summarizer?: (messages: Message[], options: { maxTokens: number }) => Promise<string> | string;
  /**
   * A pluggable scorer: called for each chunk of each added message (`part`: its position in
   * the message's chunks); a number in [0, 1] replaces the engine's value for that chunk, null
   * or undefined keeps the engine's. Protection and the invariants still hold.
   */
  scorer?: (message: Message, chunk: { chunkId: number; part: number }) => number | null | undefined;
  /** Message shape, when known; detected per message otherwise. */
  dialect?: "openai" | "anthropic";
  /**
   * Node only: a file the pool appends its trace to (native JSON Lines) after every step, so a
   * running agent can be watched with `memlens inspect` or the web app; `free()` finishes it.
   */
  traceFile?: string;
  /**
   * Default true: the pool keeps the whole run (`exportTrace()` and `setPolicy()` need it) and
   * its memory grows with every message. false: what the policy has given up for good is
   * released once written to `traceFile` (at once without one), so memory follows the context
   * and the archive; `exportTrace()` and `setPolicy()` then throw, and a summarizer is refused.
   */
  keepHistory?: boolean;
  /**
   * Default true: a message added without a `timestamp` is stamped with `Date.now()`, and a tool
   * result's latency is measured from its call's time. false: messages carry only the timestamps
   * and latencies given to `add` (for feeding recorded messages, whose times the clock does not
   * know: replayed in a burst, every tool would seem to take no time).
   */
  clock?: boolean;
}

/** What `add` knows of a message beyond its object. */
export interface AddOptions {
  /**
   * When the message was written: a Date, epoch milliseconds, or an ISO 8601 string (read as
   * MemLens reads trace timestamps: UTC when it has no offset). Default: now (see `clock`).
   * Time-based rules read it: `max_age_seconds`, a value half-life in seconds
   * (`recency_half_life_secs`, e.g. the `support-bot` preset's).
   */
  timestamp?: Date | number | string | null;
  /**
   * Milliseconds the message's tool results took to produce, for the generation-cost value
   * factor (slow results are costly to get again). Default: the time since the message with
   * their tool call was added (both timestamps known).
   */
  latencyMs?: number | null;
  /**
   * The message states a preference of the user: its text is category "preference", which
   * protection rules name (the `value` policies protect it; `window` and the incumbents' do
   * not). Refused on a system prompt.
   */
  preference?: boolean;
}

export interface ContextInfo {
  /** Input tokens of the context sent. */
  tokens: number;
  /** Input tokens if every message were sent. */
  fullTokens: number;
  /** True when even the policy's best is above the budget (protected content alone exceeds it). */
  overBudget: boolean;
  /** Chunks sent compressed, dropped, and brought back from the archive at this call. */
  compressed: number[];
  evicted: number[];
  retrieved: number[];
}

export interface PoolStats {
  policy: string;
  budget: number;
  model: string | null;
  encoding: "o200k_base" | "cl100k_base";
  tokensEstimated: boolean;
  messages: number;
  chunks: number;
  poolTokens: number;
  contextTokens: number;
  calls: number;
  dropped: number;
  compressed: number;
  overBudgetCalls: number;
  sentTokens: number;
  fullTokens: number;
  estInputCostUsd: number | null;
  fullInputCostUsd: number | null;
  reportedInputTokens: number;
  reportedOutputTokens: number;
  warnings: string[];
}

export interface Factors {
  recency: number;
  popularity: number;
  density: number;
  redundancy: number;
  category: number;
  relevance: number;
  generation_cost: number;
  pinned: number;
}

export interface Explanation {
  chunk: number;
  message: number;
  category: Category;
  tokens: number;
  status: "kept" | "compressed" | "retrieved" | "dropped" | "pending";
  reason: string;
  value: {
    chunk: number;
    factors: Factors;
    value: number;
    tokens: number;
    value_per_token: number;
    value_per_1k_tokens: number;
    explanation: string[];
  };
}

/** Provider usage: OpenAI (`prompt_tokens`...) or Anthropic (`input_tokens`, cache fields). */
export type Usage = Record<string, unknown>;

export class MemoryPool {
  constructor(options: MemoryPoolOptions);
  /** Adds one message; returns its chunk ids (one per part). */
  add(message: Message, options?: AddOptions): number[];
  addMany(messages: Message[]): number[][];
  /** The messages to send now, same shape as given. Throws if the policy needs a summary. */
  context(options?: { query?: string }): Message[];
  /** Like `context()`, calling the summarizer where the policy summarizes. */
  contextAsync(options?: { query?: string }): Promise<Message[]>;
  /** What the latest context dropped, compressed, retrieved, and its tokens. */
  readonly lastContext: ContextInfo | null;
  stats(): PoolStats;
  explain(chunkId: number): Explanation;
  /**
   * Switches to another policy without losing the run (messages, labels, past calls): the next
   * context is the one the new policy would have decided from the start. The oracle is refused.
   */
  setPolicy(policy: Policy): void;
  /** Sets a chunk's value in [0, 1] (null: the engine scores it), as a scorer would. */
  setValue(chunkId: number, value: number | null): void;
  label(chunkId: number, label: "important" | "useless" | null): void;
  recordUsage(usage: Usage): void;
  /** The run in MemLens' native JSON Lines format (open it in the web app). */
  exportTrace(): string;
  /**
   * The native-format lines not returned before (append them to a file as the run goes); the
   * newest call is held back until the next, `finish` returns the rest. Not with `traceFile`.
   */
  traceLines(options?: { finish?: boolean }): string;
  countTokens(text: string): number;
  /** Releases the wasm memory; the pool is unusable afterwards. */
  free(): void;
  [Symbol.dispose](): void;
}

/** Exact token count (o200k / cl100k by model; an encoding name is accepted). Throws on an unknown model. */
export function countTokens(text: string, model?: string): number;

export interface AnalyzeOptions {
  /** Importer name (default: sniffed). */
  format?:
    | "memlens" | "openinference" | "otel" | "locomo" | "tau-bench" | "claude-code" | "codex"
    | "gemini-cli" | "swe-agent" | "mini-swe-agent" | "openhands" | "langfuse" | "langsmith"
    | "anthropic" | "openai";
  /** Count and price as this model. */
  model?: string;
  /** Name used in error messages. */
  fileName?: string;
  /** Analyze only the trace with this index. */
  trace?: number;
}

/**
 * Imports a trace file (its bytes, gzipped or not: `x.traj.json.gz` is read as it is, up to 1 GiB
 * decompressed) and returns the web app's analysis of each trace, as plain objects
 * (`summary` with `notes` and a subagent's `parent`, `calls`, `chunks`, `compactions` with what
 * each summary kept and lost, ...: the fields of `memlens_core::analysis::Analysis`).
 */
export function analyzeTrace(input: string | Uint8Array | ArrayBuffer, options?: AnalyzeOptions): {
  format: string;
  traces: Array<Record<string, unknown>>;
  warnings: Array<{ file: string; message: string; line?: number; record?: number }>;
  warningCount: number;
};

export function builtinPolicies(): PolicyName[];
/** A policy with every setting filled in (validates it). */
export function policyConfig(policy: Policy): PolicyObject;
/** Browsers: loads the wasm module (call once, await it). A no-op in Node. */
export function init(input?: string | URL | Response | BufferSource): Promise<void>;
