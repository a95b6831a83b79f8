//! The tau-bench file as one agent's stream of messages, shared by the pool benchmarks
//! (`memlens-bench --pool`, `pool_memory`).

/// The first system prompt, and every other message of every trajectory in order.
pub fn read(file: &str) -> Result<(serde_json::Value, Vec<serde_json::Value>), String> {
    let bytes = std::fs::read(file).map_err(|e| format!("{file}: {e}"))?;
    let records: Vec<serde_json::Value> =
        serde_json::from_slice(&bytes).map_err(|e| format!("{file}: {e}"))?;
    let mut system = None;
    let mut stream = Vec::new();
    for r in &records {
        for m in r["traj"].as_array().into_iter().flatten() {
            if m["role"] == "system" {
                system.get_or_insert_with(|| m.clone());
            } else {
                stream.push(m.clone());
            }
        }
    }
    let system = system.ok_or("no system message in the file")?;
    Ok((system, stream))
}
