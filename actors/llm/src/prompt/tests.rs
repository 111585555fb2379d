use super::*;
use mosaic_core::{Action, AgentSpec, ObsRequest, Stepping};
use std::collections::VecDeque;
use std::sync::Arc;

fn spec() -> EnvSpec {
    let agent = |id: &str, team: &str| AgentSpec {
        id: id.into(),
        team: Some(team.into()),
        role: None,
    };
    EnvSpec {
        name: "soccer".into(),
        agents: vec![
            agent("green_0", "green"),
            agent("green_1", "green"),
            agent("blue_0", "blue"),
        ],
        action_labels: vec!["noop".into(), "forward".into(), "pickup".into()],
        default_action: Action(0),
        stepping: Stepping::Simultaneous,
        max_steps: None,
        symbolic_shape: None,
        offers: ObsRequest::ALL,
        descriptions: Default::default(),
    }
}

fn options(format: OutputFormat) -> PromptOptions {
    PromptOptions {
        format,
        coordination: CoordinationLevel::RoleBased,
        scope: Some(Scope::Team),
        message_cap: 50,
        scratchpad_cap: 80,
        order: PromptOrder::StableFirst,
        disclosure: Disclosure::Full,
        max_tokens: 256,
    }
}

/// `spec()` renamed: the same agents in another environment.
fn spec_named(name: &str) -> EnvSpec {
    EnvSpec {
        name: name.into(),
        ..spec()
    }
}

fn system_prompt(template: &Arc<Template>, env: &str, options: PromptOptions) -> String {
    system_prompt_of(template, &spec_named(env), options)
}

fn system_prompt_of(template: &Arc<Template>, spec: &EnvSpec, options: PromptOptions) -> String {
    let identity = Identity::of(spec, 0, None, template);
    PromptBuilder::new(template.clone(), options, spec, &identity)
        .system()
        .to_owned()
}

#[test]
fn soccer_prompts_are_unchanged() {
    let template = Arc::new(Template::builtin().unwrap());
    let system = system_prompt(&template, "soccer-2v2", options(OutputFormat::Json));
    let expected = "You are green_0, an agent in the multi-agent game \"soccer-2v2\". \
        You play for team green with green_1; your opponents are blue_0.\n\
        Each turn you receive an observation and choose exactly one of the legal actions.\
        Your role is attacker. Play that role, tell your teammates when you need help, and \
        leave the other roles to them.\n\
        Actions:\n- noop\n- forward\n- pickup\n\n\
        Answer with one JSON object: {\"action\": \"ONE LEGAL ACTION\", \"message\": \
        \"up to 50 characters to your team, or empty; start with @agent_id to address one \
        agent\", \"scratchpad\": \"private notes up to 80 characters that replace your \
        previous notes, or empty to keep them\"}";
    assert_eq!(system, expected);
    let hints = PromptOptions {
        coordination: CoordinationLevel::Hints,
        ..options(OutputFormat::Json)
    };
    let system = system_prompt(&template, "soccer-2v2", hints);
    assert!(
        system.contains("support whoever is closest to the goal"),
        "{system}"
    );
    // Disclosure levels change nothing where the environment has no texts for them.
    for disclosure in [Disclosure::NoCoordination, Disclosure::NoEnvironment] {
        let options = PromptOptions {
            disclosure,
            ..options(OutputFormat::Json)
        };
        assert_eq!(system_prompt(&template, "soccer-2v2", options), expected);
    }
}

#[test]
fn the_roles_the_environment_gives_come_before_the_default_order() {
    let template = Arc::new(Template::builtin().unwrap());
    let mut coord = spec_named("coord-world");
    coord.agents[0].role = Some("miner".into());
    coord.agents[1].role = Some("warrior".into());
    let role = |agent: usize, slot: Option<&str>| Identity::of(&coord, agent, slot, &template).role;
    assert_eq!(role(0, None).as_deref(), Some("miner"));
    assert_eq!(role(1, None).as_deref(), Some("warrior"));
    // The slot's own setting still wins; an agent the world gives no role keeps the default.
    assert_eq!(role(0, Some("forager")).as_deref(), Some("forager"));
    assert_eq!(role(2, None).as_deref(), Some("warrior"));
    let prompt = PromptBuilder::new(
        template.clone(),
        options(OutputFormat::Json),
        &coord,
        &Identity::of(&coord, 0, None, &template),
    );
    let system = prompt.system();
    assert!(system.contains("You are the team's miner."), "{system}");
}

#[test]
fn coord_world_has_its_own_roles_and_coordination_texts() {
    let template = Arc::new(Template::builtin().unwrap());
    let coord = spec_named("coord-world");
    let roles: Vec<_> = (0..3)
        .map(|i| Identity::of(&coord, i, None, &template).role)
        .collect();
    // Team order: green_0 and green_1 are the team, blue_0 alone in its own.
    assert_eq!(roles[0].as_deref(), Some("warrior"));
    assert_eq!(roles[1].as_deref(), Some("forager"));
    assert_eq!(roles[2].as_deref(), Some("warrior"));
    let role_based = system_prompt(&template, "coord-world", options(OutputFormat::Json));
    assert!(
        role_based.contains("You are the team's warrior."),
        "{role_based}"
    );
    assert!(!role_based.contains("attacker"), "{role_based}");
    let hints = PromptOptions {
        coordination: CoordinationLevel::Hints,
        ..options(OutputFormat::Json)
    };
    let hints = system_prompt(&template, "coord-world", hints);
    assert!(hints.contains("split the work by role"), "{hints}");
    assert!(!hints.contains("closest to the goal"), "{hints}");
    // Any other environment keeps the texts for every environment.
    let other = system_prompt(&template, "skirmish", options(OutputFormat::Json));
    assert!(other.contains("Your role is attacker."), "{other}");
}

#[test]
fn the_alem_template_discloses_by_level() {
    let template = Arc::new(Template::builtin_or(Some("alem")).unwrap());
    let mut spec = spec_named("coord-world");
    spec.descriptions.insert(
        "achievements".into(),
        "Collect Wood\nCoord Build Forge".into(),
    );
    let at = |disclosure, format| {
        let options = PromptOptions {
            disclosure,
            coordination: CoordinationLevel::Emergent,
            ..options(format)
        };
        system_prompt_of(&template, &spec, options)
    };
    let environment = [
        "<game_rules>",
        "## How to play",
        "## Roles",
        "## Resource chain",
        "## Crafting recipes",
        "Build Forge: 10 stone + 3 iron + 2 coal",
    ];
    let coordination = ["<coordination>", "- Synchronous:", "- Handover:"];
    // The achievement list is the world's, kept at every level (ALEM App. H.7).
    let always = [
        "<achievements>\n## Achievements\nCollect Wood\nCoord Build Forge\n</achievements>",
        "You are green_0 (warrior)",
        "Your teammates are green_1.",
        "<output_format>",
        "Token budget: 256 tokens",
    ];
    let full = at(Disclosure::Full, OutputFormat::Tagged);
    let no_coordination = at(Disclosure::NoCoordination, OutputFormat::Tagged);
    let no_environment = at(Disclosure::NoEnvironment, OutputFormat::Tagged);
    for (system, shows_environment, shows_coordination) in [
        (&full, true, true),
        (&no_coordination, true, false),
        (&no_environment, false, false),
    ] {
        for needle in always {
            assert!(system.contains(needle), "{needle} missing from\n{system}");
        }
        for needle in environment {
            assert_eq!(
                system.contains(needle),
                shows_environment,
                "{needle} in\n{system}"
            );
        }
        for needle in coordination {
            assert_eq!(
                system.contains(needle),
                shows_coordination,
                "{needle} in\n{system}"
            );
        }
    }
    assert!(no_environment.contains("choose exactly one of the legal actions"));
    assert!(full.contains("<action>ONE LEGAL ACTION</action>"));
    assert!(full.contains("<communication>YOUR_MESSAGE</communication>"));
    assert!(full.contains("up to 50 characters"));
    assert!(full.contains("<scratchpad>YOUR_NOTES</scratchpad>"));
    let json = at(Disclosure::Full, OutputFormat::Json);
    assert!(json.contains("Token budget: 256 tokens"), "{json}");
    assert!(json.contains(r#"{"action": "ONE LEGAL ACTION""#), "{json}");
    // Other environments keep their own rules under the ALEM frame; without a
    // description there is no achievement section.
    let soccer = system_prompt(&template, "soccer-2v2", options(OutputFormat::Json));
    assert!(!soccer.contains("<game_rules>") && !soccer.contains("<coordination>"));
    assert!(!soccer.contains("<achievements>") && !soccer.contains("{world."));
}

#[test]
fn an_agent_without_teammates_is_told_it_plays_alone() {
    let mut lone = spec_named("coord-world");
    lone.agents.truncate(1);
    let default = Arc::new(Template::builtin_or(None).unwrap());
    let alem = Arc::new(Template::builtin_or(Some("alem")).unwrap());
    let default = system_prompt_of(&default, &lone, options(OutputFormat::Json));
    assert!(
        default.contains("You play alone for team green; your opponents are nobody."),
        "{default}"
    );
    let alem = system_prompt_of(&alem, &lone, options(OutputFormat::Tagged));
    assert!(
        alem.contains("You play alone: you have no teammates."),
        "{alem}"
    );
    for prompt in [&default, &alem] {
        assert!(!prompt.contains("with nobody"), "{prompt}");
        assert!(!prompt.contains("teammates are nobody"), "{prompt}");
    }
}

#[test]
fn world_descriptions_fill_their_sections() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.toml");
    std::fs::write(
        &path,
        "system = \"[{world.goals}] [{world.map}] [{world.missing}]\"\n[world_sections]\ngoals = \"Goals: {text}.\"\nmissing = \"never {text}\"\n",
    )
    .unwrap();
    let template = Arc::new(Template::load(&path).unwrap());
    let mut spec = spec();
    spec.descriptions.insert("goals".into(), "score".into());
    spec.descriptions.insert("map".into(), "a pitch".into());
    assert_eq!(
        system_prompt_of(&template, &spec, options(OutputFormat::Tagged)),
        "[Goals: score.] [a pitch] []"
    );
    // A section takes only `{text}`; `{world.}` names nothing.
    std::fs::write(&path, "[world_sections]\ngoals = \"{role}\"\n").unwrap();
    let err = Template::load(&path).unwrap_err().to_string();
    assert!(err.contains("world_sections.goals"), "{err}");
    std::fs::write(&path, "system = \"{world.}\"\n").unwrap();
    assert!(Template::load(&path).is_err());
}

#[test]
fn disclosure_levels_are_0_1_2() {
    let level = |v: serde_json::Value| serde_json::from_value::<Disclosure>(v);
    assert_eq!(level(serde_json::json!(0)).unwrap(), Disclosure::Full);
    assert_eq!(
        level(serde_json::json!(1)).unwrap(),
        Disclosure::NoCoordination
    );
    assert_eq!(
        level(serde_json::json!(2)).unwrap(),
        Disclosure::NoEnvironment
    );
    let error = level(serde_json::json!(3)).unwrap_err().to_string();
    assert!(error.contains("disclosure 3 is not a level"), "{error}");
    assert_eq!(serde_json::to_value(Disclosure::NoEnvironment).unwrap(), 2);
}

#[test]
fn coordination_texts_per_environment_are_validated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.toml");
    std::fs::write(&path, "[coordination.grid]\nhints = \"Go {where}.\"\n").unwrap();
    let err = Template::load(&path).unwrap_err().to_string();
    assert!(
        err.contains("coordination.grid.hints") && err.contains("{where}"),
        "{err}"
    );
    std::fs::write(&path, "[coordination.grid]\nhint = \"x\"\n").unwrap();
    assert!(Template::load(&path).is_err());
    std::fs::write(&path, "[coordination_rules]\ngrid = \"{role}\"\n").unwrap();
    assert!(Template::load(&path).is_err());
}

#[test]
fn placeholders_and_braces() {
    assert_eq!(fill("a {x} {{y}} {z}", &[("x", "1")]), "a 1 {y} {z}");
    assert_eq!(placeholders("{a} {{b}} {c}").unwrap(), ["a", "c"]);
    assert!(placeholders("oops }").is_err());
    assert!(placeholders("oops {").is_err());
}

#[test]
fn builtin_template_is_valid_and_overridable() {
    let template = Template::builtin().unwrap();
    assert!(template.system.contains("{agent}"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.toml");
    std::fs::write(&path, "[rules]\nsoccer = \"Score goals.\"\n").unwrap();
    let custom = Template::load(&path).unwrap();
    assert_eq!(custom.rules["soccer"], "Score goals.");
    assert_eq!(custom.turn, template.turn);
    std::fs::write(&path, "system = \"I am {nobody}\"\n").unwrap();
    let err = Template::load(&path).unwrap_err();
    assert!(err.to_string().contains("{nobody}"), "{err}");
    assert!(err.to_string().contains("t.toml"), "{err}");
    std::fs::write(&path, "sytem = \"x\"\n").unwrap();
    assert!(
        Template::load(&path)
            .unwrap_err()
            .to_string()
            .contains("sytem")
    );
}

#[test]
fn identity_and_roles() {
    let template = Template::builtin().unwrap();
    let me = Identity::of(&spec(), 1, None, &template);
    assert_eq!(me.teammates, ["green_0"]);
    assert_eq!(me.opponents, ["blue_0"]);
    assert_eq!(me.role.as_deref(), Some("defender"));
    let first = Identity::of(&spec(), 0, None, &template);
    assert_eq!(first.role.as_deref(), Some("attacker"));
    assert_eq!(
        Identity::of(&spec(), 0, Some("keeper"), &template)
            .role
            .as_deref(),
        Some("keeper")
    );
}

#[test]
fn stable_content_first_and_everything_in_place() {
    let template = Arc::new(Template::builtin().unwrap());
    let identity = Identity::of(&spec(), 0, None, &template);
    let builder = PromptBuilder::new(
        template.clone(),
        options(OutputFormat::Tagged),
        &spec(),
        &identity,
    );
    let parser = ResponseParser::new(OutputFormat::Tagged, &spec().action_labels, 50, 80);
    let system = builder.system();
    for needle in [
        "green_0",
        "green_1",
        "blue_0",
        "attacker",
        "- pickup",
        "<scratchpad>",
        "50 characters to your team",
    ] {
        assert!(system.contains(needle), "{needle} missing from\n{system}");
    }
    let message = |step, text: &str| Envelope {
        from: "green_1".into(),
        to: None,
        scope: Scope::Team,
        step,
        text: text.into(),
    };
    let mut history = VecDeque::new();
    history.push_back(Turn {
        step: 4,
        observation: "ball ahead".into(),
        received: vec![message(3, "hello")],
        answer: parser.render(Action(1), Some("coming"), None),
    });
    let received = [message(4, "pass!")];
    let current = CurrentTurn {
        step: 5,
        observation: Some("ball here"),
        received: &received,
        scratchpad: Some("plan: score"),
        teammates: None,
        legal: &[true, false, true],
        images: &[],
    };
    let messages = builder.build("green_0", &history, &current, &parser);
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[0].role, Role::System);
    assert!(
        messages[1]
            .content
            .text()
            .contains("Step 4.\nMessages:\n- step 3, green_1: hello\nball ahead")
    );
    assert_eq!(
        messages[2].content.text(),
        "<action>forward</action>\n<communication>coming</communication>"
    );
    let last = messages[3].content.text();
    for needle in [
        "Step 5.",
        "- step 4, green_1: pass!",
        "Your notes:\nplan: score",
        "ball here",
        "Legal actions: noop, pickup",
    ] {
        assert!(last.contains(needle), "{needle} missing from\n{last}");
    }

    let mut reordered = options(OutputFormat::Tagged);
    reordered.order = PromptOrder::ObservationFirst;
    let volatile = PromptBuilder::new(template, reordered, &spec(), &identity);
    let messages = volatile.build("green_0", &history, &current, &parser);
    assert!(messages[0].content.text().contains("ball here"));
    assert_eq!(messages[1].role, Role::System);
}

#[test]
fn images_go_into_the_current_turn() {
    let template = Arc::new(Template::builtin().unwrap());
    let identity = Identity::of(&spec(), 2, None, &template);
    let builder = PromptBuilder::new(template, options(OutputFormat::Json), &spec(), &identity);
    let parser = ResponseParser::new(OutputFormat::Json, &spec().action_labels, 50, 80);
    assert!(builder.system().contains("\"action\""));
    let images = [
        "data:image/png;base64,AA==".to_owned(),
        "data:image/png;base64,AB==".to_owned(),
    ];
    let current = CurrentTurn {
        step: 0,
        observation: None,
        received: &[],
        scratchpad: None,
        teammates: Some("green_0 at (1,2)"),
        legal: &[true, true, true],
        images: &images,
    };
    let messages = builder.build("blue_0", &VecDeque::new(), &current, &parser);
    let last = &messages[1].content;
    assert_eq!(last.images(), 2);
    assert!(last.text().contains("(no text observation)"));
    assert!(last.text().contains("Visible teammates:\ngreen_0 at (1,2)"));
}
