"""Policy workers: a Python decision function behind the protocol.

``decide(observation, legal, context)`` gets the observation dict (``symbolic``, ``text``,
``frame``, ``info`` as requested in ``wants``), the legal action indices and the
``Context`` of the current episode; it returns an action index, or a dict with ``action``
and any of ``text``, ``message``, ``usage``, ``detail``.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Dict, List, Optional, Union

from . import protocol
from .protocol import BAD_REQUEST, Handler, WorkerError

DecisionResult = Union[int, Dict[str, Any]]


class Context:
    """What a policy knows about its current episode."""

    def __init__(self, msg: Dict[str, Any]) -> None:
        self.agent_id: str = msg.get("agent_id", "")
        self.agent: int = int(msg.get("agent", 0))
        self.seed: int = int(msg.get("seed", 0))
        self.episode_seed: int = int(msg.get("episode_seed", 0))
        self.env: Dict[str, Any] = msg.get("env") or {}
        self.rng = random.Random(self.seed)
        self.state: Dict[str, Any] = {}


class PolicyHandler(Handler):
    kind = "policy"

    def __init__(self, decide: Callable[[Dict[str, Any], List[int], Context], DecisionResult], name: str,
                 wants: Optional[Dict[str, bool]] = None, paradigm: Optional[str] = None,
                 init: Optional[Callable[[Context], None]] = None) -> None:
        self.decide_fn = decide
        self.init_fn = init
        self.name = name
        self.wants = wants or {}
        self.paradigm = paradigm
        self.context: Optional[Context] = None

    def hello(self) -> Dict[str, Any]:
        schema: Dict[str, Any] = {"wants": self.wants}
        if self.paradigm:
            schema["paradigm"] = self.paradigm
        return protocol.hello("policy", schema, self.name)

    def handlers(self):
        return {"init_agent": self.init_agent, "decide": self.decide}

    def init_agent(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        self.context = Context(msg)
        if self.init_fn is not None:
            self.init_fn(self.context)
        return {"type": "agent_ready"}

    def decide(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        if self.context is None:
            raise WorkerError(BAD_REQUEST, "decide before init_agent")
        legal = msg.get("legal")
        if not isinstance(legal, list):
            raise WorkerError(BAD_REQUEST, "decide needs a list of legal actions")
        result = self.decide_fn(msg.get("observation") or {}, legal, self.context)
        reply = dict(result) if isinstance(result, dict) else {"action": result}
        reply["type"] = "decision"
        reply["action"] = int(reply["action"])
        return reply


def serve_policy(decide: Callable[[Dict[str, Any], List[int], Context], DecisionResult], name: str = "python-policy",
                 wants: Optional[Dict[str, bool]] = None, paradigm: Optional[str] = None,
                 init: Optional[Callable[[Context], None]] = None, listen: Optional[str] = None) -> int:
    """Serves a decision function. Returns the exit status."""
    return protocol.serve(PolicyHandler(decide, name, wants, paradigm, init), listen)


def random_decide(observation: Dict[str, Any], legal: List[int], context: Context) -> int:
    """Uniform over the legal actions, seeded by the agent's seed (reproducible)."""
    return context.rng.choice(legal) if legal else 0
