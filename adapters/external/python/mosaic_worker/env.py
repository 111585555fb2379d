"""Environment workers: Gymnasium, PettingZoo AEC and PettingZoo parallel environments.

Each adapter turns the library's observations into mosaic's modalities:

- ``symbolic``: the observation array (PettingZoo: ``observation["observation"]``;
  Gymnasium dicts: their ``"image"`` entry), flattened with its shape;
- ``text``: the ``text`` hook's result, if one was given (``text(env, agent, obs) -> str``);
- ``frame``: ``env.render()`` when the env was made with ``render_mode="rgb_array"``;
- ``legal``: the action mask (``observation["action_mask"]`` or ``info["action_mask"]``),
  else every action.
"""

from __future__ import annotations

import base64
import io
import pickle
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import protocol
from .protocol import BAD_REQUEST, ILLEGAL_ACTION, INTERNAL, UNSUPPORTED, Handler, WorkerError

try:
    from gymnasium.utils import EzPickle
except ImportError:  # a worker serving environments of another library
    EzPickle = None

TextHook = Callable[[Any, str, Any], Optional[str]]


class _Remade:
    """Stands for a rendering resource (a pygame surface, clock or font, or a dict or list
    of them) in a checkpoint: pygame cannot pickle them, and most are large and constant
    (a board's pictures). A restored environment keeps those of its fresh instance; one it
    lacks (a render target made at reset) is made anew, blank: environments redraw their
    whole picture at every render."""

    def __init__(self, value: Any) -> None:
        self.recipe = _recipe(value)

    def make(self) -> Any:
        return _make(self.recipe)


def _recipe(value: Any) -> Any:
    pygame = sys.modules["pygame"]
    if isinstance(value, dict):
        return ("dict", {k: _recipe(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_recipe(v) for v in value])
    if isinstance(value, pygame.Surface):
        return ("surface", value.get_size(), value.get_flags() & pygame.SRCALPHA)
    if isinstance(value, pygame.time.Clock):
        return ("clock",)
    freetype = sys.modules.get("pygame.freetype")
    if freetype is not None and isinstance(value, freetype.Font):
        return ("font", value.path, value.size)
    raise TypeError(f"cannot remake a {type(value).__name__}")


def _make(recipe: Any) -> Any:
    import pygame

    kind = recipe[0]
    if kind == "dict":
        return {k: _make(v) for k, v in recipe[1].items()}
    if kind in ("list", "tuple"):
        items = [_make(v) for v in recipe[1]]
        return items if kind == "list" else tuple(items)
    if kind == "surface":
        return pygame.Surface(recipe[1], recipe[2])
    if kind == "clock":
        return pygame.time.Clock()
    import pygame.freetype

    return pygame.freetype.Font(recipe[1], recipe[2])


def _is_resource(value: Any) -> bool:
    """Whether ``value`` is (or holds, in a dict, list or tuple) a pygame object."""
    if isinstance(value, dict):
        return any(_is_resource(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_is_resource(v) for v in value)
    return type(value).__module__.split(".")[0] == "pygame"


def _rebuilt(cls: type, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    """A fresh instance, made the way ``EzPickle`` makes one (with its rendering resources)."""
    return cls(*args, **kwargs)


def _set_attributes(obj: Any, attributes: Dict[str, Any]) -> None:
    for name, value in attributes.items():
        if isinstance(value, _Remade):
            if obj.__dict__.get(name) is None:
                obj.__dict__[name] = value.make()
        else:
            obj.__dict__[name] = value


class _StatePickler(pickle.Pickler):
    """Pickles an environment's whole state.

    Classes built on gymnasium's ``EzPickle`` (PettingZoo's classic and MPE environments,
    some Gymnasium ones) pickle only their constructor arguments: unpickled, such an
    environment is a new, unreset one, not the one saved (a restored chess game had no agent
    to move). Here they are rebuilt that way and then given their saved attributes; their
    rendering resources stay those of the rebuilt instance (see ``_Remade``). Anything else
    that cannot be pickled makes the checkpoint fail (``unsupported``), never a wrong
    restore.
    """

    def reducer_override(self, obj: Any) -> Any:
        if EzPickle is None or not isinstance(obj, EzPickle):
            return NotImplemented
        attributes = {
            name: _Remade(value) if _is_resource(value) else value for name, value in vars(obj).items()
        }
        rebuild = (type(obj), obj._ezpickle_args, obj._ezpickle_kwargs)
        return _rebuilt, rebuild, attributes, None, None, _set_attributes


def _pickled_state(state: Dict[str, Any]) -> bytes:
    out = io.BytesIO()
    _StatePickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(state)
    return out.getvalue()


def _flat(array: Any) -> Optional[Dict[str, Any]]:
    import numpy as np

    if array is None:
        return None
    arr = np.asarray(array, dtype=np.float32)
    return {"shape": list(arr.shape), "data": arr.ravel().tolist()}


def _discrete_n(space: Any) -> int:
    n = getattr(space, "n", None)
    if n is None:
        raise TypeError(f"only discrete action spaces are supported, got {space}")
    return int(n)


def _mask_indices(mask: Any, n: int) -> List[int]:
    if mask is None:
        return list(range(n))
    return [i for i, ok in enumerate(list(mask)[:n]) if ok]


class _EnvHandler(Handler):
    """Shared parts of the env adapters; subclasses fill the episode logic."""

    kind = "env"

    def __init__(self, env: Any, name: str, agents: Sequence[str], labels: Sequence[str], stepping: str,
                 text: Optional[TextHook], default_action: int, max_steps: Optional[int],
                 symbolic_shape: Optional[List[int]], teams: Optional[Dict[str, str]] = None) -> None:
        self.env = env
        self.name = name
        self.agents = list(agents)
        self.labels = [str(label) for label in labels]
        self.text_hook = text
        self.stepping = stepping
        self.default_action = default_action
        self.max_steps = max_steps
        self.symbolic_shape = symbolic_shape
        self.teams = teams or {}
        self.want: Dict[str, bool] = {}
        self.running = False

    # -- what subclasses provide -------------------------------------------------------
    def _reset(self, seed: int, options: Dict[str, Any]) -> None:
        raise NotImplementedError

    def _step(self, actions: List[Optional[int]], out: Dict[str, Any]) -> None:
        raise NotImplementedError

    def _acting(self) -> List[int]:
        raise NotImplementedError

    def _raw_obs(self, agent: int) -> Any:
        raise NotImplementedError

    def _legal(self, agent: int, raw: Any) -> List[int]:
        raise NotImplementedError

    # -- protocol --------------------------------------------------------------------
    def hello(self) -> Dict[str, Any]:
        frame = getattr(self.env, "render_mode", None) == "rgb_array"
        spec = {
            "name": self.name,
            "agents": [{"id": a, **({"team": self.teams[a]} if a in self.teams else {})} for a in self.agents],
            "action_labels": self.labels,
            "default_action": self.default_action,
            "stepping": self.stepping,
            "offers": {"symbolic": self.symbolic_shape is not None, "text": self.text_hook is not None, "frame": frame},
        }
        if self.max_steps is not None:
            spec["max_steps"] = self.max_steps
        if self.symbolic_shape is not None:
            spec["symbolic_shape"] = self.symbolic_shape
        return protocol.hello("env", spec, self.name, ["checkpoint"])

    def handlers(self):
        return {
            "reset": self.reset,
            "step": self.step,
            "observe": self.observe,
            "render": lambda _msg: {"type": "rendered", "frame": self._render()},
            "close": self.close_env,
            "checkpoint": self.checkpoint,
            "restore": self.restore,
        }

    def reset(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        seed = msg.get("seed")
        if not isinstance(seed, int):
            raise WorkerError(BAD_REQUEST, "reset needs an integer seed")
        self.want = msg.get("want") or {}
        self._reset(seed, msg.get("options") or {})
        self.running = True
        return self._with_views({"type": "observations"})

    def step(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        if not self.running:
            raise WorkerError(BAD_REQUEST, "step before reset (or after the episode ended)")
        actions = msg.get("actions")
        if not isinstance(actions, list) or len(actions) != len(self.agents):
            raise WorkerError(BAD_REQUEST, f"step needs one action (or null) per agent: {len(self.agents)} entries")
        acting = self._acting()
        for i, action in enumerate(actions):
            if (action is None) != (i not in acting):
                raise WorkerError(BAD_REQUEST, f"agent {i} ({self.agents[i]}): action given "
                                  f"{'to an agent that does not act' if action is not None else 'missing'}")
            if action is not None:
                legal = self._legal(i, self._raw_obs(i))
                if not isinstance(action, int) or action not in legal:
                    raise WorkerError(ILLEGAL_ACTION, f"agent {i} ({self.agents[i]}): action {action!r} is not legal "
                                      f"(legal: {legal[:20]}{'...' if len(legal) > 20 else ''})")
        self.want = msg.get("want") or self.want
        n = len(self.agents)
        out: Dict[str, Any] = {
            "type": "transition",
            "rewards": [0.0] * n,
            "terminated": [False] * n,
            "truncated": [False] * n,
        }
        self._step(actions, out)
        out = self._with_views(out)
        if not out["acting"]:
            self.running = False
        return out

    def observe(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        agent = msg.get("agent")
        if not isinstance(agent, int) or not 0 <= agent < len(self.agents):
            raise WorkerError(BAD_REQUEST, f"observe: no agent {agent!r}")
        return {"type": "observation", "view": self._view(agent, msg.get("want") or {})}

    def close_env(self, _msg: Dict[str, Any]) -> Dict[str, Any]:
        self.close()
        return {"type": "closed"}

    #: Attributes that change within an episode: what a checkpoint saves (subclasses add
    #: their own).
    EPISODE_STATE: Tuple[str, ...] = ("env", "running", "want")

    def checkpoint(self, _msg: Dict[str, Any]) -> Dict[str, Any]:
        try:
            data = _pickled_state({name: getattr(self, name) for name in self.EPISODE_STATE})
        except Exception as exc:
            raise WorkerError(UNSUPPORTED, f"{self.name} cannot be saved: {exc}") from None
        return {"type": "state", "data": base64.b64encode(data).decode("ascii")}

    def restore(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        try:
            state = pickle.loads(base64.b64decode(msg.get("data", "")))
            for name in self.EPISODE_STATE:
                setattr(self, name, state[name])
        except Exception as exc:
            raise WorkerError(BAD_REQUEST, f"cannot restore {self.name}: {exc}") from None
        return {"type": "restored"}

    def close(self) -> None:
        try:
            self.env.close()
        except Exception:
            pass

    # -- helpers ---------------------------------------------------------------------
    def _with_views(self, out: Dict[str, Any]) -> Dict[str, Any]:
        acting = self._acting()
        out["acting"] = acting
        out["agents"] = [self._view(i, self.want) for i in acting]
        if self.want.get("render"):
            out["render"] = self._render()
        return out

    def _view(self, agent: int, want: Dict[str, Any]) -> Dict[str, Any]:
        raw = self._raw_obs(agent)
        observation: Dict[str, Any] = {}
        if want.get("symbolic"):
            symbolic = _flat(self._symbolic(raw))
            if symbolic is not None:
                observation["symbolic"] = symbolic
        if want.get("text") and self.text_hook is not None:
            text = self.text_hook(self.env, self.agents[agent], raw)
            if text is not None:
                observation["text"] = str(text)
        if want.get("frame"):
            frame = self._render()
            if frame is not None:
                observation["frame"] = frame
        return {"agent": agent, "legal": self._legal(agent, raw), "observation": observation}

    @staticmethod
    def _symbolic(raw: Any) -> Any:
        if isinstance(raw, dict):
            for key in ("observation", "image"):
                if key in raw:
                    return raw[key]
            return None
        return raw

    def _render(self) -> Optional[Dict[str, Any]]:
        if getattr(self.env, "render_mode", None) != "rgb_array":
            return None
        rgb = self.env.render()
        return None if rgb is None else protocol.encode_frame(rgb, self.frames)


class GymnasiumEnv(_EnvHandler):
    """A single-agent Gymnasium environment with a discrete action space."""

    EPISODE_STATE = _EnvHandler.EPISODE_STATE + ("_obs", "_info", "_done")

    def __init__(self, env: Any, name: str, labels: Optional[Sequence[str]] = None,
                 text: Optional[TextHook] = None, agent: str = "agent", default_action: int = 0) -> None:
        n = _discrete_n(env.action_space)
        if labels is None:
            actions = getattr(env.unwrapped, "actions", None)
            try:
                labels = [a.name for a in actions] if actions is not None else None
            except TypeError:
                labels = None
            if labels is None or len(labels) != n:
                labels = [str(i) for i in range(n)]
        spec = getattr(env, "spec", None)
        max_steps = getattr(spec, "max_episode_steps", None) if spec is not None else None
        max_steps = max_steps or getattr(env.unwrapped, "max_steps", None)
        shape = self._symbolic(env.observation_space.sample()) if env.observation_space is not None else None
        super().__init__(env, name, [agent], labels, "single", text, default_action,
                         int(max_steps) if max_steps else None,
                         list(getattr(shape, "shape", ())) if shape is not None else None)
        self._obs: Any = None
        self._info: Dict[str, Any] = {}
        self._done = True

    def _reset(self, seed, options):
        self._obs, self._info = self.env.reset(seed=seed, options=options or None)
        self._done = False

    def _step(self, actions, out):
        self._obs, reward, terminated, truncated, self._info = self.env.step(actions[0])
        out["rewards"][0] = float(reward)
        out["terminated"][0] = bool(terminated)
        out["truncated"][0] = bool(truncated)
        self._done = bool(terminated or truncated)

    def _acting(self):
        return [] if self._done else [0]

    def _raw_obs(self, agent):
        return self._obs

    def _legal(self, agent, raw):
        return _mask_indices((self._info or {}).get("action_mask"), len(self.labels))


def _common_actions(spaces: List[Any]) -> int:
    return max(_discrete_n(space) for space in spaces)


def _teams(agents: Sequence[str]) -> Dict[str, str]:
    """`red_0`, `red_1`, `blue_0` -> teams red and blue (only when every agent has one)."""
    teams = {}
    for agent in agents:
        team, sep, index = agent.rpartition("_")
        if not sep or not index.isdigit():
            return {}
        teams[agent] = team
    return teams if len(set(teams.values())) > 1 and len(set(teams.values())) < len(agents) else {}


class AecEnv(_EnvHandler):
    """A PettingZoo AEC environment: one agent acts per step; masks become legal actions.

    ``zero_sum_outcome``: report win/draw/loss from the sign of each agent's final reward
    (board games).
    """

    EPISODE_STATE = _EnvHandler.EPISODE_STATE + ("_returns",)

    def __init__(self, env: Any, name: str, labels: Optional[Sequence[str]] = None,
                 text: Optional[TextHook] = None, zero_sum_outcome: bool = False, default_action: int = 0) -> None:
        agents = list(env.possible_agents)
        n = _common_actions([env.action_space(a) for a in agents])
        obs_space = env.observation_space(agents[0])
        sample = self._symbolic(obs_space.sample())
        super().__init__(env, name, agents, labels or [str(i) for i in range(n)], "sequential", text,
                         default_action, None, list(sample.shape) if sample is not None else None, _teams(agents))
        self.zero_sum_outcome = zero_sum_outcome
        self._returns = [0.0] * len(agents)

    def _reset(self, seed, options):
        self.env.reset(seed=seed, options=options or None)
        self._returns = [0.0] * len(self.agents)

    def _acting(self):
        if not self.env.agents:
            return []
        selected = self.env.agent_selection
        if self.env.terminations.get(selected) or self.env.truncations.get(selected):
            return []
        return [self._selected()]

    def _selected(self) -> int:
        """The agent whose turn it is; an error, never ``None`` stepped, when there is none."""
        selected = self.env.agent_selection
        if selected not in self.agents:
            raise WorkerError(INTERNAL, f"{self.name}: no agent to move (agent_selection is {selected!r}, "
                                        f"agents are {self.agents})")
        return self.agents.index(selected)

    def _raw_obs(self, agent):
        return self.env.observe(self.agents[agent])

    def _legal(self, agent, raw):
        mask = raw.get("action_mask") if isinstance(raw, dict) else None
        if mask is None:
            mask = self.env.infos.get(self.agents[agent], {}).get("action_mask")
        if mask is None and self.agents[agent] not in self.env.agents:
            return []
        return _mask_indices(mask, len(self.labels))

    def _step(self, actions, out):
        env = self.env
        env.step(actions[self._selected()])
        for i, agent in enumerate(self.agents):
            out["rewards"][i] = float(env.rewards.get(agent, 0.0))
            out["terminated"][i] = bool(env.terminations.get(agent, agent not in env.agents))
            out["truncated"][i] = bool(env.truncations.get(agent, False))
        # Agents that are done must be stepped with None before the game moves on.
        while env.agents and (env.terminations.get(env.agent_selection) or env.truncations.get(env.agent_selection)):
            env.step(None)
        for i, reward in enumerate(out["rewards"]):
            self._returns[i] += reward
        if not self._acting():
            for i, agent in enumerate(self.agents):
                if not out["terminated"][i]:
                    out["truncated"][i] = True
            if self.zero_sum_outcome and all(out["terminated"]):
                out["outcome"] = ["win" if r > 0 else "loss" if r < 0 else "draw" for r in self._returns]


class ParallelEnv(_EnvHandler):
    """A PettingZoo parallel environment: every live agent acts each step."""

    EPISODE_STATE = _EnvHandler.EPISODE_STATE + ("_obs", "_infos")

    def __init__(self, env: Any, name: str, labels: Optional[Sequence[str]] = None,
                 text: Optional[TextHook] = None, default_action: int = 0) -> None:
        agents = list(env.possible_agents)
        n = _common_actions([env.action_space(a) for a in agents])
        sample = self._symbolic(env.observation_space(agents[0]).sample())
        max_steps = getattr(env.unwrapped, "max_cycles", None)
        super().__init__(env, name, agents, labels or [str(i) for i in range(n)], "simultaneous", text,
                         default_action, int(max_steps) if max_steps else None,
                         list(sample.shape) if sample is not None else None, _teams(agents))
        self._obs: Dict[str, Any] = {}
        self._infos: Dict[str, Any] = {}

    def _reset(self, seed, options):
        self._obs, self._infos = self.env.reset(seed=seed, options=options or None)

    def _acting(self):
        return [i for i, agent in enumerate(self.agents) if agent in self.env.agents]

    def _raw_obs(self, agent):
        return self._obs.get(self.agents[agent])

    def _legal(self, agent, raw):
        if self.agents[agent] not in self.env.agents:
            return []
        mask = raw.get("action_mask") if isinstance(raw, dict) else None
        if mask is None:
            mask = (self._infos.get(self.agents[agent]) or {}).get("action_mask")
        return _mask_indices(mask, len(self.labels))

    def _step(self, actions, out):
        joint = {agent: actions[i] for i, agent in enumerate(self.agents) if actions[i] is not None}
        self._obs, rewards, terminations, truncations, self._infos = self.env.step(joint)
        for i, agent in enumerate(self.agents):
            out["rewards"][i] = float(rewards.get(agent, 0.0))
            out["terminated"][i] = bool(terminations.get(agent, False))
            out["truncated"][i] = bool(truncations.get(agent, False))


def serve_env(env: Any, name: str, labels: Optional[Sequence[str]] = None, text: Optional[TextHook] = None,
              listen: Optional[str] = None, token: Optional[str] = None, connections: int = 1) -> int:
    """Serves a Gymnasium environment (discrete actions). Returns the exit status."""
    return protocol.serve(GymnasiumEnv(env, name, labels, text), listen, token=token, connections=connections)


def serve_aec(env: Any, name: str, labels: Optional[Sequence[str]] = None, text: Optional[TextHook] = None,
              zero_sum_outcome: bool = False, listen: Optional[str] = None, token: Optional[str] = None,
              connections: int = 1) -> int:
    """Serves a PettingZoo AEC environment. Returns the exit status."""
    return protocol.serve(AecEnv(env, name, labels, text, zero_sum_outcome), listen, token=token,
                          connections=connections)


def serve_parallel(env: Any, name: str, labels: Optional[Sequence[str]] = None, text: Optional[TextHook] = None,
                   listen: Optional[str] = None, token: Optional[str] = None, connections: int = 1) -> int:
    """Serves a PettingZoo parallel environment. Returns the exit status."""
    return protocol.serve(ParallelEnv(env, name, labels, text), listen, token=token, connections=connections)
