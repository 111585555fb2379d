import sys
from pathlib import Path

import gymnasium as gym
import minigrid  # noqa: F401
import pytest
from mpe2 import simple_spread_v3
from pettingzoo.classic import chess_v6, connect_four_v3, tictactoe_v3

from mosaic_worker import AecEnv, GymnasiumEnv, ParallelEnv, WorkerError

WANT = {"symbolic": True}


def episode(handler, seed, pick, limit=400):
    handler.reset({"seed": seed, "want": WANT})
    reply = handler.reset({"seed": seed, "want": WANT})
    trace = []
    while reply["acting"] and len(trace) < limit:
        actions = [None] * len(handler.agents)
        for view in reply["agents"]:
            actions[view["agent"]] = pick(view["legal"], len(trace))
        reply = handler.step({"actions": actions, "want": WANT})
        trace.append((actions, reply["rewards"], reply["terminated"], reply["truncated"], str(reply["agents"])))
    return trace


def test_gymnasium_minigrid_spec_and_determinism():
    handler = GymnasiumEnv(gym.make("MiniGrid-DoorKey-5x5-v0", render_mode="rgb_array"), "doorkey")
    hello = handler.hello()
    assert hello["schema"]["action_labels"][:3] == ["left", "right", "forward"]
    assert hello["schema"]["symbolic_shape"] == [7, 7, 3]
    assert hello["schema"]["offers"]["frame"] is True
    pick = lambda legal, i: legal[(i * 3 + 1) % len(legal)]
    assert episode(handler, 5, pick) == episode(handler, 5, pick)
    assert episode(handler, 5, pick) != episode(handler, 6, pick)
    frame = handler.reset({"seed": 1, "want": {"frame": True, "render": True}})
    assert frame["agents"][0]["observation"]["frame"]["width"] == 160
    assert frame["render"]["encoding"] == "png"


def test_gymnasium_rejects_illegal_and_early_steps():
    handler = GymnasiumEnv(gym.make("MiniGrid-Empty-5x5-v0"), "empty")
    with pytest.raises(WorkerError) as err:
        handler.step({"actions": [0]})
    assert err.value.code == "bad_request"
    handler.reset({"seed": 0})
    with pytest.raises(WorkerError) as err:
        handler.step({"actions": [9]})
    assert err.value.code == "illegal_action"
    with pytest.raises(WorkerError):
        handler.step({"actions": [0, 1]})


def test_aec_masks_become_legal_actions_and_outcomes():
    handler = AecEnv(connect_four_v3.env(), "c4", zero_sum_outcome=True)
    assert handler.hello()["schema"]["stepping"] == "sequential"
    trace = episode(handler, 2, lambda legal, i: legal[0])
    # Always dropping in the first legal column: player_0 wins on column 0.
    assert trace[-1][2] == [True, True]
    reply = handler.reset({"seed": 2})
    assert reply["acting"] == [0] and reply["agents"][0]["legal"] == list(range(7))


def test_chess_illegal_moves_are_refused_before_stepping():
    handler = AecEnv(chess_v6.env(), "chess")
    reply = handler.reset({"seed": 1})
    legal = reply["agents"][0]["legal"]
    assert 0 not in legal and len(legal) == 20
    with pytest.raises(WorkerError) as err:
        handler.step({"actions": [0, None]})
    assert err.value.code == "illegal_action"
    with pytest.raises(WorkerError) as err:
        handler.step({"actions": [None, legal[0]]})
    assert err.value.code == "bad_request"
    assert handler.step({"actions": [legal[0], None]})["acting"] == [1]


def test_parallel_env_all_agents_act_until_truncation():
    handler = ParallelEnv(simple_spread_v3.parallel_env(max_cycles=10), "spread")
    trace = episode(handler, 4, lambda legal, i: legal[i % len(legal)])
    assert len(trace) == 10
    assert trace[-1][3] == [True, True, True]
    assert episode(handler, 4, lambda legal, i: legal[i % len(legal)]) == trace


def test_checkpoint_round_trip():
    handler = GymnasiumEnv(gym.make("MiniGrid-DoorKey-5x5-v0"), "doorkey")
    handler.reset({"seed": 3, "want": WANT})
    handler.step({"actions": [2]})
    state = handler.checkpoint({})["data"]
    after = [handler.step({"actions": [a], "want": WANT})["agents"] for a in (1, 2, 2)]
    handler.restore({"data": state})
    assert [handler.step({"actions": [a], "want": WANT})["agents"] for a in (1, 2, 2)] == after
    with pytest.raises(WorkerError):
        handler.restore({"data": "bm9wZQ=="})


# Every family the docs advertise, made as ``python -m mosaic_worker`` makes it (rendering
# on: PettingZoo's classic envs then hold pygame images).
FAMILIES = {
    "minigrid": lambda: GymnasiumEnv(gym.make("MiniGrid-DoorKey-5x5-v0", render_mode="rgb_array"), "doorkey"),
    "chess": lambda: AecEnv(chess_v6.env(render_mode="rgb_array"), "chess", zero_sum_outcome=True),
    "connect_four": lambda: AecEnv(connect_four_v3.env(render_mode="rgb_array"), "c4", zero_sum_outcome=True),
    "tictactoe": lambda: AecEnv(tictactoe_v3.env(render_mode="rgb_array"), "ttt", zero_sum_outcome=True),
    "spread_parallel": lambda: ParallelEnv(simple_spread_v3.parallel_env(render_mode="rgb_array"), "spread"),
    "spread_aec": lambda: AecEnv(simple_spread_v3.env(render_mode="rgb_array"), "spread"),
}


def play(handler, reply, steps, offset):
    """``steps`` steps from ``reply`` with moves picked from the legal ones; the replies."""
    trace = []
    for i in range(steps):
        if not reply["acting"]:
            break
        actions = [None] * len(handler.agents)
        for view in reply["agents"]:
            actions[view["agent"]] = view["legal"][(offset + 7 * i) % len(view["legal"])]
        reply = handler.step({"actions": actions, "want": WANT})
        trace.append(reply)
    return reply, trace


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_checkpoint_restores_the_episode_in_a_new_worker(family):
    first = FAMILIES[family]()
    reply, _ = play(first, first.reset({"seed": 11, "want": WANT}), 3, 1)
    state = first.checkpoint({})["data"]
    # The board's pictures are not in it: a restored environment keeps its own.
    assert len(state) < 1_000_000
    _, then = play(first, reply, 6, 2)
    # A restarted worker: a new environment, given the saved state.
    second = FAMILIES[family]()
    second.restore({"data": state})
    _, again = play(second, reply, 6, 2)
    assert len(then) == 6
    assert again == then
    # Both render the same picture.
    render = lambda handler: handler.handlers()["render"]({})["frame"]
    assert render(second) is not None and render(second) == render(first)


def test_an_aec_env_without_an_agent_to_move_is_an_error_not_none_stepped():
    handler = FAMILIES["chess"]()
    handler.reset({"seed": 1})
    handler.env.unwrapped.agent_selection = None
    with pytest.raises(WorkerError) as err:
        handler.step({"actions": [None, None]})
    assert err.value.code == "internal" and "no agent to move" in str(err.value)


def test_cli_serves_over_stdio(peer):
    worker = peer("-m", "mosaic_worker", "pettingzoo", "classic/connect_four_v3")
    hello = worker.handshake(frames="png")
    assert hello["schema"]["agents"] == [{"id": "player_0"}, {"id": "player_1"}]
    reply = worker.request({"type": "reset", "id": 1, "seed": 0, "want": {"render": True}})
    assert reply["id"] == 1 and reply["render"]["encoding"] == "png"
    reply = worker.request({"type": "observe", "id": 2, "agent": 1, "want": {"symbolic": True}})
    assert reply["view"]["observation"]["symbolic"]["shape"] == [6, 7, 2]
    assert worker.request({"type": "stop", "id": 3}) == {"type": "stopped", "id": 3}
    assert worker.proc.wait(timeout=10) == 0


def test_glue_example_is_short_and_works(peer):
    example = Path(__file__).resolve().parents[1] / "examples" / "tictactoe_worker.py"
    assert len(example.read_text().splitlines()) <= 50
    worker = peer(str(example))
    hello = worker.handshake()
    assert hello["schema"]["action_labels"][0] == "top-left"
    reply = worker.request({"type": "reset", "id": 1, "seed": 0, "want": {"text": True}})
    assert reply["agents"][0]["observation"]["text"].endswith(". . .\n. . .\n. . .")
    reply = worker.request({"type": "step", "id": 2, "actions": [4, None], "want": {"text": True}})
    assert "X" not in reply["agents"][0]["observation"]["text"].split("Board:")[1]
    assert "O" in reply["agents"][0]["observation"]["text"]
