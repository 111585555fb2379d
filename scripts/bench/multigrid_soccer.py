#!/usr/bin/env python3
"""Raw speed of the Python mosaic-multigrid 7.0.0 soccer env, 4 uniform random agents.

Usage (python = MOSAIC_PY_MULTIGRID from scripts/setup/python-envs.sh):
    python scripts/bench/multigrid_soccer.py [STEPS=200000] [--seed S]

stdout: one JSON line {"env", "steps", "seconds", "steps_per_s"}.
stderr: the env facts a Rust re-implementation must match (read from the package
source; the ones that can be checked on the live env are asserted first) and
statistics of the benchmark episodes.
"""
import argparse
import json
import sys
import time
import warnings

import gymnasium as gym
import numpy as np

import mosaic_multigrid  # noqa: F401  (registers the MosaicMultiGrid-* ids)

ENV_ID = "MosaicMultiGrid-S-2v2-IndAgObs-v1"

FACTS = """\
mosaic-multigrid 7.0.0, MosaicMultiGrid-S-2v2-IndAgObs-v1 = envs/soccer_game.py
SoccerGame4HIndAgObsEnv16x11N2(SoccerGameIndAgObsEnv(SoccerGameEnv(base.MultiGridEnv))).
gym.make adds only PassiveEnvChecker + OrderEnforcing (no TimeLimit). Defaults
(gym.make kwargs can override): max_steps=256, goals_to_win=2, steal_cooldown=10,
reward_shaping=True, view_size=3, zero_sum=False. (The docstring of envs/__init__.py
claims +15 reward / 300 steps / zero-sum / timeout penalty: NOT what the code does.)

GRID 16x11, x=column 0..15, y=row 0..10 (y grows downwards). Border walls; the
14x9 interior (x 1..14, y 1..9) is open. 6 goal cells (type objgoal, walkable):
x=1,y=4..6 belong to team 1 (green; team 2 scores there); x=14,y=4..6 belong to
team 2 (blue; team 1 scores there). Agents 0,1 = team 1 (green), 2,3 = team 2 (blue).
One ball (index 0 = wildcard, colour red).

DIRECTIONS 0=right(+x) 1=down(+y) 2=left(-x) 3=up(-y). left: dir=(dir-1)%4,
right: dir=(dir+1)%4. ACTIONS Discrete(8): 0 noop, 1 left, 2 right, 3 forward,
4 pickup, 5 drop, 6 toggle (no effect here), 7 done (no effect).

RESET(seed): gymnasium np_random = numpy Generator(PCG64(SeedSequence(seed))); reset()
without a seed continues the same generator; ONE generator drives everything
(placement, action order, pass target). _gen_grid: walls; 6 goals via place_obj
with a 1x1 rectangle (integers(k,k+1) draws nothing); then the ball, then agents
0..3 in index order, each uniform over the whole 16x11 grid by rejection sampling
(x=integers(0,16) then y=integers(0,11); reject a cell holding any object (wall,
goal, ball) or an already placed agent); each agent then gets dir=integers(0,4).
So neither ball nor agents ever start on a goal cell. step_count=0, scores {1:0,2:0},
cooldowns 0. reset returns (obs, {}) (empty info).

STEP(actions: dict agent->int): step_count += 1 first. Every agent's cooldown>0 is
decremented by 1. Order: np_random.random(4).argsort() (a fresh random permutation
each step); agents are processed sequentially in that order, each seeing the
effects of earlier ones; agents missing from the dict or terminated are skipped.
- forward: target = pos + dirvec. Moves iff the target cell has no object or a
  walkable one (goal cells). Walls and the loose ball block. Other agents do NOT
  block: allow_agent_overlap=True, agents can share a cell (stack).
- pickup (agent must not be carrying): (1) ball lying in the front cell -> carried,
  removed from the grid (no cooldown check, no reward). (2) else steal: the FIRST
  (lowest index) non-terminated agent in the front cell, if it carries and is on
  the other team and the actor's cooldown == 0 -> ball moves to the actor; actor
  AND victim cooldown = 10 (set at step t, they can steal again at step t+10).
  Cooldown only gates stealing, never ground pickup or being stolen from.
- drop (agent must be carrying): (1) teleport pass: teammates = other non-terminated
  same-team agents not carrying; if any, receiver = teammates[np_random.integers(
  len)] anywhere on the grid (2v2: always the partner; integers(1) draws nothing).
  (2) else (no teammate) drop onto the front cell iff it has no object and no
  agent. Drop never scores. In 2v2 a ground drop cannot happen while both play.
- After all actions, OBSERVATIONS ARE GENERATED (before scoring below), and
  terminations are snapshotted: terminated[i] (before scoring!);
  truncated = step_count >= max_steps (the 256th step truncates).
- Scoring (walk-in): agents in index order; an agent not terminated, carrying,
  standing on a goal cell of the other team scores (whether it walked in, got a
  pass there or stole there). Each scoring-team member gets
  +1.0 + 0.05*(max_steps - step_count) (13.75 at step 1, 1.0 at step 256); the
  other team gets 0 (zero_sum False). The ball vanishes from the carrier and a new
  ball respawns via place_obj: uniform rejection sampling over the grid, not on a
  wall/goal/ball cell nor on any agent's cell. Team score += 1; when it reaches 2
  every agent gets terminated=True. QUIRK: the terminations returned on that step
  are still False (snapshot taken before scoring); the NEXT step returns all True
  (all actions ignored, reward 0, terminated agents vanish from observations).
- Reward shaping (on by default), for every agent incl. terminated ones, after
  scoring: +0.3 to each agent that stole this step; then if carrying:
  0.01*(prev_dist - cur_dist) with Manhattan distance to the opponent goal centre
  (team 1 -> (14,5), team 2 -> (1,5)); else if a loose ball exists (first in a
  row-major scan, y outer, x inner; i.e. the respawned one after a goal):
  0.01*(prev_dist - cur_dist) to the ball's CURRENT position, both distances; prev
  pos = position at the end of the previous step (at reset: start position).
  No pickup bonus, no pass reward/penalty, no timeout penalty, nothing for the
  steal victim.
- rewards dict {0..3: float}; terminations/truncations dicts {0..3: bool} (all
  agents equal here). info[i] = {"position": (x,y), "carrying": bool} plus, for ALL
  agents, the LAST event of this step if any: "goal_scored_by": {step, scorer,
  team}, "pass_completed": {step, passer, receiver, team}, "steal_completed":
  {step, stealer, victim, team}.

OBSERVATION per agent: {"image": int64 (3,3,3), "direction": int 0..3, "mission":
"maximize reward"}. image[a][b] = (type, colour, state) of an egocentric cell:
a = lateral 0..v-1 (0 = agent's left), b = depth (0 = farthest, v-1 = the agent's
own row); world cell = pos + f*(v-1-b) + r*(a - v//2), f = dirvec, r = (-f.y, f.x).
Own cell (v//2, v-1) = what it carries: ball (6,0,0) or empty (1,0,0), hiding
anything else there (an agent never sees itself or an agent stacked on it).
Type ids: unseen 0, empty 1, wall 2, floor 3, door 4, key 5, ball 6, box 7, goal 8,
lava 9, agent 10, objgoal 11, switch 12, endzone 13. Colour ids: red 0, green 1,
blue 2, purple 3, yellow 4, grey 5. Cells here: empty (1,0,0), wall (2,5,0), ball
(6,0,0), team-1 goal (11,1,0), team-2 goal (11,2,0), out of grid = wall (2,5,0).
Other agents (non-terminated) drawn over the cell: (10, team colour 1|2, dir, +100
if carrying the ball); with stacked agents the highest index is drawn. Visibility
(minigrid process_vis on the egocentric view): vis[v//2][v-1]=True; for b from
v-1 down to 0: for a in 0..v-2: if vis[a][b] and cell not wall: vis[a+1][b]=True and
if b>0: vis[a+1][b-1]=vis[a][b-1]=True; then for a from v-1 down to 1: if vis[a][b]
and not wall: vis[a-1][b]=True and if b>0: vis[a-1][b-1]=vis[a][b-1]=True. Cells
not visible -> (0,0,0). The scoring step's observation still shows the scorer
carrying and not the respawned ball (obs is built before scoring).
Deterministic given the reset seed and the action sequence.
"""


def check_facts(env):
    """Assert the facts that can be read off the live env (fail loudly on drift)."""
    u = env.unwrapped
    assert (u.width, u.height, u.max_steps) == (16, 11, 256)
    assert (u.goals_to_win, u.steal_cooldown, u.reward_shaping, u.zero_sum) == (2, 10, True, False)
    assert u.allow_agent_overlap and u.agents[0].view_size == 3
    assert [a.team_index for a in u.agents] == [1, 1, 2, 2]
    assert [list(p) for p in u.goal_pos] == [[1, 4], [1, 5], [1, 6], [14, 4], [14, 5], [14, 6]]
    assert list(u.goal_index) == [1, 1, 1, 2, 2, 2]
    assert env.action_space[0].n == 8
    g = u.grid.state
    assert g[0, 0].tolist() == [2, 5, 0] and g[1, 5].tolist() == [11, 1, 0] and g[14, 5].tolist() == [11, 2, 0]
    chars = {1: ".", 2: "#", 6: "o", 11: "G"}
    rows = []
    for y in range(u.height):
        row = [chars.get(int(g[x, y, 0]), "?") for x in range(u.width)]
        for a in u.agents:
            x, ay = (int(c) for c in a.state.pos)
            if ay == y:
                row[x] = str(a.index)
        rows.append("".join(row))
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("steps", nargs="?", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")  # PassiveEnvChecker chatter

    env = gym.make(ENV_ID)
    env.reset(seed=args.seed)
    layout = check_facts(env)
    print(FACTS, file=sys.stderr)
    print(f"reset(seed={args.seed}) layout (# wall, G goal, o ball, digits = agents):\n{layout}\n",
          file=sys.stderr)
    env.step({i: 0 for i in range(4)})  # warm-up: numba JIT / cache load

    actions = np.random.default_rng(args.seed).integers(0, 8, size=(args.steps, 4)).tolist()
    env.reset(seed=args.seed)
    episodes = goals = wins = 0
    t0 = time.perf_counter()
    for a in actions:
        _, _, term, trunc, info = env.step({0: a[0], 1: a[1], 2: a[2], 3: a[3]})
        if "goal_scored_by" in info[0]:
            goals += 1
        if term[0] or trunc[0]:
            episodes += 1
            wins += bool(term[0])
            env.reset()
    seconds = time.perf_counter() - t0

    print(f"benchmark: {episodes} episodes ended ({wins} by a 2-goal win), {goals} goals",
          file=sys.stderr)
    print(json.dumps({"env": ENV_ID, "steps": args.steps, "seconds": round(seconds, 3),
                      "steps_per_s": round(args.steps / seconds, 1)}))


if __name__ == "__main__":
    main()
