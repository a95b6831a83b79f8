//! Integration tests live in `it/`; fixtures in `fixtures/`.
