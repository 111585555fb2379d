"""A policy worker (built on mosaic_worker) that thinks for a while on some decisions,
heartbeating meanwhile as every mosaic_worker does while a request runs.

usage: slow_policy.py SECONDS DECISION...   (the decisions, counted from 0 in each
episode, that take SECONDS); it chooses legal[n % len(legal)] for decision n.
"""

import sys
import time

import mosaic_worker

seconds = float(sys.argv[1])
slow = {int(n) for n in sys.argv[2:]}


def decide(observation, legal, context):
    if context.decisions in slow:
        time.sleep(seconds)
    return legal[context.decisions % len(legal)]


raise SystemExit(mosaic_worker.serve_policy(decide, "slow", checkpoint=True))
