"""The token of listening workers: right token served, wrong or missing token refused on the
wire (the worker keeps listening), the token never logged nor on the command line."""

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from mosaic_worker import protocol

from conftest import PACKAGE_DIR

TOKEN = "tok-7f3a9c-never-logged"
INIT = {"type": "init_agent", "id": 1, "agent_id": "a", "agent": 0, "seed": 1, "episode_seed": 2, "env": {"name": "t"}}


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Client:
    """The orchestrator's end of a TCP connection to a listening worker."""

    def __init__(self, port):
        deadline = time.monotonic() + 20
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.rfile = self.sock.makefile("rb")

    def send(self, message):
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def recv(self):
        line = self.rfile.readline()
        return json.loads(line) if line else None

    def close(self):
        self.rfile.close()
        self.sock.close()


@pytest.fixture
def worker(tmp_path):
    """Starts ``python -m mosaic_worker policy random --listen ...`` with extra
    environment variables and arguments; yields (port, process, log path)."""
    started = []

    def start(env=None, args=()):
        port = free_port()
        log = tmp_path / f"worker-{port}.log"
        full_env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR))
        full_env.pop(protocol.TOKEN_ENV, None)
        full_env.update(env or {})
        argv = [sys.executable, "-m", "mosaic_worker", "policy", "random", "--listen", f"tcp://127.0.0.1:{port}", *args]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=open(log, "wb"), env=full_env)
        started.append(proc)
        return port, proc, log

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def run_session(client):
    """Handshake, one decision, stop; returns the hello."""
    hello = client.recv()
    assert hello["type"] == "hello" and hello["protocol"] == protocol.PROTOCOL
    client.send({"type": "welcome", "protocol": protocol.PROTOCOL, "session": "s", "heartbeat_ms": 1000})
    client.send(INIT)
    assert client.recv() == {"type": "agent_ready", "id": 1}
    client.send({"type": "decide", "id": 2, "step": 0, "observation": {}, "legal": [3]})
    assert client.recv()["action"] == 3
    client.send({"type": "stop", "id": 3})
    assert client.recv() == {"type": "stopped", "id": 3}
    return hello


def test_the_right_token_is_served_and_a_wrong_one_refused(worker):
    port, proc, log = worker(env={protocol.TOKEN_ENV: TOKEN})
    intruder = Client(port)
    intruder.send({"type": "auth", "protocol": protocol.PROTOCOL, "token": "guess"})
    reject = intruder.recv()
    assert reject == {"type": "reject", "reason": "authentication failed: the token does not match"}
    assert intruder.recv() is None, "the refused connection is closed"
    intruder.close()
    # Something other than `auth` first is refused at once.
    rude = Client(port)
    rude.send({"type": "ping", "id": 1})
    assert rude.recv()["reason"].startswith("authentication required")
    rude.close()
    # The worker still listens, and serves the orchestrator that holds the token.
    client = Client(port)
    client.send({"type": "auth", "protocol": protocol.PROTOCOL, "token": TOKEN})
    hello = run_session(client)
    client.close()
    assert protocol.AUTH_TOKEN in hello["capabilities"]
    assert proc.wait(timeout=20) == 0
    text = log.read_text()
    assert text.count("refused a connection from") == 2, text
    assert "authentication failed" in text and "(token required)" in text
    assert TOKEN not in text and "guess" not in text


def test_the_token_file_keeps_the_token_off_the_command_line(worker, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    port, proc, log = worker(args=["--token-file", str(token_file)])
    with open(f"/proc/{proc.pid}/cmdline", "rb") as cmdline:
        assert TOKEN.encode() not in cmdline.read()
    client = Client(port)
    client.send({"type": "auth", "protocol": protocol.PROTOCOL, "token": TOKEN})
    assert protocol.AUTH_TOKEN in run_session(client)["capabilities"]
    client.close()
    assert proc.wait(timeout=20) == 0
    assert TOKEN not in log.read_text()


def test_a_worker_without_a_token_neither_asks_nor_claims_it(worker):
    port, proc, log = worker()
    client = Client(port)
    hello = run_session(client)
    client.close()
    assert protocol.AUTH_TOKEN not in hello["capabilities"]
    assert proc.wait(timeout=20) == 0
    # An orchestrator holding a token sends it first, then refuses the unprotected worker.
    port, proc, log = worker()
    client = Client(port)
    client.send({"type": "auth", "protocol": protocol.PROTOCOL, "token": TOKEN})
    assert protocol.AUTH_TOKEN not in client.recv()["capabilities"]
    client.send({"type": "reject", "reason": "a token was sent but the worker did not check it"})
    assert proc.wait(timeout=20) == 3
    client.close()
    assert "sent a token, but this worker was started without one" in log.read_text()


def test_an_orchestrator_that_sends_nothing_is_refused_after_the_wait(monkeypatch):
    monkeypatch.setattr(protocol, "AUTH_TIMEOUT", 0.2)
    port = free_port()
    accepted = []
    server = threading.Thread(target=lambda: accepted.append(
        protocol.listen_channel(f"tcp://127.0.0.1:{port}", token=TOKEN)), daemon=True)
    server.start()
    silent = Client(port)
    assert silent.recv()["reason"].startswith("authentication required: this worker needs a token")
    silent.close()
    client = Client(port)
    client.send({"type": "auth", "protocol": protocol.PROTOCOL, "token": TOKEN})
    server.join(timeout=20)
    channel = accepted[0]
    assert channel.authenticated
    channel.write({"type": "heartbeat"})
    assert client.recv() == {"type": "heartbeat"}
    channel.close()
    client.close()


def test_tokens_are_read_from_a_file_or_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(protocol.TOKEN_ENV, raising=False)
    assert protocol.listen_token() is None
    monkeypatch.setenv(protocol.TOKEN_ENV, f"  {TOKEN}\n")
    assert protocol.listen_token() == TOKEN
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        protocol.listen_token(str(empty))


def test_a_worker_serves_several_orchestrators_at_once_each_with_its_own_state(worker):
    port, proc, log = worker(env={protocol.TOKEN_ENV: TOKEN}, args=["--connections", "3"])
    # Two orchestrators connect and stay: the second is served while the first is open.
    first, second = Client(port), Client(port)
    for client in (first, second):
        client.send({"type": "auth", "protocol": protocol.PROTOCOL, "token": TOKEN})
        assert protocol.AUTH_TOKEN in client.recv()["capabilities"]
        client.send({"type": "welcome", "protocol": protocol.PROTOCOL, "session": "s", "heartbeat_ms": 1000})
    second.send(INIT)
    assert second.recv() == {"type": "agent_ready", "id": 1}
    # Each connection has its own handler: the first has not begun an episode.
    first.send({"type": "checkpoint", "id": 7})
    assert first.recv()["type"] == "error"
    first.send(INIT)
    assert first.recv() == {"type": "agent_ready", "id": 1}
    for client in (first, second):
        client.send({"type": "decide", "id": 2, "step": 0, "observation": {}, "legal": [4]})
        assert client.recv()["action"] == 4
    first.close()
    second.close()
    # A wrong token does not count as a connection; the third orchestrator is the last.
    intruder = Client(port)
    intruder.send({"type": "auth", "protocol": protocol.PROTOCOL, "token": "guess"})
    assert intruder.recv()["type"] == "reject"
    intruder.close()
    third = Client(port)
    third.send({"type": "auth", "protocol": protocol.PROTOCOL, "token": TOKEN})
    run_session(third)
    third.close()
    assert proc.wait(timeout=20) == 0
    text = log.read_text()
    assert "for 3 connections (token required)" in text
    assert TOKEN not in text


def test_connections_are_for_a_listening_worker():
    result = subprocess.run([sys.executable, "-m", "mosaic_worker", "policy", "random", "--connections", "2"],
                            env=dict(os.environ, PYTHONPATH=str(PACKAGE_DIR)), capture_output=True, text=True,
                            timeout=60)
    assert result.returncode != 0
    assert "--connections is for a worker that listens" in result.stderr
