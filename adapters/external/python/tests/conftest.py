import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1]


class Peer:
    """The orchestrator side of a worker subprocess, for tests."""

    def __init__(self, argv):
        env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR), MOSAIC_PROTOCOL="mosaic/1")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def recv(self):
        line = self.proc.stdout.readline()
        assert line, "worker closed its output"
        return json.loads(line)

    def handshake(self, **welcome):
        hello = self.recv()
        assert hello["type"] == "hello" and hello["protocol"] == "mosaic/1.2"
        self.send({"type": "welcome", "protocol": "mosaic/1", "session": "t", "heartbeat_ms": 1000, **welcome})
        return hello

    def request(self, message):
        self.send(message)
        while True:
            reply = self.recv()
            if reply["type"] != "heartbeat":
                return reply

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def peer():
    peers = []

    def start(*args):
        p = Peer([sys.executable, *args])
        peers.append(p)
        return p

    yield start
    for p in peers:
        p.close()
