use super::*;
use crate::wire::WireObservation;
use mosaic_core::{AgentSpec, Stepping};

fn spec() -> EnvSpec {
    EnvSpec {
        name: "t".into(),
        agents: vec![AgentSpec {
            id: "a".into(),
            team: None,
            role: None,
        }],
        action_labels: vec!["x".into(), "y".into()],
        default_action: Action(0),
        stepping: Stepping::Single,
        max_steps: Some(10),
        symbolic_shape: None,
        offers: ObsRequest::ALL,
        descriptions: Default::default(),
    }
}

fn samples() -> Vec<Message> {
    let view = AgentView {
        agent: 0,
        legal: vec![0, 1],
        observation: WireObservation {
            text: Some("hi".into()),
            ..WireObservation::default()
        },
    };
    vec![
        Message::Hello(Hello {
            protocol: "mosaic/1".into(),
            worker_kind: WorkerKind::Env,
            capabilities: vec![capability::CHECKPOINT.into()],
            schema: serde_json::to_value(spec()).unwrap(),
            name: Some("n".into()),
        }),
        Message::Welcome(Welcome {
            protocol: "mosaic/1".into(),
            session: "s".into(),
            heartbeat_ms: 1000,
            frames: FrameEncoding::Png,
        }),
        Message::Reject(Reject { reason: "r".into() }),
        Message::Auth(Auth {
            protocol: "mosaic/1.2".into(),
            token: Token::new("t"),
        }),
        Message::Reset(Reset {
            id: 1,
            seed: 42,
            options: serde_json::Map::new(),
            want: Want {
                text: true,
                ..Want::default()
            },
        }),
        Message::Observations(Observations {
            id: 1,
            acting: vec![0],
            agents: vec![view.clone()],
            render: None,
            spec: Some(spec()),
        }),
        Message::Step(Step {
            id: 2,
            actions: vec![Some(Action(1)), None],
            want: Want::default(),
        }),
        Message::Transition(TransitionReply {
            id: 2,
            rewards: vec![1.0],
            terminated: vec![true],
            truncated: vec![false],
            events: vec![Event {
                kind: "goal".into(),
                agent: Some(0),
                detail: None,
            }],
            acting: vec![],
            agents: vec![],
            render: None,
            outcome: Some(vec![Outcome::Win]),
            metrics: Some(serde_json::Map::new()),
        }),
        Message::Observe(Observe {
            id: 3,
            agent: 0,
            want: ObsRequest::ALL,
        }),
        Message::Observation(ObservationReply { id: 3, view }),
        Message::Render(Ack { id: 4 }),
        Message::Rendered(Rendered { id: 4, frame: None }),
        Message::Close(Ack { id: 5 }),
        Message::Closed(Ack { id: 5 }),
        Message::InitAgent(InitAgent {
            id: 6,
            agent_id: "a".into(),
            agent: 0,
            seed: 9,
            episode_seed: 8,
            env: spec(),
        }),
        Message::AgentReady(Ack { id: 6 }),
        Message::Decide(Decide {
            id: 7,
            step: 3,
            observation: WireObservation::default(),
            legal: vec![1],
            deadline_ms: Some(50),
            inbox: Some(vec![Envelope {
                from: "b".into(),
                to: None,
                scope: Scope::Team,
                step: 2,
                text: "left".into(),
            }]),
        }),
        Message::Decision(DecisionReply {
            id: 7,
            action: Action(1),
            text: Some("t".into()),
            message: None,
            usage: Some(serde_json::json!({"tokens": 3})),
            detail: None,
        }),
        Message::Ping(Ack { id: 8 }),
        Message::Pong(Ack { id: 8 }),
        Message::Heartbeat,
        Message::Checkpoint(Ack { id: 9 }),
        Message::State(State {
            id: 9,
            data: "AAE=".into(),
        }),
        Message::Restore(State {
            id: 10,
            data: "AAE=".into(),
        }),
        Message::Restored(Ack { id: 10 }),
        Message::Stop(Ack { id: 11 }),
        Message::Stopped(Ack { id: 11 }),
        Message::error(Some(12), code::BAD_REQUEST, "no"),
    ]
}

#[test]
fn every_message_round_trips_with_its_tag() {
    let samples = samples();
    assert_eq!(samples.len(), Message::KINDS.len());
    for message in samples {
        let line = message.encode();
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(value["type"], message.kind());
        assert!(Message::KINDS.contains(&message.kind()));
        let back = Message::decode(&line[..line.len() - 1]).unwrap();
        assert_eq!(back, message);
        if let Some(id) = message.id() {
            assert_eq!(value["id"], id);
        }
    }
}

#[test]
fn the_inbox_is_sent_only_to_workers_that_read_it() {
    let decide = |inbox| {
        Message::Decide(Decide {
            id: 4,
            step: 1,
            observation: WireObservation::default(),
            legal: vec![0],
            deadline_ms: None,
            inbox,
        })
    };
    // A `mosaic/1.0` line: no inbox field, and none decoded.
    let old = br#"{"type":"decide","id":4,"step":1,"observation":{},"legal":[0]}"#;
    assert_eq!(Message::decode(old).unwrap(), decide(None));
    assert_eq!(&decide(None).encode()[..old.len()], old);
    let line = decide(Some(Vec::new())).encode();
    let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(value["inbox"], serde_json::json!([]));
    let addressed = br#"{"from":"g0","to":"g1","scope":"all","step":3,"text":"hi"}"#;
    let envelope: Envelope = serde_json::from_slice(addressed).unwrap();
    assert_eq!(envelope.to.as_deref(), Some("g1"));
    assert_eq!(envelope.scope, Scope::All);
    assert_eq!(serde_json::to_vec(&envelope).unwrap(), addressed);
}

#[test]
fn unknown_fields_are_ignored_and_defaults_apply() {
    let m = Message::decode(
        br#"{"type":"hello","protocol":"mosaic/1.3","worker_kind":"policy","future":[1,2]}"#,
    )
    .unwrap();
    let Message::Hello(hello) = m else {
        panic!("not a hello: {m:?}")
    };
    assert!(hello.capabilities.is_empty());
    assert_eq!(hello.policy_schema().unwrap(), PolicySchema::default());
    let m = Message::decode(br#"{"type":"reset","id":1,"seed":3}"#).unwrap();
    assert_eq!(
        m,
        Message::Reset(Reset {
            id: 1,
            seed: 3,
            options: serde_json::Map::new(),
            want: Want::default()
        })
    );
}

#[test]
fn hello_schema_accessors_name_the_problem() {
    let hello = Hello {
        protocol: "mosaic/1".into(),
        worker_kind: WorkerKind::Env,
        capabilities: vec!["heartbeat".into()],
        schema: serde_json::json!({"name": "x"}),
        name: None,
    };
    assert!(hello.has(capability::HEARTBEAT));
    assert!(!hello.has(capability::CHECKPOINT));
    let err = hello.env_spec().unwrap_err().to_string();
    assert!(err.contains("hello.schema"), "{err}");
    let hello = Hello {
        schema: serde_json::json!({"wants": {"text": true}, "paradigm": "llm"}),
        ..hello
    };
    let schema = hello.policy_schema().unwrap();
    assert!(schema.wants.text);
    assert_eq!(schema.paradigm, Some(Paradigm::Llm));
}

#[test]
fn want_merges_requests() {
    let want = Want::default().with_obs(ObsRequest {
        text: true,
        ..ObsRequest::MASK_ONLY
    });
    assert!(want.text && !want.symbolic && !want.render);
    assert!(want.obs().text);
    assert_eq!(WorkerKind::Policy.name(), "policy");
}
