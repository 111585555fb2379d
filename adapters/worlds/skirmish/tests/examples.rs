//! The skirmish example experiments parse, validate, and name settings the environment and
//! its scripted decider accept.

use mosaic_core::ExperimentSpec;
use std::path::Path;

#[test]
fn skirmish_examples_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../examples/experiments");
    let kind = mosaic_skirmish::KIND;
    let scripted = kind.scripted.expect("skirmish has a scripted decider");
    let mut operators = 0;
    for name in [
        "skirmish-symmetric",
        "skirmish-asymmetric",
        "skirmish-hops",
        "skirmish-llm",
    ] {
        let path = dir.join(format!("{name}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        let spec: ExperimentSpec = toml::from_str(&text).unwrap();
        spec.validate().unwrap();
        assert_eq!(spec.name, name);
        for op in &spec.operators {
            assert_eq!(op.env, kind.name);
            let env = (kind.make)(&op.env_settings).unwrap();
            for agent in &env.spec().agents {
                let slot = op
                    .slot_for(&agent.id)
                    .unwrap_or_else(|| panic!("{name}: no operator for {}", agent.id));
                if slot.kind == "scripted" {
                    scripted(&op.env_settings, &slot.settings).unwrap();
                }
            }
            operators += 1;
        }
    }
    assert_eq!(operators, 4 + 4 + 2 + 1);
}
