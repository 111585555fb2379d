//! The `alem` template's achievement list on the real coordination world: it is the one
//! the world's `scoring` setting counts, at every disclosure level.

use mosaic_core::{EnvSpec, Settings};
use mosaic_llm::parser::OutputFormat;
use mosaic_llm::prompt::{
    CoordinationLevel, Disclosure, Identity, PromptBuilder, PromptOptions, PromptOrder, Template,
};
use std::sync::Arc;

fn coord_spec(settings: serde_json::Value) -> EnvSpec {
    let settings: Settings = serde_json::from_value(settings).unwrap();
    mosaic_adapters::in_process_envs()
        .make("coord-world", &settings)
        .unwrap()
        .spec()
        .clone()
}

fn system_prompt(spec: &EnvSpec, disclosure: Disclosure) -> String {
    let template = Arc::new(Template::builtin_or(Some("alem")).unwrap());
    let identity = Identity::of(spec, 1, None, &template);
    let options = PromptOptions {
        format: OutputFormat::Tagged,
        coordination: CoordinationLevel::Emergent,
        scope: None,
        message_cap: 0,
        scratchpad_cap: 0,
        order: PromptOrder::StableFirst,
        disclosure,
        max_tokens: 512,
    };
    PromptBuilder::new(template, options, spec, &identity)
        .system()
        .to_owned()
}

/// The lines between `<achievements>`'s heading and its end.
fn achievements(system: &str) -> Vec<String> {
    let start = system
        .find("<achievements>\n## Achievements\n")
        .unwrap_or_else(|| panic!("no achievement list in\n{system}"));
    let list = &system[start..];
    let end = list.find("</achievements>").unwrap();
    list[..end].lines().skip(2).map(str::to_owned).collect()
}

#[test]
fn the_achievement_list_follows_the_scoring_mode() {
    let compact = coord_spec(serde_json::json!({ "preset": "hard" }));
    let alem = coord_spec(serde_json::json!({ "preset": "hard", "scoring": "alem" }));
    let compact_list = achievements(&system_prompt(&compact, Disclosure::Full));
    let alem_list = achievements(&system_prompt(&alem, Disclosure::Full));

    // The compact scale: this world's 22 base and 23 coordination achievements.
    assert_eq!(compact_list.len(), 45, "{compact_list:?}");
    assert_eq!(compact_list[0], "Collect Wood");
    for name in ["Coord Team Soft", "Coord Mine Wood Hard", "Make Iron Sword"] {
        assert!(
            compact_list.iter().any(|n| n == name),
            "{name}: {compact_list:?}"
        );
    }
    assert!(!compact_list.iter().any(|n| n == "Collect Food"));

    // ALEM's scale: ALEM's names, only what this world lets an agent earn (no wood
    // mining, which ALEM lacks; no further floors, armour or beacons, which this world
    // lacks).
    for name in [
        "Collect Food",
        "Make Diamond Pickaxe",
        "Coord 3 Agents Soft",
        "Coord 3 Agents Hard",
        "Coord Diamond Sword",
    ] {
        assert!(alem_list.iter().any(|n| n == name), "{name}: {alem_list:?}");
    }
    for name in [
        "Coord Team Soft",
        "Coord Mine Wood Hard",
        "Make Iron Armour",
        "Enter Dungeon",
        "Coord Build Beacon",
    ] {
        assert!(
            !alem_list.iter().any(|n| n == name),
            "{name}: {alem_list:?}"
        );
    }
    // 25 base (ALEM's 23 basic ones this world has, the two diamond tools) and 21
    // coordination achievements (ALEM's 27 less sapphire and ruby mining, the beacon
    // and diamond armour).
    assert_eq!(alem_list.len(), 46, "{alem_list:?}");
    assert_eq!(alem_list[0], "Collect Wood");
    // Base first, then coordination, as ALEM lists them.
    let first_coordination = alem_list
        .iter()
        .position(|n| n.starts_with("Coord"))
        .unwrap();
    assert!(
        alem_list[first_coordination..]
            .iter()
            .all(|n| n.starts_with("Coord") || n.starts_with("Handover"))
    );

    // Kept at every disclosure level.
    for disclosure in [Disclosure::NoCoordination, Disclosure::NoEnvironment] {
        assert_eq!(achievements(&system_prompt(&alem, disclosure)), alem_list);
        assert_eq!(
            achievements(&system_prompt(&compact, disclosure)),
            compact_list
        );
    }

    // Two agents have no whole-team achievements to earn, so none is listed.
    let pair = coord_spec(serde_json::json!({ "agents": 2, "scoring": "alem" }));
    let pair_list = achievements(&system_prompt(&pair, Disclosure::Full));
    assert!(
        !pair_list.iter().any(|n| n.starts_with("Coord 3 Agents")),
        "{pair_list:?}"
    );
}
