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
