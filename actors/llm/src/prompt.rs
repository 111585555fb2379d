//! Prompts from data: templates (TOML, see `actors/llm/templates/default.toml`) and the
//! [`PromptBuilder`] that assembles an agent's chat messages each step, stable content
//! first: system prompt, past turns (oldest first), then the current turn.

use crate::backend::{ChatMessage, Content, ContentPart, ImageUrl, Role};
use crate::parser::{OutputFormat, ResponseParser};
use mosaic_actors::channel::{Envelope, Scope};
use mosaic_core::EnvSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The built-in template.
pub const DEFAULT_TEMPLATE: &str = include_str!("../templates/default.toml");

/// Built-in templates merged over the default one, by the name the `template` setting
/// gives them: `alem`, ALEM's prompt for the coordination world
/// (`actors/llm/templates/alem.toml`).
pub const BUILTIN_TEMPLATES: &[(&str, &str)] = &[("alem", include_str!("../templates/alem.toml"))];

/// A template could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("prompt template {source_name}: {message}")]
pub struct TemplateError {
    /// The file (or `built-in`).
    pub source_name: String,
    /// What is wrong.
    pub message: String,
}

/// Text of one output format.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormatText {
    /// How to answer. `{communication}` `{scratchpad}`.
    pub answer: String,
    /// The message field's line. `{message_cap}` `{audience}`.
    pub communication: String,
    /// The note field's line. `{scratchpad_cap}`.
    pub scratchpad: String,
    /// A short reminder at the end of each turn.
    pub reminder: String,
}

/// Output-format texts by format.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormatTexts {
    /// Tagged and grammar formats.
    pub tagged: FormatText,
    /// JSON format.
    pub json: FormatText,
}

/// Texts of MOSAIC's three coordination levels: the ones for every environment, and
/// those of particular environments (`[coordination.<env>]`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct CoordinationTexts {
    /// No guidance.
    pub emergent: String,
    /// Cooperation tips.
    pub hints: String,
    /// An explicit role. `{role}`.
    pub role_based: String,
    /// Texts of particular environments, by environment name; a text they leave out is
    /// the one for every environment.
    #[serde(flatten)]
    pub by_env: BTreeMap<String, CoordinationOverride>,
}

/// The coordination texts of one environment (each optional).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoordinationOverride {
    /// No guidance.
    pub emergent: Option<String>,
    /// Cooperation tips.
    pub hints: Option<String>,
    /// An explicit role. `{role}`.
    pub role_based: Option<String>,
}

impl CoordinationTexts {
    /// The text of `level` in the environment `env`.
    pub fn text(&self, env: &str, level: CoordinationLevel) -> &str {
        let own = self.by_env.get(env).and_then(|texts| match level {
            CoordinationLevel::Emergent => texts.emergent.as_deref(),
            CoordinationLevel::Hints => texts.hints.as_deref(),
            CoordinationLevel::RoleBased => texts.role_based.as_deref(),
        });
        own.unwrap_or(match level {
            CoordinationLevel::Emergent => &self.emergent,
            CoordinationLevel::Hints => &self.hints,
            CoordinationLevel::RoleBased => &self.role_based,
        })
    }
}

/// Texts of the per-step turns.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnTexts {
    /// A past turn. `{step}` `{messages}` `{observation}`.
    pub history: String,
    /// Messages received. `{messages}`.
    pub messages: String,
    /// One message. `{step}` `{from}` `{to}` `{text}`.
    pub message_line: String,
    /// Marks a message addressed to the reader.
    pub to_you: String,
    /// The private notes. `{scratchpad}`.
    pub notes: String,
    /// Visible teammates. `{teammates}`.
    pub visible_teammates: String,
    /// The current turn. `{step}` `{messages}` `{notes}` `{teammates}` `{observation}`
    /// `{legal}` `{reminder}`.
    pub current: String,
    /// Re-prompt after an unusable answer. `{error}` `{legal}` `{reminder}`.
    pub format_error: String,
    /// Stands in for a missing text observation.
    pub no_text: String,
}

/// A prompt template (see the built-in `default.toml` for every key).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    /// The system prompt.
    pub system: String,
    /// The team sentence.
    pub team_line: String,
    /// The team sentence of an agent whose team has no other member.
    pub alone_team_line: String,
    /// The sentence for agents without a team.
    pub no_team_line: String,
    /// One action of the catalogue.
    pub action_line: String,
    /// One described action of the catalogue.
    pub action_described: String,
    /// Rules by environment name (`*` for the rest).
    #[serde(default)]
    pub rules: BTreeMap<String, String>,
    /// Action descriptions by environment name and label.
    #[serde(default)]
    pub action_descriptions: BTreeMap<String, BTreeMap<String, String>>,
    /// Coordination levels.
    pub coordination: CoordinationTexts,
    /// The coordination information of an environment (how its joint tasks work), by
    /// environment name; in the system prompt with `disclosure = 0` only.
    #[serde(default)]
    pub coordination_rules: BTreeMap<String, String>,
    /// Sections showing what an environment describes about itself
    /// ([`EnvSpec::descriptions`]), by description name: `{text}`. The system prompt's
    /// `{world.<name>}` is the section holding the environment's description of that
    /// name (the bare description when the template has no section for it), or nothing
    /// when the environment gives none.
    #[serde(default)]
    pub world_sections: BTreeMap<String, String>,
    /// Roles handed out in team order, by environment name (`default` for the rest).
    #[serde(default)]
    pub roles: BTreeMap<String, Vec<String>>,
    /// Output formats.
    pub format: FormatTexts,
    /// Turn texts.
    pub turn: TurnTexts,
}

/// The prefix of the system prompt's placeholders of environment descriptions:
/// `{world.achievements}`.
const WORLD_PREFIX: &str = "world.";

/// Fills `{name}` placeholders; `{{` and `}}` are literal braces.
fn fill(text: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
        } else if let Some(end) = tail.find('}').filter(|_| tail.starts_with('{')) {
            let name = &tail[1..end];
            match vars.iter().find(|(n, _)| *n == name) {
                Some((_, value)) => out.push_str(value),
                None => out.push_str(&tail[..=end]),
            }
            rest = &tail[end + 1..];
        } else {
            out.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// The placeholder names in `text`.
fn placeholders(text: &str) -> Result<Vec<&str>, String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            rest = &tail[2..];
        } else if tail.starts_with('{') {
            let end = tail
                .find('}')
                .ok_or_else(|| format!("unclosed `{{` in {:?}", excerpt(tail)))?;
            names.push(&tail[1..end]);
            rest = &tail[end + 1..];
        } else {
            return Err(format!("lone `}}` in {:?} (write `}}}}`)", excerpt(tail)));
        }
    }
    Ok(names)
}

fn excerpt(text: &str) -> String {
    text.chars().take(40).collect()
}

impl Template {
    /// The built-in template.
    pub fn builtin() -> Result<Self, TemplateError> {
        Self::parse(DEFAULT_TEMPLATE, None, "built-in")
    }

    /// The built-in template with the file at `path` merged over it.
    pub fn load(path: &Path) -> Result<Self, TemplateError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| TemplateError {
            source_name: name.clone(),
            message: e.to_string(),
        })?;
        Self::parse(DEFAULT_TEMPLATE, Some(&text), &name)
    }

    /// The built-in template; with `Some`, the built-in template of that name (see
    /// [`BUILTIN_TEMPLATES`]), else the file at that path, merged over it.
    pub fn builtin_or(name_or_path: Option<&str>) -> Result<Self, TemplateError> {
        match name_or_path {
            None => Self::builtin(),
            Some(name) => match BUILTIN_TEMPLATES.iter().find(|(known, _)| *known == name) {
                Some((name, text)) => Self::parse(DEFAULT_TEMPLATE, Some(text), name),
                None => Self::load(Path::new(name)),
            },
        }
    }

    fn parse(base: &str, overlay: Option<&str>, name: &str) -> Result<Self, TemplateError> {
        let error = |message: String| TemplateError {
            source_name: name.to_owned(),
            message,
        };
        let mut value: toml::Value = toml::from_str(base).map_err(|e| error(e.to_string()))?;
        if let Some(overlay) = overlay {
            let overlay: toml::Value = toml::from_str(overlay).map_err(|e| error(e.to_string()))?;
            merge(&mut value, overlay);
        }
        let template: Template = value.try_into().map_err(|e| error(e.to_string()))?;
        template.validate().map_err(error)?;
        Ok(template)
    }

    fn validate(&self) -> Result<(), String> {
        // The system prompt's `{world.<name>}` name the environment's descriptions, which
        // only the environment knows: any name is allowed there.
        let world = |key: &str, name: &str| {
            key == "system"
                && name
                    .strip_prefix(WORLD_PREFIX)
                    .is_some_and(|n| !n.is_empty())
        };
        let check = |key: &str, text: &str, allowed: &[&str]| -> Result<(), String> {
            for name in placeholders(text).map_err(|e| format!("{key}: {e}"))? {
                if !allowed.contains(&name) && !world(key, name) {
                    return Err(format!(
                        "{key}: unknown placeholder {{{name}}} (allowed: {})",
                        allowed.join(", ")
                    ));
                }
            }
            Ok(())
        };
        check(
            "system",
            &self.system,
            &[
                "agent",
                "role",
                "env",
                "team",
                "rules",
                "coordination_rules",
                "coordination",
                "actions",
                "output_format",
            ],
        )?;
        check(
            "team_line",
            &self.team_line,
            &["team", "teammates", "opponents"],
        )?;
        check(
            "alone_team_line",
            &self.alone_team_line,
            &["team", "opponents"],
        )?;
        check("no_team_line", &self.no_team_line, &["others"])?;
        check("action_line", &self.action_line, &["label"])?;
        check(
            "action_described",
            &self.action_described,
            &["label", "description"],
        )?;
        for (env, rules) in &self.rules {
            check(&format!("rules.{env}"), rules, &[])?;
        }
        for (env, rules) in &self.coordination_rules {
            check(&format!("coordination_rules.{env}"), rules, &[])?;
        }
        for (name, section) in &self.world_sections {
            check(&format!("world_sections.{name}"), section, &["text"])?;
        }
        for (env, texts) in &self.coordination.by_env {
            for (level, text) in [
                ("emergent", &texts.emergent),
                ("hints", &texts.hints),
                ("role_based", &texts.role_based),
            ] {
                if let Some(text) = text {
                    check(&format!("coordination.{env}.{level}"), text, &["role"])?;
                }
            }
        }
        check(
            "coordination.emergent",
            &self.coordination.emergent,
            &["role"],
        )?;
        check("coordination.hints", &self.coordination.hints, &["role"])?;
        check(
            "coordination.role_based",
            &self.coordination.role_based,
            &["role"],
        )?;
        for (name, format) in [("tagged", &self.format.tagged), ("json", &self.format.json)] {
            check(
                &format!("format.{name}.answer"),
                &format.answer,
                &["communication", "scratchpad", "max_tokens"],
            )?;
            check(
                &format!("format.{name}.communication"),
                &format.communication,
                &["message_cap", "audience"],
            )?;
            check(
                &format!("format.{name}.scratchpad"),
                &format.scratchpad,
                &["scratchpad_cap"],
            )?;
            check(&format!("format.{name}.reminder"), &format.reminder, &[])?;
        }
        let t = &self.turn;
        check(
            "turn.history",
            &t.history,
            &["step", "messages", "observation"],
        )?;
        check("turn.messages", &t.messages, &["messages"])?;
        check(
            "turn.message_line",
            &t.message_line,
            &["step", "from", "to", "text"],
        )?;
        check("turn.notes", &t.notes, &["scratchpad"])?;
        check(
            "turn.visible_teammates",
            &t.visible_teammates,
            &["teammates"],
        )?;
        check(
            "turn.current",
            &t.current,
            &[
                "step",
                "messages",
                "notes",
                "teammates",
                "observation",
                "legal",
                "reminder",
            ],
        )?;
        check(
            "turn.format_error",
            &t.format_error,
            &["error", "legal", "reminder"],
        )?;
        Ok(())
    }
}

/// Merges `overlay` into `base`: tables recursively, anything else replaced.
fn merge(base: &mut toml::Value, overlay: toml::Value) {
    match (base, overlay) {
        (toml::Value::Table(base), toml::Value::Table(overlay)) => {
            for (key, value) in overlay {
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, overlay) => *base = overlay,
    }
}

/// What the agent is told about teammates (MOSAIC's observation modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObservationMode {
    /// Only the agent's own observation.
    #[default]
    Egocentric,
    /// Also what the environment reports about visible teammates
    /// (`Observation::info["visible_teammates"]`).
    VisibleTeammates,
}

/// How much coordination guidance the system prompt gives (MOSAIC's levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoordinationLevel {
    /// None: coordination must emerge.
    #[default]
    Emergent,
    /// Cooperation tips.
    Hints,
    /// An explicit role per agent.
    RoleBased,
}

/// How much the system prompt says about the environment and about coordination
/// (ALEM's disclosure levels, written `0`, `1`, `2` in settings).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub enum Disclosure {
    /// 0: everything: the environment's rules and its coordination rules.
    #[default]
    Full,
    /// 1: no coordination information (the environment's `coordination_rules`).
    NoCoordination,
    /// 2: no environment information either (the generic `"*"` rule instead of the
    /// environment's).
    NoEnvironment,
}

/// A disclosure level other than 0, 1 or 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "disclosure {0} is not a level: use 0 (everything), 1 (no coordination information) or 2 (no environment information either)"
)]
pub struct DisclosureError(pub u8);

impl TryFrom<u8> for Disclosure {
    type Error = DisclosureError;

    fn try_from(level: u8) -> Result<Self, Self::Error> {
        match level {
            0 => Ok(Disclosure::Full),
            1 => Ok(Disclosure::NoCoordination),
            2 => Ok(Disclosure::NoEnvironment),
            other => Err(DisclosureError(other)),
        }
    }
}

impl From<Disclosure> for u8 {
    fn from(level: Disclosure) -> u8 {
        match level {
            Disclosure::Full => 0,
            Disclosure::NoCoordination => 1,
            Disclosure::NoEnvironment => 2,
        }
    }
}

/// Where the volatile part of the prompt goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptOrder {
    /// System prompt and past turns first, the current turn last (prefix-cache friendly).
    #[default]
    StableFirst,
    /// The current observation before everything else (defeats prefix caches; for
    /// measuring what the order is worth).
    ObservationFirst,
}

/// One past turn of an agent, kept for the rolling history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// Environment step.
    pub step: u32,
    /// The observation text of that step.
    pub observation: String,
    /// Messages received at that step.
    pub received: Vec<Envelope>,
    /// The agent's answer as it should have been written (canonical format).
    pub answer: String,
}

/// The current step as the prompt shows it.
#[derive(Clone, Copy, Debug)]
pub struct CurrentTurn<'a> {
    /// Environment step.
    pub step: u32,
    /// Observation text, if the environment gave one.
    pub observation: Option<&'a str>,
    /// New messages.
    pub received: &'a [Envelope],
    /// The agent's notes.
    pub scratchpad: Option<&'a str>,
    /// Visible teammates, rendered (observation mode `visible_teammates`).
    pub teammates: Option<&'a str>,
    /// Legal-action mask.
    pub legal: &'a [bool],
    /// PNG data URLs of the last frames, oldest first (VLM).
    pub images: &'a [String],
}

/// Who the agent is, for the system prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Agent id.
    pub agent: String,
    /// Team, if any.
    pub team: Option<String>,
    /// Teammates' ids.
    pub teammates: Vec<String>,
    /// Everyone else.
    pub opponents: Vec<String>,
    /// Role (role-based coordination).
    pub role: Option<String>,
}

impl Identity {
    /// The identity of agent `index` of `spec`. Its role is `role` (the slot's setting),
    /// else the one the environment gives the agent, else the template's default roles
    /// for the environment (handed out in team order).
    pub fn of(spec: &EnvSpec, index: usize, role: Option<&str>, template: &Template) -> Self {
        let me = spec.agents.get(index);
        let agent = me.map_or_else(|| format!("agent_{index}"), |a| a.id.clone());
        let team = me.and_then(|a| a.team.clone());
        let mut teammates = Vec::new();
        let mut opponents = Vec::new();
        let mut position = 0;
        for (i, other) in spec.agents.iter().enumerate() {
            let same = team.is_some() && other.team == team;
            if i == index {
                continue;
            }
            if same {
                if i < index {
                    position += 1;
                }
                teammates.push(other.id.clone());
            } else {
                opponents.push(other.id.clone());
            }
        }
        let role = role
            .map(str::to_owned)
            .or_else(|| me.and_then(|a| a.role.clone()))
            .or_else(|| {
                let roles =
                    (template.roles.get(&spec.name)).or_else(|| template.roles.get("default"))?;
                (!roles.is_empty()).then(|| roles[position % roles.len()].clone())
            });
        Self {
            agent,
            team,
            teammates,
            opponents,
            role,
        }
    }
}

/// Prompt options of one agent.
#[derive(Clone, Debug)]
pub struct PromptOptions {
    /// Output format.
    pub format: OutputFormat,
    /// Coordination level.
    pub coordination: CoordinationLevel,
    /// Message scope, `None` when the agent cannot talk.
    pub scope: Option<Scope>,
    /// Message cap (characters).
    pub message_cap: usize,
    /// Scratchpad cap (characters), 0 without a scratchpad.
    pub scratchpad_cap: usize,
    /// Prompt order.
    pub order: PromptOrder,
    /// What the system prompt discloses.
    pub disclosure: Disclosure,
    /// The completion token limit (the output section's token budget).
    pub max_tokens: u32,
}

/// Assembles one agent's chat messages.
#[derive(Clone, Debug)]
pub struct PromptBuilder {
    template: std::sync::Arc<Template>,
    options: PromptOptions,
    system: String,
    reminder: String,
}

fn join_or(items: &[String], none: &str) -> String {
    if items.is_empty() {
        none.to_owned()
    } else {
        items.join(", ")
    }
}

impl PromptBuilder {
    /// The builder of `identity` in the environment `spec`.
    pub fn new(
        template: std::sync::Arc<Template>,
        options: PromptOptions,
        spec: &EnvSpec,
        identity: &Identity,
    ) -> Self {
        let t = &template;
        let format = match options.format {
            OutputFormat::Json => &t.format.json,
            OutputFormat::Tagged | OutputFormat::Grammar => &t.format.tagged,
        };
        let team = match &identity.team {
            Some(team) if identity.teammates.is_empty() => fill(
                &t.alone_team_line,
                &[
                    ("team", team),
                    ("opponents", &join_or(&identity.opponents, "nobody")),
                ],
            ),
            Some(team) => fill(
                &t.team_line,
                &[
                    ("team", team),
                    ("teammates", &join_or(&identity.teammates, "nobody")),
                    ("opponents", &join_or(&identity.opponents, "nobody")),
                ],
            ),
            None => fill(
                &t.no_team_line,
                &[("others", &join_or(&identity.opponents, "nobody"))],
            ),
        };
        let generic = t.rules.get("*");
        let rules = match options.disclosure {
            Disclosure::NoEnvironment => generic,
            Disclosure::Full | Disclosure::NoCoordination => t.rules.get(&spec.name).or(generic),
        };
        let rules = rules.cloned().unwrap_or_default();
        let coordination_rules = match options.disclosure {
            Disclosure::Full => t.coordination_rules.get(&spec.name).cloned(),
            Disclosure::NoCoordination | Disclosure::NoEnvironment => None,
        };
        let role = identity.role.clone().unwrap_or_default();
        let coordination = fill(
            t.coordination.text(&spec.name, options.coordination),
            &[("role", &role)],
        );
        let descriptions = t.action_descriptions.get(&spec.name);
        let actions = spec
            .action_labels
            .iter()
            .map(|label| match descriptions.and_then(|d| d.get(label)) {
                Some(description) => fill(
                    &t.action_described,
                    &[("label", label), ("description", description)],
                ),
                None => fill(&t.action_line, &[("label", label)]),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let audience = match options.scope {
            Some(Scope::Team) => "your team",
            Some(Scope::All) => "every agent",
            None => "",
        };
        let communication = match options.scope {
            Some(_) if options.message_cap > 0 => fill(
                &format.communication,
                &[
                    ("message_cap", &options.message_cap.to_string()),
                    ("audience", audience),
                ],
            ),
            _ => String::new(),
        };
        let scratchpad = if options.scratchpad_cap > 0 {
            fill(
                &format.scratchpad,
                &[("scratchpad_cap", &options.scratchpad_cap.to_string())],
            )
        } else {
            String::new()
        };
        let output_format = fill(
            &format.answer,
            &[
                ("communication", &communication),
                ("scratchpad", &scratchpad),
                ("max_tokens", &options.max_tokens.to_string()),
            ],
        );
        let world: Vec<(&str, String)> = placeholders(&t.system)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|name| {
                let description = name.strip_prefix(WORLD_PREFIX)?;
                let text = spec
                    .descriptions
                    .get(description)
                    .map_or_else(String::new, |text| {
                        t.world_sections.get(description).map_or_else(
                            || text.clone(),
                            |section| fill(section, &[("text", text)]),
                        )
                    });
                Some((name, text))
            })
            .collect();
        let mut vars = vec![
            ("agent", identity.agent.as_str()),
            ("role", role.as_str()),
            ("env", spec.name.as_str()),
            ("team", team.as_str()),
            ("rules", rules.as_str()),
            (
                "coordination_rules",
                coordination_rules.as_deref().unwrap_or_default(),
            ),
            ("coordination", coordination.as_str()),
            ("actions", actions.as_str()),
            ("output_format", output_format.as_str()),
        ];
        vars.extend(world.iter().map(|(name, text)| (*name, text.as_str())));
        let system = fill(&t.system, &vars);
        let reminder = fill(&format.reminder, &[]);
        Self {
            template,
            options,
            system,
            reminder,
        }
    }

    /// The system prompt.
    pub fn system(&self) -> &str {
        &self.system
    }

    fn messages_block(&self, received: &[Envelope], reader: &str) -> String {
        if received.is_empty() {
            return String::new();
        }
        let t = &self.template.turn;
        let lines = received
            .iter()
            .map(|m| {
                let to = if m.to.as_deref() == Some(reader) {
                    t.to_you.as_str()
                } else {
                    ""
                };
                fill(
                    &t.message_line,
                    &[
                        ("step", &m.step.to_string()),
                        ("from", &m.from),
                        ("to", to),
                        ("text", &m.text),
                    ],
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        fill(&t.messages, &[("messages", &lines)])
    }

    /// The messages of a request: system, history (oldest first), current turn.
    pub fn build(
        &self,
        agent: &str,
        history: &std::collections::VecDeque<Turn>,
        current: &CurrentTurn<'_>,
        parser: &ResponseParser,
    ) -> Vec<ChatMessage> {
        let t = &self.template.turn;
        let mut messages = Vec::with_capacity(2 + 2 * history.len());
        messages.push(ChatMessage::text(Role::System, self.system.clone()));
        for turn in history {
            let user = fill(
                &t.history,
                &[
                    ("step", &turn.step.to_string()),
                    ("messages", &self.messages_block(&turn.received, agent)),
                    ("observation", &turn.observation),
                ],
            );
            messages.push(ChatMessage::text(Role::User, user));
            messages.push(ChatMessage::text(Role::Assistant, turn.answer.clone()));
        }
        let notes = current
            .scratchpad
            .filter(|_| self.options.scratchpad_cap > 0)
            .map(|s| fill(&t.notes, &[("scratchpad", s)]))
            .unwrap_or_default();
        let teammates = current
            .teammates
            .map(|s| fill(&t.visible_teammates, &[("teammates", s)]))
            .unwrap_or_default();
        let text = fill(
            &t.current,
            &[
                ("step", &current.step.to_string()),
                ("messages", &self.messages_block(current.received, agent)),
                ("notes", &notes),
                ("teammates", &teammates),
                ("observation", current.observation.unwrap_or(&t.no_text)),
                ("legal", &parser.legal_list(current.legal)),
                ("reminder", &self.reminder),
            ],
        );
        let content = if current.images.is_empty() {
            Content::Text(text)
        } else {
            let mut parts: Vec<ContentPart> = current
                .images
                .iter()
                .map(|url| ContentPart::ImageUrl {
                    image_url: ImageUrl { url: url.clone() },
                })
                .collect();
            parts.push(ContentPart::Text { text });
            Content::Parts(parts)
        };
        let current = ChatMessage {
            role: Role::User,
            content,
        };
        match self.options.order {
            PromptOrder::StableFirst => messages.push(current),
            PromptOrder::ObservationFirst => messages.insert(0, current),
        }
        messages
    }

    /// The re-prompt after an unusable answer.
    pub fn format_error(&self, error: &str, legal: &[bool], parser: &ResponseParser) -> String {
        fill(
            &self.template.turn.format_error,
            &[
                ("error", error),
                ("legal", &parser.legal_list(legal)),
                ("reminder", &self.reminder),
            ],
        )
    }
}

#[cfg(test)]
mod tests;
