use super::*;
use crate::backend::{ChatMessage, Constraint, Role};
use mosaic_actors::channel::{Channel, ChannelConfig};
use mosaic_actors::decider::SessionResources;
use mosaic_core::{Action, AgentSpec, EnvSpec, Settings, SlotSpec, Stepping};
use serde_json::{Value, json};

fn settings(value: Value) -> Result<LlmSettings, SpecError> {
    parse_settings(value.as_object().unwrap())
}

#[test]
fn settings_parse_with_clear_errors() {
    let default = settings(json!({})).unwrap();
    assert_eq!(default.backend, BackendSetting::Local);
    assert_eq!(default.format, OutputFormat::Json);
    assert_eq!(default.history, 8);
    assert_eq!(default.reasoning_effort, None);
    assert!(default.extra_body.is_empty());
    let passed = settings(json!({
        "reasoning_effort": "off",
        "extra_body": {"chat_template_kwargs": {"enable_thinking": false}},
    }))
    .unwrap();
    assert_eq!(passed.reasoning_effort, Some(ReasoningEffort::Off));
    assert_eq!(
        passed.extra_body["chat_template_kwargs"],
        json!({"enable_thinking": false})
    );
    let remote = settings(json!({
        "backend": {"base_url": "http://127.0.0.1:8000/v1", "model": "m", "api_key_env": "K"},
        "format": "grammar", "coordination": "role_based", "observation_mode": "visible_teammates",
    }))
    .unwrap();
    assert_eq!(
        remote.backend,
        BackendSetting::Remote {
            base_url: "http://127.0.0.1:8000/v1".into(),
            model: "m".into(),
            api_key_env: Some("K".into()),
        }
    );
    let err = |v| settings(v).unwrap_err().to_string();
    assert!(err(json!({"temprature": 0.5})).contains("temprature"));
    assert!(err(json!({"backend": "remote"})).contains("\"local\""));
    assert!(err(json!({"backend": {"base_url": "x", "model": "m", "key": "k"}})).contains("key"));
    assert!(err(json!({"format": "xml"})).contains("xml"));
    assert!(err(json!({"reasoning_effort": "max"})).contains("max"));
    let not_a_table = err(json!({"extra_body": "top_p=1"}));
    assert!(not_a_table.contains("expected a map"), "{not_a_table}");
}

fn spec(offers: ObsRequest, team: Option<&str>) -> Arc<EnvSpec> {
    Arc::new(EnvSpec {
        name: "grid".into(),
        agents: vec![AgentSpec {
            id: "a".into(),
            team: team.map(Into::into),
            role: None,
        }],
        action_labels: vec!["noop".into(), "go".into()],
        default_action: Action(0),
        stepping: Stepping::Single,
        max_steps: None,
        symbolic_shape: None,
        offers,
        descriptions: Default::default(),
    })
}

fn spawn_slot(
    registry: &DeciderRegistry,
    spec: &Arc<EnvSpec>,
    slot: Value,
    session: &SessionResources,
) -> Result<DeciderHandle, SpecError> {
    let slot: SlotSpec = serde_json::from_value(slot).unwrap();
    registry.spawn(&SpawnContext {
        env_name: &spec.name,
        env_settings: &Settings::new(),
        spec,
        agent: 0,
        slot: &slot,
        scripted: None,
        session,
    })
}

/// A server that accepts connections and never answers: its base URL, and how many
/// connections it has accepted.
async fn silent_server() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            open.push(stream);
        }
    });
    (url, accepted)
}

#[actix::test]
async fn agents_of_one_backend_share_its_concurrency_limit() {
    let (base_url, connections) = silent_server().await;
    let agent = |timeout_ms: u64, concurrency: usize| {
        settings(json!({
            "backend": {"base_url": base_url, "model": "m"},
            "timeout_ms": timeout_ms,
            "http_retries": 0,
            "concurrency": concurrency,
        }))
        .unwrap()
    };
    let resources = LlmResources::new();
    // Other settings differ, so the agents have stacks of their own.
    let stacks = [
        resources.backend(&agent(30_000, 2)).unwrap(),
        resources.backend(&agent(40_000, 2)).unwrap(),
    ];
    let request = ChatRequest {
        messages: vec![ChatMessage::text(Role::User, "hello")],
        temperature: 0.0,
        max_tokens: 4,
        seed: None,
        constraint: Constraint::None,
        passthrough: Default::default(),
    };
    let pending = futures::future::join_all((0..4).map(|i| stacks[i % 2].chat(&request)));
    let still_waiting = tokio::time::timeout(Duration::from_millis(500), pending).await;
    assert!(still_waiting.is_err(), "the silent server answered");
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(resources.peak_concurrency(), 2);

    let error = resources.backend(&agent(30_000, 3)).err().unwrap();
    assert_eq!(error.path, "concurrency");
    assert!(error.message.contains("share one limit"), "{error}");
    let other_model = settings(json!({
        "backend": {"base_url": base_url, "model": "n"},
        "concurrency": 3,
    }))
    .unwrap();
    assert!(resources.backend(&other_model).is_ok());
}

#[actix::test]
async fn spawn_checks_environment_channel_and_key() {
    let mut registry = DeciderRegistry::default();
    register(&mut registry, Arc::new(LlmResources::new()));
    let backend = json!({"base_url": "http://127.0.0.1:9/v1", "model": "m"});
    let none = SessionResources::default();
    let frames_only = ObsRequest {
        frame: true,
        ..ObsRequest::MASK_ONLY
    };

    let err = spawn_slot(
        &registry,
        &spec(frames_only, None),
        json!({"kind": "llm", "backend": backend}),
        &none,
    )
    .unwrap_err();
    assert!(
        err.message.contains("no text observation; use `vlm`"),
        "{err}"
    );
    let vlm = spawn_slot(
        &registry,
        &spec(frames_only, None),
        json!({"kind": "vlm", "backend": backend}),
        &none,
    )
    .unwrap();
    assert_eq!(vlm.paradigm, Paradigm::Vlm);
    assert!(vlm.wants.frame && !vlm.wants.text);

    let text = spec(ObsRequest::ALL, None);
    let with_channel = SessionResources {
        channel: Some(Channel::start(&text, ChannelConfig::default())),
        ..SessionResources::default()
    };
    let err = spawn_slot(
        &registry,
        &text,
        json!({"kind": "llm", "backend": backend}),
        &with_channel,
    )
    .unwrap_err();
    assert_eq!(err.path, "channel");
    spawn_slot(
        &registry,
        &text,
        json!({"kind": "llm", "backend": backend, "channel": "all"}),
        &with_channel,
    )
    .unwrap();

    let keyed = json!({"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "MOSAIC_TEST_UNSET_KEY_VAR"});
    let err = spawn_slot(
        &registry,
        &text,
        json!({"kind": "llm", "backend": keyed}),
        &none,
    )
    .unwrap_err();
    assert!(
        err.message
            .contains("MOSAIC_TEST_UNSET_KEY_VAR (API key) is not set"),
        "{err}"
    );
}
