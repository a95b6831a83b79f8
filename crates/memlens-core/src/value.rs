//! (being written) The value engine.
