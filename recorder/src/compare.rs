//! Comparing two runs: do they hold the same trajectories?
//!
//! Complete units are compared in order (operator, episode, then step and agent). Before
//! comparing, records lose the fields allowed to differ: the volatile ones
//! ([`mosaic_core::record::VOLATILE_FIELDS`]: times and durations) and the run identity
//! (`run_id`, and `episode_id`, which contains it).

use crate::error::Result;
use crate::run_dir::{Records, RunDir};
use crate::store::Unit;
use serde::Serialize;
use serde_json::Value;

/// Fields naming the run, which differ between any two runs.
const IDENTITY_FIELDS: &[&str] = &["run_id", "episode_id"];

/// Where two runs first differ.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Divergence {
    /// The unit.
    pub unit: Unit,
    /// What differs: `episode`, `step N agent M`, `missing in A`, ...
    pub location: String,
    /// Differing fields as (path, value in A, value in B).
    pub fields: Vec<(String, Value, Value)>,
}

/// The result of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Complete units compared and equal.
    pub equal_units: u64,
    /// Step records compared and equal.
    pub equal_step_records: u64,
    /// Whether the two experiments (as run) are the same.
    pub same_experiment: bool,
    /// The first difference, `None` when the trajectories are the same.
    pub divergence: Option<Divergence>,
}

fn normalise<T: Serialize>(record: &T) -> Result<Value> {
    let mut value = serde_json::to_value(record)?;
    mosaic_core::record::strip_volatile(&mut value);
    if let Value::Object(map) = &mut value {
        for field in IDENTITY_FIELDS {
            map.remove(*field);
        }
    }
    Ok(value)
}

/// Paths of the values that differ between `a` and `b`.
fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<(String, Value, Value)>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                diff(
                    &child,
                    x.get(key).unwrap_or(&Value::Null),
                    y.get(key).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}[{i}]"), p, q, out);
            }
        }
        _ if a != b => out.push((path.to_owned(), a.clone(), b.clone())),
        _ => {}
    }
}

/// Compares the complete units of two runs, each with its records (from
/// [`RunDir::records`], or its store).
pub fn compare(a: (&RunDir, &Records), b: (&RunDir, &Records)) -> Result<Comparison> {
    let same_experiment =
        normalise(&a.0.manifest().experiment)? == normalise(&b.0.manifest().experiment)?;
    let (a, b) = (a.1, b.1);
    let mut units_a = a.units()?;
    let mut units_b = b.units()?;
    units_a.sort();
    units_b.sort();
    let mut comparison = Comparison {
        equal_units: 0,
        equal_step_records: 0,
        same_experiment,
        divergence: None,
    };
    let (mut i, mut j) = (0, 0);
    while i < units_a.len() || j < units_b.len() {
        let missing = match (units_a.get(i), units_b.get(j)) {
            (Some(x), Some(y)) if x < y => Some((x.clone(), "complete in A only")),
            (Some(x), Some(y)) if y < x => Some((y.clone(), "complete in B only")),
            (Some(x), None) => Some((x.clone(), "complete in A only")),
            (None, Some(y)) => Some((y.clone(), "complete in B only")),
            _ => None,
        };
        if let Some((unit, location)) = missing {
            comparison.divergence = Some(Divergence {
                unit,
                location: location.to_owned(),
                fields: Vec::new(),
            });
            return Ok(comparison);
        }
        let unit = units_a[i].clone();
        if let Some(divergence) = compare_unit(a, b, &unit, &mut comparison.equal_step_records)? {
            comparison.divergence = Some(divergence);
            return Ok(comparison);
        }
        comparison.equal_units += 1;
        i += 1;
        j += 1;
    }
    Ok(comparison)
}

fn compare_unit(
    a: &Records,
    b: &Records,
    unit: &Unit,
    equal: &mut u64,
) -> Result<Option<Divergence>> {
    let steps_a = a.steps_of(unit)?;
    let steps_b = b.steps_of(unit)?;
    let divergence = |location: String, fields| Divergence {
        unit: unit.clone(),
        location,
        fields,
    };
    for index in 0..steps_a.len().max(steps_b.len()) {
        let (x, y) = match (steps_a.get(index), steps_b.get(index)) {
            (Some(x), Some(y)) => (x, y),
            (Some(x), None) | (None, Some(x)) => {
                let side = if steps_a.len() > steps_b.len() {
                    "A"
                } else {
                    "B"
                };
                return Ok(Some(divergence(
                    format!("step {} agent {}: only in {side}", x.step_index, x.agent_id),
                    Vec::new(),
                )));
            }
            (None, None) => break,
        };
        let (nx, ny) = (normalise(x)?, normalise(y)?);
        if nx != ny {
            let mut fields = Vec::new();
            diff("", &nx, &ny, &mut fields);
            return Ok(Some(divergence(
                format!("step {} agent {}", x.step_index, x.agent_id),
                fields,
            )));
        }
        *equal += 1;
    }
    let (x, y) = (a.episode(unit)?, b.episode(unit)?);
    // Both are complete in their runs: an episode record missing here is a torn store.
    let (nx, ny) = (normalise(&x)?, normalise(&y)?);
    if nx != ny {
        let mut fields = Vec::new();
        diff("", &nx, &ny, &mut fields);
        return Ok(Some(divergence("episode record".to_owned(), fields)));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RunStore;
    use crate::synthetic;

    fn pair(run: &(RunDir, Records)) -> (&RunDir, &Records) {
        (&run.0, &run.1)
    }

    #[test]
    fn same_seeds_same_trajectories_and_the_first_difference_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, base: u64, episodes: u32| {
            let manifest = synthetic::manifest(name, &["a", "b"], episodes, base);
            synthetic::write_run(&dir.path().join(name), &manifest, 6, 2).unwrap()
        };
        // From the stores, as a writer holds them.
        let store = |(run, store): (RunDir, RunStore)| (run, Records::Store(Box::new(store)));
        let one = store(write("one", 5, 3));
        let two = store(write("two", 5, 3));
        let result = compare(pair(&one), pair(&two)).unwrap();
        assert_eq!(result.divergence, None);
        assert_eq!((result.equal_units, result.equal_step_records), (6, 6 * 12));
        assert!(result.same_experiment);

        // Other seeds from episode 0 on: the first step record differs.
        let other = store(write("other", 6, 3));
        let result = compare(pair(&one), pair(&other)).unwrap();
        let divergence = result.divergence.unwrap();
        assert_eq!(divergence.unit, Unit::new("a", 0));
        assert_eq!(divergence.location, "step 0 agent green_0");
        assert!(
            divergence.fields.iter().any(|(path, _, _)| path == "seed"),
            "{divergence:?}"
        );
        assert!(!result.same_experiment);

        let shorter = store(write("shorter", 5, 2));
        let divergence = compare(pair(&one), pair(&shorter))
            .unwrap()
            .divergence
            .unwrap();
        assert_eq!(divergence.unit, Unit::new("a", 2));
        assert_eq!(divergence.location, "complete in A only");

        // From the logs, as readers of finished runs read them: the same answers.
        let logs = |(run, records): (RunDir, Records)| {
            drop(records);
            synthetic::wait_for_unlock(&run.store_path()).unwrap();
            let records = run.records().unwrap();
            assert!(matches!(records, Records::Logs { .. }));
            (run, records)
        };
        let (one, two, other) = (logs(one), logs(two), logs(other));
        let result = compare(pair(&one), pair(&two)).unwrap();
        assert_eq!(result.divergence, None);
        assert_eq!((result.equal_units, result.equal_step_records), (6, 6 * 12));
        let divergence = compare(pair(&one), pair(&other))
            .unwrap()
            .divergence
            .unwrap();
        assert_eq!(
            (divergence.unit, divergence.location.as_str()),
            (Unit::new("a", 0), "step 0 agent green_0")
        );
    }
}
