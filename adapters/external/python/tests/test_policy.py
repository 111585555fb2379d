import json
from pathlib import Path

import pytest

from mosaic_worker import Context, random_decide
from mosaic_worker.policy import PolicyHandler
from mosaic_worker.protocol import WorkerError

INIT = {"agent_id": "player_1", "agent": 1, "seed": 77, "episode_seed": 3, "env": {"name": "t"}}


def decisions(handler, n=30):
    handler.init_agent(INIT)
    return [handler.decide({"legal": [1, 4, 6], "observation": {}})["action"] for _ in range(n)]


def test_random_policy_is_seeded_and_legal():
    handler = PolicyHandler(random_decide, "random")
    first = decisions(handler)
    assert first == decisions(handler)
    assert set(first) == {1, 4, 6}


def test_decision_dicts_carry_text_and_usage():
    def decide(observation, legal, context: Context):
        return {"action": legal[-1], "text": observation.get("text", ""), "usage": {"tokens": 3}}

    handler = PolicyHandler(decide, "llm-ish", wants={"text": True}, paradigm="llm")
    assert handler.hello()["schema"] == {"wants": {"text": True}, "paradigm": "llm"}
    handler.init_agent(INIT)
    reply = handler.decide({"legal": [0, 2], "observation": {"text": "hi"}})
    assert reply == {"type": "decision", "action": 2, "text": "hi", "usage": {"tokens": 3}}


def test_decide_before_init_is_a_bad_request():
    handler = PolicyHandler(random_decide, "random")
    with pytest.raises(WorkerError) as err:
        handler.decide({"legal": [0]})
    assert err.value.code == "bad_request"


def test_cli_policy_over_stdio(peer):
    worker = peer("-m", "mosaic_worker", "policy", "random")
    hello = worker.handshake()
    assert hello["worker_kind"] == "policy" and hello["schema"]["paradigm"] == "random"
    assert worker.request({"type": "init_agent", "id": 1, **INIT})["type"] == "agent_ready"
    actions = [worker.request({"type": "decide", "id": 2 + i, "step": i, "observation": {}, "legal": [3, 5]})["action"]
               for i in range(10)]
    assert set(actions) <= {3, 5}
    assert worker.request({"type": "frobnicate", "id": 99})["code"] == "unknown_type"
    worker.send({"type": "stop", "id": 100})
    assert worker.recv()["type"] == "stopped"


def test_a_restored_random_policy_continues_identically():
    original = PolicyHandler(random_decide, "random", checkpoint=True)
    assert "checkpoint" in original.hello()["capabilities"]
    decisions(original, 7)
    saved = original.checkpoint({})
    assert saved["type"] == "state"
    after = [original.decide({"legal": [1, 4, 6, 9]})["action"] for _ in range(40)]

    fresh = PolicyHandler(random_decide, "random", checkpoint=True)
    fresh.init_agent(INIT)
    assert fresh.restore({"data": saved["data"]}) == {"type": "restored"}
    assert fresh.context.decisions == 7
    assert [fresh.decide({"legal": [1, 4, 6, 9]})["action"] for _ in range(40)] == after


def test_hooks_save_state_kept_outside_the_context():
    hidden = {"value": 0}

    def decide(observation, legal, context):
        hidden["value"] += 1
        context.state["seen"] = context.state.get("seen", 0) + 1
        return legal[hidden["value"] % len(legal)]

    handler = PolicyHandler(decide, "recurrent", save_state=lambda context: dict(hidden),
                            load_state=lambda context, saved: hidden.update(saved))
    assert "checkpoint" in handler.hello()["capabilities"]
    decisions(handler, 5)
    saved = handler.checkpoint({})["data"]
    decisions(handler, 3)
    handler.init_agent(INIT)
    handler.restore({"data": saved})
    assert hidden == {"value": 5} and handler.context.state == {"seen": 5}
    with pytest.raises(ValueError):
        PolicyHandler(decide, "half", save_state=lambda context: None)


def test_checkpoints_are_refused_with_reasons():
    plain = PolicyHandler(random_decide, "plain")
    assert "checkpoint" not in plain.hello()["capabilities"]
    plain.init_agent(INIT)
    with pytest.raises(WorkerError) as err:
        plain.checkpoint({})
    assert err.value.code == "unsupported" and "checkpoint=True" in str(err.value)

    handler = PolicyHandler(random_decide, "random", checkpoint=True)
    with pytest.raises(WorkerError) as err:
        handler.restore({"data": ""})
    assert err.value.code == "bad_request" and "before init_agent" in str(err.value)
    handler.init_agent(INIT)
    saved = handler.checkpoint({})["data"]
    handler.init_agent(dict(INIT, seed=78))
    with pytest.raises(WorkerError) as err:
        handler.restore({"data": saved})
    assert err.value.code == "bad_request" and "seed 77" in str(err.value)
    for bad in ["%%%", "bm90IGEgcGlja2xl"]:
        with pytest.raises(WorkerError) as err:
            handler.restore({"data": bad})
        assert err.value.code == "bad_request" and "not a saved policy state" in str(err.value)

    def unpicklable(observation, legal, context):
        context.state["gen"] = (x for x in legal)
        return legal[0]

    handler = PolicyHandler(unpicklable, "gen", checkpoint=True)
    decisions(handler, 1)
    with pytest.raises(WorkerError) as err:
        handler.checkpoint({})
    assert err.value.code == "unsupported"


def test_cli_random_policy_checkpoints_over_stdio(peer):
    worker = peer("-m", "mosaic_worker", "policy", "random")
    assert "checkpoint" in worker.handshake()["capabilities"]
    assert worker.request({"type": "init_agent", "id": 1, **INIT})["type"] == "agent_ready"
    state = worker.request({"type": "checkpoint", "id": 2})
    assert state["type"] == "state" and state["id"] == 2
    first = [worker.request({"type": "decide", "id": 3 + i, "observation": {}, "legal": [0, 1, 2, 3]})["action"]
             for i in range(20)]
    assert worker.request({"type": "restore", "id": 30, "data": state["data"]}) == {"type": "restored", "id": 30}
    again = [worker.request({"type": "decide", "id": 31 + i, "observation": {}, "legal": [0, 1, 2, 3]})["action"]
             for i in range(20)]
    assert again == first


def test_the_usual_decision_is_a_ready_line():
    handler = PolicyHandler(random_decide, "random")
    handler.init_agent(INIT)
    line = handler.decide({"type": "decide", "id": 12, "legal": [4]})
    assert isinstance(line, bytes) and line.endswith(b"\n")
    assert json.loads(line) == {"type": "decision", "id": 12, "action": 4}
    assert handler.decide({"type": "decide", "id": "twelve", "legal": [4]}) == {"type": "decision", "action": 4}


def echo_inbox(observation, legal, context):
    return {"action": legal[0], "message": "seen %d" % len(context.inbox),
            "detail": {"inbox": list(context.inbox)}}


MESSAGE = {"from": "green_1", "scope": "team", "step": 2, "text": "go left"}


def test_a_talking_policy_reads_its_inbox_and_answers_with_a_message():
    handler = PolicyHandler(echo_inbox, "talking", messages=True)
    assert "messages" in handler.hello()["capabilities"]
    handler.init_agent(INIT)
    reply = handler.decide({"legal": [3], "inbox": [MESSAGE]})
    assert reply == {"type": "decision", "action": 3, "message": "seen 1", "detail": {"inbox": [MESSAGE]}}
    # Each decision reads its own inbox: an empty or missing one leaves nothing from before.
    assert handler.decide({"legal": [3], "inbox": []})["detail"] == {"inbox": []}
    assert handler.decide({"legal": [3]})["message"] == "seen 0"
    with pytest.raises(WorkerError) as err:
        handler.decide({"legal": [3], "inbox": {"text": "not a list"}})
    assert err.value.code == "bad_request"


def test_a_silent_policy_neither_announces_nor_reads_messages():
    handler = PolicyHandler(echo_inbox, "silent")
    assert "messages" not in handler.hello()["capabilities"]
    handler.init_agent(INIT)
    assert handler.decide({"legal": [3], "inbox": [MESSAGE]})["detail"] == {"inbox": []}


def test_talking_worker_over_stdio(peer):
    script = Path(__file__).resolve().parents[2] / "tests" / "workers" / "talking_policy.py"
    worker = peer(str(script))
    hello = worker.handshake()
    assert "messages" in hello["capabilities"]
    assert worker.request({"type": "init_agent", "id": 1, **INIT})["type"] == "agent_ready"
    first = worker.request({"type": "decide", "id": 2, "step": 0, "observation": {}, "legal": [2, 5], "inbox": []})
    assert first == {"type": "decision", "id": 2, "action": 2, "message": "player_1 at 0 ok", "detail": {"heard": []}}
    second = worker.request({"type": "decide", "id": 3, "step": 1, "observation": {}, "legal": [5],
                             "inbox": [MESSAGE]})
    assert second["message"] == "@green_1 player_1 at 1 ok"
    assert second["detail"] == {"heard": ["green_1: go left"]}
