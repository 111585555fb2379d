"""A policy worker (built on mosaic_worker) that starts a helper process of its own, as a
worker wrapping a simulator or a server would, and thinks a little on every decision.

usage: forking_policy.py PID_FILE SECONDS   (appends the helper's pid to PID_FILE, takes
SECONDS per decision); it chooses legal[n % len(legal)] for decision n.
"""

import subprocess
import sys
import time

import mosaic_worker

pid_file, seconds = sys.argv[1], float(sys.argv[2])
helper = subprocess.Popen(["sleep", "600"])
with open(pid_file, "a") as out:
    out.write(f"{helper.pid}\n")


def decide(observation, legal, context):
    time.sleep(seconds)
    return legal[context.decisions % len(legal)]


raise SystemExit(mosaic_worker.serve_policy(decide, "forking"))
