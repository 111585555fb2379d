//! Benchmark of the LLM operators against the local model (written below).
fn main() {}
