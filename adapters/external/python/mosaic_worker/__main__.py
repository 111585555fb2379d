"""Command line: ``python -m mosaic_worker gymnasium|pettingzoo|policy ...``.

    python -m mosaic_worker gymnasium MiniGrid-DoorKey-5x5-v0
    python -m mosaic_worker pettingzoo classic/chess_v6 --kwargs '{}'
    python -m mosaic_worker pettingzoo mpe2/simple_spread_v3 --api parallel
    python -m mosaic_worker policy random

``--listen tcp://host:port`` or ``unix:///path`` serves one orchestrator over a socket
instead of stdin/stdout; ``--connections N`` serves N of them at the same time, each in a
process of its own (0: until stopped). A listening worker asks for a token when
``$MOSAIC_WORKER_TOKEN`` is set or ``--token-file PATH`` is given (never on the command
line, where ``ps`` shows it).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any, Optional


def _import_env_module(path: str) -> Any:
    dotted = path.replace("/", ".")
    errors = []
    for candidate in (f"pettingzoo.{dotted}", dotted):
        try:
            return importlib.import_module(candidate)
        except ImportError as exc:
            errors.append(f"{candidate}: {exc}")
    raise SystemExit(f"cannot import environment module {path!r} ({'; '.join(errors)})")


def _chess_text(env: Any, agent: str, raw: Any) -> Optional[str]:
    board = getattr(env.unwrapped, "board", None)
    return None if board is None or not hasattr(board, "fen") else f"FEN: {board.fen()}"


def _minigrid_text(env: Any, agent: str, raw: Any) -> Optional[str]:
    mission = raw.get("mission") if isinstance(raw, dict) else None
    return None if mission is None else f"mission: {mission}"


def main(argv: Optional[list] = None) -> int:
    from . import protocol

    parser = argparse.ArgumentParser(prog="mosaic_worker", description=__doc__.splitlines()[0])
    parser.add_argument("family", choices=["gymnasium", "pettingzoo", "policy"])
    parser.add_argument("target", help="Gymnasium id, PettingZoo module path, or policy name (random)")
    parser.add_argument("--kwargs", default="{}", help="JSON object of constructor arguments")
    parser.add_argument("--api", choices=["aec", "parallel"], help="PettingZoo API (default: parallel if offered)")
    parser.add_argument("--listen", help="tcp://host:port or unix:///path instead of stdin/stdout")
    parser.add_argument("--token-file", help="file holding the token a listening worker asks for "
                                             f"(default: ${protocol.TOKEN_ENV})")
    parser.add_argument("--connections", type=int, default=1,
                        help="orchestrators a listening worker serves, each in its own process (0: until stopped)")
    args = parser.parse_args(argv)
    if args.connections < 0:
        raise SystemExit(f"--connections must be 0 (until stopped) or more, not {args.connections}")
    if not args.listen:
        if args.token_file:
            raise SystemExit("--token-file is for a worker that listens (--listen)")
        if args.connections != 1:
            raise SystemExit("--connections is for a worker that listens (--listen)")
        protocol.guard_stdout()
    try:
        token = protocol.listen_token(args.token_file) if args.listen else None
    except (OSError, ValueError) as exc:
        raise SystemExit(f"cannot read the token: {exc}")
    kwargs = json.loads(args.kwargs)
    if not isinstance(kwargs, dict):
        raise SystemExit("--kwargs must be a JSON object")

    if args.family == "policy":
        from .policy import random_decide, serve_policy

        if args.target != "random":
            raise SystemExit(f"unknown built-in policy {args.target!r} (known: random)")
        return serve_policy(random_decide, name="python-random", paradigm="random", listen=args.listen,
                            checkpoint=True, token=token, connections=args.connections)

    if args.family == "gymnasium":
        import gymnasium as gym

        if args.target.startswith(("MiniGrid", "BabyAI")):
            import minigrid  # noqa: F401  (registers the MiniGrid ids)
        from .env import serve_env

        env = gym.make(args.target, render_mode="rgb_array", **kwargs)
        text = _minigrid_text if args.target.startswith(("MiniGrid", "BabyAI")) else None
        return serve_env(env, f"gymnasium:{args.target}", text=text, listen=args.listen, token=token,
                         connections=args.connections)

    module = _import_env_module(args.target)
    name = f"pettingzoo:{args.target}"
    api = args.api or ("parallel" if hasattr(module, "parallel_env") else "aec")
    from .env import serve_aec, serve_parallel

    if api == "parallel":
        env = module.parallel_env(render_mode="rgb_array", **kwargs)
        return serve_parallel(env, name, listen=args.listen, token=token, connections=args.connections)
    env = module.env(render_mode="rgb_array", **kwargs)
    classic = args.target.startswith("classic/")
    text = _chess_text if "chess" in args.target else None
    return serve_aec(env, name, text=text, zero_sum_outcome=classic, listen=args.listen, token=token,
                     connections=args.connections)


if __name__ == "__main__":
    sys.exit(main())
