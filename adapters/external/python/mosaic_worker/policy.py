"""Policy workers: a Python decision function behind the protocol.

``decide(observation, legal, context)`` gets the observation dict (``symbolic``, ``text``,
``frame``, ``info`` as requested in ``wants``), the legal action indices and the
``Context`` of the current episode; it returns an action index, or a dict with ``action``
and any of ``text``, ``message``, ``usage``, ``detail``.

Team channel (``serve_policy(..., messages=True)``, protocol ``mosaic/1.1``): the worker
announces the ``messages`` capability; before each decision ``context.inbox`` holds the
channel messages the agent reads at this step (dicts with ``from``, ``to`` (absent for a
broadcast), ``scope``, ``step``, ``text``), and the ``message`` of a returned dict is posted
to the agent's audience (``"@green_1 go left"`` addresses one agent). mosaic caps, delivers
and records messages exactly as it does those of language-model agents. Without
``messages=True``, ``context.inbox`` stays empty and a ``message`` is only recorded.

Checkpoints (for fault recovery: a restarted worker continues where the old one stopped)
are opt-in, because only the policy knows where its state lives:

- ``checkpoint=True``: all of the policy's state within an episode is in ``context.rng``
  and ``context.state``; both are saved (``context.state`` must be picklable).
- ``save_state(context) -> value`` and ``load_state(context, value)``: for state kept
  elsewhere (a network's recurrent state, a library's own RNG). The value must be
  picklable; ``context.rng`` and ``context.state`` are saved as well.
"""

from __future__ import annotations

import base64
import pickle
import random
from typing import Any, Callable, Dict, List, Optional, Union

from . import protocol
from .protocol import BAD_REQUEST, UNSUPPORTED, Handler, WorkerError

DecisionResult = Union[int, Dict[str, Any]]
DecideFn = Callable[[Dict[str, Any], List[int], "Context"], DecisionResult]
SaveFn = Callable[["Context"], Any]
LoadFn = Callable[["Context", Any], None]


class Context:
    """What a policy knows about its current episode.

    ``rng`` is seeded with the agent's seed (all randomness should come from it), ``state``
    is a dict for whatever the policy keeps between decisions, ``decisions`` counts the
    decisions made so far in the episode, and ``inbox`` lists the channel messages the agent
    reads at the current decision (empty unless served with ``messages=True``).
    """

    def __init__(self, msg: Dict[str, Any]) -> None:
        self.agent_id: str = msg.get("agent_id", "")
        self.agent: int = int(msg.get("agent", 0))
        self.seed: int = int(msg.get("seed", 0))
        self.episode_seed: int = int(msg.get("episode_seed", 0))
        self.env: Dict[str, Any] = msg.get("env") or {}
        self.rng = random.Random(self.seed)
        self.state: Dict[str, Any] = {}
        self.decisions: int = 0
        self.inbox: List[Dict[str, Any]] = []


class PolicyHandler(Handler):
    kind = "policy"

    def __init__(self, decide: DecideFn, name: str, wants: Optional[Dict[str, bool]] = None,
                 paradigm: Optional[str] = None, init: Optional[Callable[[Context], None]] = None,
                 checkpoint: bool = False, save_state: Optional[SaveFn] = None,
                 load_state: Optional[LoadFn] = None, messages: bool = False) -> None:
        if (save_state is None) != (load_state is None):
            raise ValueError("save_state and load_state go together")
        self.decide_fn = decide
        self.init_fn = init
        self.name = name
        self.wants = wants or {}
        self.paradigm = paradigm
        self.save_fn = save_state
        self.load_fn = load_state
        self.checkpoints = checkpoint or save_state is not None
        self.messages = messages
        self.context: Optional[Context] = None

    def hello(self) -> Dict[str, Any]:
        schema: Dict[str, Any] = {"wants": self.wants}
        if self.paradigm:
            schema["paradigm"] = self.paradigm
        capabilities = (["checkpoint"] if self.checkpoints else []) + (["messages"] if self.messages else [])
        return protocol.hello("policy", schema, self.name, capabilities)

    def handlers(self):
        return {"init_agent": self.init_agent, "decide": self.decide, "checkpoint": self.checkpoint,
                "restore": self.restore}

    def init_agent(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        self.context = Context(msg)
        if self.init_fn is not None:
            self.init_fn(self.context)
        return {"type": "agent_ready"}

    def decide(self, msg: Dict[str, Any]) -> Union[bytes, Dict[str, Any]]:
        context = self.context
        if context is None:
            raise WorkerError(BAD_REQUEST, "decide before init_agent")
        legal = msg.get("legal")
        if legal.__class__ is not list:
            raise WorkerError(BAD_REQUEST, "decide needs a list of legal actions")
        if self.messages:
            inbox = msg.get("inbox")
            if inbox is not None and inbox.__class__ is not list:
                raise WorkerError(BAD_REQUEST, "decide.inbox must be a list of messages")
            context.inbox = inbox or []
        result = self.decide_fn(msg.get("observation") or {}, legal, context)
        context.decisions += 1
        if result.__class__ is int:
            rid = msg.get("id")
            if rid.__class__ is int:
                # The usual reply, formatted directly: a fifth of the JSON encoder's cost.
                return b'{"type":"decision","id":%d,"action":%d}\n' % (rid, result)
        if not isinstance(result, dict):
            return {"type": "decision", "action": int(result)}
        reply = dict(result)
        reply["type"] = "decision"
        reply["action"] = int(reply["action"])
        return reply

    def checkpoint(self, _msg: Dict[str, Any]) -> Dict[str, Any]:
        context = self._checkpointed_context("checkpoint")
        saved = {
            "agent_id": context.agent_id,
            "seed": context.seed,
            "decisions": context.decisions,
            "rng": context.rng.getstate(),
            "state": context.state,
            "custom": self.save_fn(context) if self.save_fn is not None else None,
        }
        try:
            data = pickle.dumps(saved)
        except Exception as exc:
            raise WorkerError(UNSUPPORTED, f"{self.name}: the policy's state cannot be saved: {exc}") from None
        return {"type": "state", "data": base64.b64encode(data).decode("ascii")}

    def restore(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        context = self._checkpointed_context("restore")
        try:
            saved = pickle.loads(base64.b64decode(msg.get("data", ""), validate=True))
            seed, agent_id = saved["seed"], saved["agent_id"]
        except Exception as exc:
            raise WorkerError(BAD_REQUEST, f"{self.name}: not a saved policy state: {exc}") from None
        if (seed, agent_id) != (context.seed, context.agent_id):
            raise WorkerError(BAD_REQUEST, f"{self.name}: the state is of agent {agent_id!r} with seed {seed}, "
                                           f"this episode is agent {context.agent_id!r} with seed {context.seed}")
        context.rng.setstate(saved["rng"])
        context.state = saved["state"]
        context.decisions = saved["decisions"]
        if self.load_fn is not None:
            self.load_fn(context, saved["custom"])
        return {"type": "restored"}

    def _checkpointed_context(self, request: str) -> Context:
        if not self.checkpoints:
            raise WorkerError(UNSUPPORTED, f"{self.name} does not save its state (serve it with checkpoint=True, "
                                           "or save_state and load_state)")
        if self.context is None:
            raise WorkerError(BAD_REQUEST, f"{request} before init_agent")
        return self.context


def serve_policy(decide: DecideFn, name: str = "python-policy", wants: Optional[Dict[str, bool]] = None,
                 paradigm: Optional[str] = None, init: Optional[Callable[[Context], None]] = None,
                 listen: Optional[str] = None, checkpoint: bool = False, save_state: Optional[SaveFn] = None,
                 load_state: Optional[LoadFn] = None, messages: bool = False, token: Optional[str] = None,
                 connections: int = 1) -> int:
    """Serves a decision function. Returns the exit status.

    ``checkpoint``, ``save_state``, ``load_state`` and ``messages`` (the team channel): see
    the module's documentation. ``token``: the token a worker listening on ``listen`` asks
    for (default ``$MOSAIC_WORKER_TOKEN``); ``connections``: how many orchestrators it
    serves, each in its own process (0: until stopped; see ``protocol.serve``).
    """
    handler = PolicyHandler(decide, name, wants, paradigm, init, checkpoint, save_state, load_state, messages)
    return protocol.serve(handler, listen, token=token, connections=connections)


def random_decide(observation: Dict[str, Any], legal: List[int], context: Context) -> int:
    """Uniform over the legal actions, seeded by the agent's seed (reproducible; its state is
    ``context.rng``, so serve it with ``checkpoint=True``)."""
    return context.rng.choice(legal) if legal else 0
