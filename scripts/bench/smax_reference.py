"""JaxMARL's SMAX as the reference for the skirmish world: outcomes of its heuristic enemy
against uniformly random allies, and its stepping speed for one environment on CPU.

Usage: python smax_reference.py EPISODES SPEED_SECONDS
Prints one JSON line: {"episodes", "heuristic_wins", "random_wins", "timeouts",
"steps_per_s_jit", "steps_per_cpu_s_jit", "steps_per_s_scan"}.

The scenario is SMAX's `smacv2_5_units` (5 vs 5, unit types drawn uniformly from SMAX's
six and mirrored, SMACv2's surrounded-or-reflected starts, units touching an edge die, 100
steps). Allies pick uniformly among their available actions; enemies play SMAX's
heuristic ("closest" attack mode, shooting).
"""

import json
import sys
import time

import jax
import jax.numpy as jnp
from jaxmarl.environments.smax import map_name_to_scenario
from jaxmarl.environments.smax.heuristic_enemy_smax_env import HeuristicEnemySMAX


def make_env():
    return HeuristicEnemySMAX(scenario=map_name_to_scenario("smacv2_5_units"))


def random_actions(env, key, state):
    avail = env.get_avail_actions(state)
    keys = jax.random.split(key, env.num_agents)
    return {
        agent: jax.random.categorical(k, jnp.log(avail[agent].astype(jnp.float32)))
        for agent, k in zip(env.agents, keys)
    }


def outcomes(env, episodes, seed=0):
    """Per episode: 1 if the heuristic (enemy) team won, -1 if the random (ally) team
    won, 0 for a time-out. Episodes run side by side (vmap), steps in a scan; an
    episode's outcome is read at its first `done`."""
    steps = env.max_steps + 1

    def episode(key):
        key, reset_key = jax.random.split(key)
        _, state = env.reset(reset_key)

        def body(carry, _):
            key, state, result, finished = carry
            key, act_key, step_key = jax.random.split(key, 3)
            actions = random_actions(env, act_key, state)
            _, new_state, _, dones, _ = env.step_env(step_key, state, actions)
            alive = new_state.state.unit_alive
            allies_dead = ~jnp.any(alive[: env.num_allies])
            enemies_dead = ~jnp.any(alive[env.num_allies :])
            now = jnp.where(
                allies_dead & ~enemies_dead, 1, jnp.where(enemies_dead & ~allies_dead, -1, 0)
            )
            done = dones["__all__"]
            result = jnp.where(finished, result, jnp.where(done, now, result))
            state = jax.tree.map(lambda a, b: jnp.where(finished | done, a, b), state, new_state)
            return (key, state, result, finished | done), None

        (_, _, result, _), _ = jax.lax.scan(
            body, (key, state, jnp.int32(0), jnp.bool_(False)), None, length=steps
        )
        return result

    keys = jax.random.split(jax.random.PRNGKey(seed), episodes)
    return jax.jit(jax.vmap(episode))(keys)


def speed_jit(env, seconds):
    """Steps/s of one environment stepped from Python, each step a jitted call (the
    usual way to drive one environment)."""
    step = jax.jit(env.step)
    act = jax.jit(lambda key, state: random_actions(env, key, state))
    key = jax.random.PRNGKey(1)
    _, state = env.reset(key)
    for _ in range(3):  # compile
        key, k1, k2 = jax.random.split(key, 3)
        _, state, _, _, _ = step(k2, state, act(k1, state))
    jax.block_until_ready(state)
    count, start, cpu_start = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        key, k1, k2 = jax.random.split(key, 3)
        _, state, _, _, _ = step(k2, state, act(k1, state))
        count += 1
    jax.block_until_ready(state)
    # The process's CPU time counts every thread JAX runs on.
    return count / (time.perf_counter() - start), count / (time.process_time() - cpu_start)


def speed_scan(env, seconds):
    """Steps/s of one environment stepped inside one compiled scan (JAX's fastest way to
    run a single environment, with no Python per step)."""
    chunk = 1000

    def body(carry, _):
        key, state = carry
        key, k1, k2 = jax.random.split(key, 3)
        _, state, _, _, _ = env.step(k2, state, random_actions(env, k1, state))
        return (key, state), None

    run = jax.jit(lambda carry: jax.lax.scan(body, carry, None, length=chunk)[0])
    key = jax.random.PRNGKey(2)
    _, state = env.reset(key)
    carry = jax.block_until_ready(run((key, state)))  # compile
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        carry = jax.block_until_ready(run(carry))
        count += chunk
    return count / (time.perf_counter() - start)


def main():
    episodes = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    env = make_env()
    result = [int(r) for r in outcomes(env, episodes)]
    jit_wall, jit_cpu = speed_jit(env, seconds)
    print(
        json.dumps(
            {
                "episodes": episodes,
                "heuristic_wins": result.count(1),
                "random_wins": result.count(-1),
                "timeouts": result.count(0),
                "steps_per_s_jit": jit_wall,
                "steps_per_cpu_s_jit": jit_cpu,
                "steps_per_s_scan": speed_scan(env, seconds),
                "jax": jax.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
