//! (being written) The reference detector: which later outputs used which earlier chunks.
