"""A worker that misbehaves on purpose, for the bad-input tests.

usage: faulty.py env|policy MODE

The handshake and the first request of an episode (`reset`, or `init_agent` for policies)
go right unless MODE breaks them; the fault hits the next request (`step` / `decide`) for
policies and the `reset` for environments. With FAULTY_PID_FILE set, the worker writes its
process id there first (for tests that kill it).
"""

import json
import os
import subprocess
import sys
import time

kind, mode = sys.argv[1], sys.argv[2]
out = os.fdopen(os.dup(1), "wb")
if os.environ.get("FAULTY_PID_FILE"):
    with open(os.environ["FAULTY_PID_FILE"] + ".tmp", "w") as pid_file:
        pid_file.write(str(os.getpid()))
    os.rename(os.environ["FAULTY_PID_FILE"] + ".tmp", os.environ["FAULTY_PID_FILE"])


def send(obj):
    out.write(json.dumps(obj).encode() + b"\n")
    out.flush()


def read():
    line = sys.stdin.buffer.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


SPEC = {
    "name": "faulty",
    "agents": [{"id": "solo"}],
    "action_labels": ["a", "b", "c"],
    "default_action": 0,
    "stepping": "single",
    "offers": {},
}

if mode == "exit_in_handshake":
    out.write(b'{"type":"hel')
    out.flush()
    sys.exit(5)

caps = ["heartbeat"] if mode == "silent_heartbeat" else []
protocol = "mosaic/2.0" if mode == "wrong_major" else "mosaic/1"
schema = SPEC if kind == "env" else {}
send({"type": "hello", "protocol": protocol, "worker_kind": kind, "capabilities": caps, "schema": schema})
answer = read()
if answer.get("type") == "reject":
    sys.stderr.write("rejected: " + answer.get("reason", "") + "\n")
    sys.exit(3)

if kind == "policy":
    init = read()
    send({"type": "agent_ready", "id": init["id"]})

request = read()
rid = request.get("id")
if mode == "garbage":
    out.write(b"Traceback (most recent call last): oops\n")
elif mode == "non_object":
    out.write(b"[1, 2, 3]\n")
elif mode == "huge_line":
    chunk = b"x" * (1 << 20)
    for _ in range(100):
        out.write(chunk)
    out.write(b"\n")
elif mode in ("silent", "silent_heartbeat"):
    time.sleep(60)
elif mode == "silent_holding_output":
    # A helper process inherits the worker's output (descriptor 1) and outlives it.
    subprocess.Popen(["sleep", "60"])
    time.sleep(60)
elif mode == "out_of_order":
    send({"type": "decision" if kind == "policy" else "observations", "id": rid + 7, "action": 0, "acting": []})
elif mode == "illegal_action":
    if kind == "policy":
        legal = request.get("legal", [])
        send({"type": "decision", "id": rid, "action": max(legal, default=0) + 1})
    else:
        send({"type": "error", "id": rid, "code": "illegal_action", "message": "action 9 is not legal"})
elif mode == "stdout_closed":
    out.close()
    os.close(1)
    time.sleep(60)
elif mode == "unknown_type_then_ok":
    send({"type": "telemetry_v9", "note": "from the future"})
    if kind == "policy":
        send({"type": "decision", "id": rid, "action": request["legal"][0]})
    else:
        send({"type": "observations", "id": rid, "acting": [0], "agents": [{"agent": 0, "legal": [0, 1, 2]}]})
out.flush()
# Stay alive until the orchestrator gives up and stops the group.
while read() is not None:
    pass
