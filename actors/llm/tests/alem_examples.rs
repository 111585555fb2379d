//! ALEM's example experiments (`examples/experiments/alem-*.toml`) parse and validate, their
//! environments accept their settings, and every language-model slot's settings parse and
//! name a template that loads. No model is called.

use mosaic_core::ExperimentSpec;
use mosaic_core::experiment::parse_settings;
use mosaic_llm::LlmSettings;
use mosaic_llm::prompt::Template;
use std::path::Path;

#[test]
fn alem_examples_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/experiments");
    let registry = mosaic_adapters::in_process_envs();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("alem-") && name.ends_with(".toml"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "alem-ablations.toml",
            "alem-calibration.toml",
            "alem-heterogeneous.toml",
            "alem-homogeneous.toml"
        ]
    );
    let mut slots = 0;
    for name in &names {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let spec: ExperimentSpec = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        spec.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(format!("{}.toml", spec.name), *name);
        for op in &spec.operators {
            let env = registry
                .make(&op.env, &op.env_settings)
                .unwrap_or_else(|e| panic!("{name} {}: {e}", op.id));
            for agent in &env.spec().agents {
                let slot = op.slot_for(&agent.id).unwrap();
                assert_eq!(slot.kind, "llm", "{name} {}", op.id);
                let settings: LlmSettings = parse_settings(&slot.settings)
                    .unwrap_or_else(|e| panic!("{name} {} {}: {e}", op.id, agent.id));
                Template::builtin_or(settings.template.as_deref()).unwrap();
                slots += 1;
            }
        }
    }
    // Three agents in each of 3 + 3 + 6 operators, and 1 + 3 + 3 + 3 in the calibration.
    assert_eq!(slots, 46);
}
