// The JavaScript face of MemLens: wraps the wasm bindings (node.js and browser.js pass them in)
// so that messages stay the caller's own objects and errors are plain `Error`s.

const SPECIAL = 0x80000000;
// Runs `f` once the caller's synchronous code has yielded (an agent awaiting the model).
const afterYield = globalThis.setImmediate ?? ((f) => setTimeout(f, 0));
const OPTIONS = new Set(["model", "budget", "policy", "summarizer", "scorer", "dialect", "traceFile", "keepHistory", "clock"]);
const ADD_OPTIONS = new Set(["timestamp", "latencyMs", "preference"]);

const NO_ADD_OPTIONS = Object.freeze({});

// `add`'s options, checked here so that a mistake is a TypeError naming the option. A time
// crosses as epoch milliseconds, or as ISO text the wasm side reads as the importers read
// trace timestamps (UTC without an offset).
function readAddOptions(options) {
  if (typeof options !== "object") {
    throw new TypeError("add options must be an object such as { timestamp, latencyMs, preference }");
  }
  for (const key of Object.keys(options)) {
    if (!ADD_OPTIONS.has(key)) {
      throw new TypeError(`invalid add options: unknown field "${key}" (expected ${[...ADD_OPTIONS].join(", ")})`);
    }
  }
  const { timestamp: t, latencyMs, preference } = options;
  let timeMs;
  let timeText;
  if (t instanceof Date) timeMs = t.getTime();
  else if (typeof t === "number") timeMs = t;
  else if (typeof t === "string") timeText = t;
  else if (t !== undefined && t !== null) {
    throw new TypeError(`timestamp must be a Date, epoch milliseconds or an ISO 8601 string, got ${typeof t}`);
  }
  if (timeMs !== undefined && !Number.isFinite(timeMs)) {
    throw new TypeError("timestamp must be a valid Date or a finite number of epoch milliseconds");
  }
  if (latencyMs != null && (typeof latencyMs !== "number" || !Number.isFinite(latencyMs) || latencyMs < 0)) {
    throw new TypeError(`latencyMs must be a finite number of milliseconds, at least 0, got ${latencyMs}`);
  }
  if (preference != null && typeof preference !== "boolean") {
    throw new TypeError("preference must be a boolean");
  }
  return { timeMs, timeText, latencyMs: latencyMs ?? undefined, preference: preference ?? undefined };
}

// `host.appendFile(path, text)` is given by the Node entry; browsers have no files to append to.
export function makeApi(raw, host = {}) {
  /** Live memory pool: add messages as the agent produces them, ask for the context to send. */
  class MemoryPool {
    #raw;
    #messages = [];
    #summarizer;
    #scorer;
    #summaries = new Map();
    // Message index -> the patched object the latest context sent for it (see #decide).
    #patches = new Map();
    // The latest context's message references (see #decide): valid until the next context.
    #refs = new Uint32Array(256);
    // Contexts decided so far, and the latest context's list of messages with the number of the
    // context it is: a context that only appends to the latest comes as the number of messages
    // it keeps and the references of the rest (see #materialize).
    #decided = 0;
    #sent = [];
    #sentFor = -1;
    #last = null;
    #traceFile;
    #prepareQueued = false;
    // Whether a message added without a timestamp is stamped with Date.now().
    #clock = true;

    constructor(options = {}) {
      if (options === null || typeof options !== "object") {
        throw new TypeError("MemoryPool options must be an object such as { model, budget, policy }");
      }
      for (const key of Object.keys(options)) {
        if (!OPTIONS.has(key)) {
          throw new TypeError(`invalid options: unknown field "${key}" (expected ${[...OPTIONS].join(", ")})`);
        }
      }
      const { summarizer, scorer, traceFile, clock, ...rest } = options;
      if (clock !== undefined && typeof clock !== "boolean") {
        throw new TypeError("clock must be a boolean (false: messages carry only the timestamps given to add)");
      }
      if (traceFile !== undefined) {
        if (typeof traceFile !== "string") throw new TypeError("traceFile must be a file path (a string)");
        if (host.appendFile === undefined) {
          throw new TypeError("traceFile needs file access (Node); elsewhere append pool.traceLines() yourself");
        }
      }
      if (summarizer !== undefined && typeof summarizer !== "function") {
        throw new TypeError("summarizer must be an async function (messages, { maxTokens }) => string");
      }
      if (scorer !== undefined && typeof scorer !== "function") {
        throw new TypeError("scorer must be a function (message, { chunkId, part }) => number | null");
      }
      this.#summarizer = summarizer;
      this.#scorer = scorer;
      this.#raw = new raw.RawPool({ ...rest, summarizer: summarizer !== undefined });
      this.#traceFile = traceFile;
      this.#clock = clock !== false;
    }

    // With `traceFile`, what the run added goes to the file after every step.
    #appendTrace(finish) {
      if (this.#traceFile === undefined) return;
      const text = this.#pool().traceLines(finish);
      if (text.length > 0) host.appendFile(this.#traceFile, text);
    }

    /**
     * The run's native-format lines (JSON Lines) not returned before: append each result to a
     * file and `memlens inspect` or the web app reads the run so far at any point. The newest
     * call is held back until the next one (its usage may still be recorded), tool pairs until
     * complete; `{ finish: true }` returns the rest. With the `traceFile` option the pool does
     * this itself (and finishes the file on `free()`).
     */
    traceLines(options) {
      if (this.#traceFile !== undefined) {
        throw new Error("this pool writes its trace to traceFile itself; traceLines() would take lines from it");
      }
      return this.#pool().traceLines(options?.finish === true);
    }

    #pool() {
      if (this.#raw === undefined) throw new Error("this MemoryPool was freed");
      return this.#raw;
    }

    /**
     * Adds one message (OpenAI- or Anthropic-style object); returns its chunk ids. Options:
     * `timestamp` (a Date, epoch milliseconds or an ISO 8601 string; default: now, unless the
     * pool's `clock` is off), `latencyMs` (its tool results' latency; default: the time since
     * their tool call was added), `preference: true` (its text is a preference of the user).
     */
    add(message, options) {
      const o = options === undefined || options === null ? NO_ADD_OPTIONS : readAddOptions(options);
      let timeMs = o.timeMs;
      if (timeMs === undefined && o.timeText === undefined && this.#clock) timeMs = Date.now();
      // As JSON text: one string crosses into wasm instead of a call per field, and the text
      // is what the provider's API is sent. What JSON.stringify cannot write (a cycle, a BigInt,
      // a value too deep) goes as an object, to be refused with a clear error.
      let text;
      try {
        text = JSON.stringify(message);
      } catch {
        text = undefined;
      }
      const raw = this.#pool();
      const ids = Array.from(
        text === undefined
          ? raw.add(message, timeMs, o.timeText, o.latencyMs, o.preference)
          : raw.addJson(text, timeMs, o.timeText, o.latencyMs, o.preference),
      );
      this.#messages.push(message);
      this.#appendTrace(false);
      if (this.#scorer !== undefined) {
        ids.forEach((chunkId, part) => {
          const value = this.#scorer(message, { chunkId, part });
          if (value !== null && value !== undefined) this.setValue(chunkId, value);
        });
      }
      return ids;
    }

    /**
     * Sets a chunk's value (a number in [0, 1], or null to let the engine score it), as a
     * scorer would: policies that read values use it; protection and the invariants still hold.
     */
    setValue(chunkId, value) {
      if (value !== null && (typeof value !== "number" || !Number.isFinite(value))) {
        throw new TypeError(`a value must be a finite number in [0, 1] or null, got ${value}`);
      }
      this.#pool().setValue(chunkId, value ?? undefined);
    }

    /** Adds messages in order; returns the chunk ids of each. */
    addMany(messages) {
      if (!Array.isArray(messages)) throw new TypeError("addMany expects an array of messages");
      return messages.map((m) => this.add(m));
    }

    #decide(options) {
      const query = options?.query;
      if (query !== undefined && typeof query !== "string") throw new TypeError("query must be a string");
      const raw = this.#pool();
      const c = JSON.parse(raw.contextJson(query));
      c.seq = this.#decided++;
      // The message references come apart as numbers: copying them costs less than parsing
      // hundreds of numbers from the text. One array serves every context (grown when a
      // context has more): a new one per context was garbage for the collector every turn.
      let count = raw.fillContextRefs(this.#refs);
      if (count > this.#refs.length) {
        this.#refs = new Uint32Array(Math.max(count, 2 * this.#refs.length));
        count = raw.fillContextRefs(this.#refs);
      }
      c.refs = this.#refs.subarray(0, count);
      // A patched message sent again unchanged comes as its index only: it is the object the
      // previous context had. Only this context's patches are kept for the next; most contexts
      // patch nothing, and the emptied map serves the next one. An extended context keeps the
      // latest one's patches (all still sent) and adds its own.
      if (c.kept > 0) {
        for (const extra of c.extras) if (extra.kind === "patched") this.#patches.set(extra.message, extra.value);
      } else if (c.extras.length === 0) {
        this.#patches.clear();
      } else {
        const patches = new Map();
        for (let i = 0; i < c.extras.length; i++) {
          const extra = c.extras[i];
          if (extra.kind === "samePatch") {
            const value = this.#patches.get(extra.message);
            if (value === undefined) throw new Error(`memlens: patched message ${extra.message} is not held (a bug)`);
            c.extras[i] = { kind: "patched", message: extra.message, value };
            patches.set(extra.message, value);
          } else if (extra.kind === "patched") {
            patches.set(extra.message, extra.value);
          }
        }
        this.#patches = patches;
      }
      this.#appendTrace(false);
      this.#prepareAfterYield();
      return c;
    }

    // Value work (the analysis of each message, and of what the agent's replies used) waits
    // until a context ranks by value. What this context left queued is done once the caller
    // yields, while the agent waits for the model, so the next turn does only its own new
    // messages' work. The decisions are the same either way (BENCHMARKS.md).
    #prepareAfterYield() {
      if (this.#prepareQueued) return;
      this.#prepareQueued = true;
      afterYield(() => {
        this.#prepareQueued = false;
        if (this.#raw === undefined) return;
        try {
          this.#raw.prepare();
        } catch {
          // No one to report to here: the pool's next call meets the same failure and throws.
        }
      });
    }

    // The messages of context `c`. One that only appends to the latest (`c.kept > 0`; most
    // contexts under budget) extends the list kept from it in place, instead of converting
    // hundreds of references again; the caller gets a copy. A context never extends one with
    // summaries, so the latest is always materialized when its successor is decided (a
    // contextAsync awaiting its summarizer is not the latest for long, and is not kept).
    #materialize(c, summaryText) {
      const kept = c.kept;
      let out;
      if (kept > 0) {
        if (this.#sentFor !== c.seq - 1 || this.#sent.length !== kept) {
          throw new Error("memlens: the context extends one that is not held (a bug)");
        }
        out = this.#sent;
        out.length = kept + c.refs.length;
      } else {
        out = new Array(c.refs.length);
      }
      for (let i = 0; i < c.refs.length; i++) {
        const r = c.refs[i];
        if (r < SPECIAL) {
          out[kept + i] = this.#messages[r];
        } else {
          const extra = c.extras[r - SPECIAL];
          out[kept + i] = extra.kind === "patched" ? extra.value : summaryText(extra);
        }
      }
      if (c.seq === this.#decided - 1) {
        this.#sent = out;
        this.#sentFor = c.seq;
      }
      this.#last = {
        tokens: c.tokens,
        fullTokens: c.fullTokens,
        overBudget: c.overBudget,
        compressed: Array.from(c.compressed),
        evicted: Array.from(c.evicted),
        retrieved: Array.from(c.retrieved),
      };
      // A pool that does not keep its history released these: no context refers to them again.
      for (const m of c.releasedMessages) this.#messages[m] = undefined;
      return out === this.#sent ? out.slice() : out;
    }

    /**
     * The messages to send now: the very objects added where kept as they were, patched copies
     * where parts were compressed or dropped (the same copy again while its patch is unchanged).
     * Throws when the policy wants a summary: use `contextAsync()` with a summarizer.
     */
    context(options) {
      const c = this.#decide(options);
      return this.#materialize(c, () => {
        throw new Error("the policy summarized old messages: call `await pool.contextAsync()`");
      });
    }

    /** Like `context()`, producing summaries with the summarizer given to the constructor. */
    async contextAsync(options) {
      const c = this.#decide(options);
      // Its own copy: another context may be decided while the summarizer runs.
      c.refs = c.refs.slice();
      const texts = new Map();
      let delta = 0;
      for (const extra of c.extras) {
        if (extra.kind !== "summary") continue;
        const key = extra.covers.join(",");
        let text = this.#summaries.get(key);
        if (text === undefined) {
          const covered = extra.covers.map((i) => this.#messages[i]);
          text = await this.#summarizer(covered, { maxTokens: extra.tokens });
          if (typeof text !== "string") throw new TypeError("the summarizer must return a string");
          this.#summaries.set(key, text);
        }
        const message = { role: "user", content: `[Summary of earlier conversation]\n${text}` };
        delta += this.#pool().countTokens(message.content) + 4 - extra.tokens;
        texts.set(extra, message);
      }
      const out = this.#materialize(c, (extra) => texts.get(extra));
      this.#last.tokens += delta;
      this.#last.overBudget = this.#last.tokens > this.stats().budget;
      return out;
    }

    /** Tokens, budget and what the latest `context()` dropped, compressed or retrieved. */
    get lastContext() {
      return this.#last;
    }

    /** Running totals: tokens in the pool and in context, dropped, compressed, cost, over-budget. */
    stats() {
      return this.#pool().stats();
    }

    /** Value factors of one chunk and why it was kept or dropped. */
    explain(chunkId) {
      return this.#pool().explain(chunkId);
    }

    /**
     * Switches to another policy (a built-in name, JSON/TOML text or a policy object) without
     * losing the run: messages, labels and past calls stay, and the next context is the one the
     * new policy would have decided had it been used from the start.
     */
    setPolicy(policy) {
      this.#pool().setPolicy(policy);
    }

    /** Labels a chunk "important" (kept) or "useless"; null clears the label. */
    label(chunkId, label) {
      this.#pool().label(chunkId, label ?? undefined);
    }

    /** Records the provider's reported usage (OpenAI or Anthropic shape) of the latest call. */
    recordUsage(usage) {
      this.#pool().recordUsage(usage);
      this.#appendTrace(false);
    }

    /** The run so far in the native MemLens format (JSON Lines): open it in the web app. */
    exportTrace() {
      return this.#pool().exportTrace();
    }

    /** Tokens of a text with this pool's encoding. */
    countTokens(text) {
      if (typeof text !== "string") throw new TypeError("countTokens expects a string");
      return this.#pool().countTokens(text);
    }

    /** Releases the wasm memory. The pool cannot be used afterwards. */
    free() {
      if (this.#raw !== undefined) {
        this.#appendTrace(true);
        this.#raw.free();
        this.#raw = undefined;
        this.#messages = [];
        this.#patches = new Map();
      }
    }

    [Symbol.dispose]() {
      this.free();
    }
  }

  if (Symbol.dispose === undefined) {
    // Node 18/20 have no Symbol.dispose: `using` is unavailable there anyway.
    delete MemoryPool.prototype[Symbol.dispose];
  }

  function countTokens(text, model = "gpt-4o") {
    if (typeof text !== "string") throw new TypeError("countTokens expects a string");
    return raw.countTokens(text, model);
  }

  function analyzeTrace(input, options) {
    const bytes = typeof input === "string" ? new TextEncoder().encode(input) : toBytes(input);
    return raw.analyzeTrace(bytes, options);
  }

  function toBytes(input) {
    if (input instanceof Uint8Array) return input;
    if (input instanceof ArrayBuffer) return new Uint8Array(input);
    if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    throw new TypeError("analyzeTrace expects a string, a Uint8Array or an ArrayBuffer");
  }

  return {
    MemoryPool,
    countTokens,
    analyzeTrace,
    builtinPolicies: () => raw.builtinPolicies(),
    policyConfig: (policy) => raw.policyConfig(policy),
  };
}
