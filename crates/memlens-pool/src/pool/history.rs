//! The run's history: written out (the whole trace, or its lines as the run goes) and, in a pool
//! that does not keep it, let go of once written or given up for good.

use super::{Pool, PoolError};

impl Pool {
    /// The run so far in the native MemLens format (JSON Lines), loadable in the web app.
    /// Refused when the pool does not keep its history.
    pub fn export(&self) -> Result<String, PoolError> {
        if !self.options.keep_history {
            return Err(PoolError::HistoryNotKept(
                "export",
                ": write the run as it goes with trace lines (traceFile / trace_file)",
            ));
        }
        let trace = self.builder.trace().clone();
        Ok(memlens_import::native::write(std::slice::from_ref(&trace)))
    }

    /// The native-format lines of the run that earlier calls did not return: appended to a
    /// file as the agent runs, they make a file that `memlens inspect` or the web app reads at
    /// any point. The newest call is held back until the next one (its usage may still be
    /// reported), and tool pairs until they are complete; `finish` returns the rest. The
    /// concatenation of every result, the last with `finish`, imports as [`Pool::export`] does.
    ///
    /// Without `keep_history`, ask for them from the start (before the first context): a pool
    /// that released chunks before any trace line was asked for refuses, as its trace can no
    /// longer be written whole.
    pub fn trace_lines(&mut self, finish: bool) -> Result<String, PoolError> {
        if self.released_unwritten {
            return Err(PoolError::HistoryNotKept(
                "trace_lines (asked for after chunks were released unwritten)",
                ": ask for trace lines from the start (traceFile / trace_file)",
            ));
        }
        let lines = self.appender.lines(self.builder.trace(), finish);
        if !self.options.keep_history {
            self.drop_trace_front();
        }
        Ok(lines)
    }

    /// Releases the messages whose every chunk the engine has forgotten (no context will
    /// refer to them again).
    pub(super) fn release_forgotten(&mut self) {
        for id in self.engine.take_forgotten() {
            if self.dropped.remove(&id) {
                self.dropped_forgotten += 1;
            }
            let m = self.chunk_message[id.index()] as usize;
            self.released[m] += 1;
            let whole = self.messages[m]
                .as_ref()
                .is_some_and(|stored| self.released[m] as usize == stored.chunks.len());
            if whole {
                self.messages[m] = None;
                self.message_parts[m] = 0;
                self.newly_released.push(m as u32);
            }
        }
    }

    /// Drops from the trace being built what no longer needs to be held (a pool that does not
    /// keep its history): what `trace_lines` has written, or, when the host never asked for
    /// trace lines, everything but the newest call (its usage may still come) and the tool
    /// calls still waiting for their results.
    pub(super) fn drop_trace_front(&mut self) {
        let trace = self.builder.trace();
        if self.appender.started() {
            let (chunks, calls, pairs) = (
                self.appender.chunks_written(),
                self.appender.calls_written(),
                self.appender.pairs_written(),
            );
            self.builder.drop_front(chunks, calls, pairs);
            self.appender.dropped_front(chunks, calls, pairs);
        } else {
            let (chunks, calls) = (trace.chunks.len(), trace.calls.len().saturating_sub(1));
            if chunks + calls > 0 {
                self.released_unwritten = true;
            }
            self.builder.drop_front(chunks, calls, 0);
            self.builder.drop_complete_pairs();
        }
    }
}
