//! The coordination-world example experiments parse, validate, and name settings the
//! environment and its scripted decider accept.

use mosaic_core::ExperimentSpec;
use std::path::Path;

#[test]
fn coordination_examples_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../examples/experiments");
    let mut registry = mosaic_core::EnvRegistry::default();
    registry.register(mosaic_coord::kind());
    let mut checked = 0;
    for name in ["coord-easy", "coord-medium", "coord-hard", "coord-mixed"] {
        let path = dir.join(format!("{name}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        let spec: ExperimentSpec = toml::from_str(&text).unwrap();
        spec.validate().unwrap();
        assert_eq!(spec.name, name);
        for op in &spec.operators {
            let env = registry.make(&op.env, &op.env_settings).unwrap();
            let scripted = registry.get(&op.env).unwrap().scripted.unwrap();
            for agent in &env.spec().agents {
                let slot = op.slot_for(&agent.id).unwrap();
                if slot.kind == "scripted" {
                    scripted(&op.env_settings, &slot.settings).unwrap();
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 7);
}
