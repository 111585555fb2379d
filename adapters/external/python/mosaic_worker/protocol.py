"""The mosaic/1 worker protocol (version 1.2): framing, handshake, frames and the request loop.

One JSON object per line. The worker speaks first (``hello``), the orchestrator answers
``welcome`` or ``reject``, then sends requests carrying an ``id`` that every reply echoes.
A listening worker given a token (``MOSAIC_WORKER_TOKEN`` or ``--token-file``) first awaits
the orchestrator's ``auth`` line and refuses a connection without the right token.
See docs/protocol.md in the mosaic repository for the full specification.
"""

from __future__ import annotations

import base64
import hmac
import json
import os
import socket
import struct
import sys
import threading
import time
import traceback
import zlib
from typing import Any, Callable, Dict, Optional

PROTOCOL = "mosaic/1.2"

# The token of a listening worker: read from this environment variable (or a file), never
# taken on the command line, where every user of the machine can read it.
TOKEN_ENV = "MOSAIC_WORKER_TOKEN"
# Announced in ``hello`` by a worker that checked the orchestrator's token.
AUTH_TOKEN = "auth:token"
# How long a token-checking worker waits for the orchestrator's ``auth`` line, seconds.
AUTH_TIMEOUT = 5.0
# The longest ``auth`` line read.
MAX_AUTH_LINE = 64 << 10

# Built once: the module-level json.loads/dumps re-create or re-check these on every call,
# which is a third of the cost of a small message.
_decoder = json.JSONDecoder()
_raw_decode = _decoder.raw_decode
# The C scanner under raw_decode, without its Python frame: the fast path of every line.
_scan_once = _decoder.scan_once


def _make_encode() -> Callable[[Any], str]:
    encoder = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
    c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if c_make_encoder is None:
        return encoder.encode
    # CPython's C encoder, built once (JSONEncoder.encode builds a new one per call).
    one_shot = c_make_encoder(None, encoder.default, json.encoder.encode_basestring_ascii, None, ":", ",",
                              False, False, False)
    return lambda obj: "".join(one_shot(obj, 0))


_encode = _make_encode()
MAX_FRAME = 16 << 20

# Error codes (docs/protocol.md, "Errors").
BAD_FRAME = "bad_frame"
UNKNOWN_TYPE = "unknown_type"
BAD_REQUEST = "bad_request"
UNSUPPORTED = "unsupported"
ILLEGAL_ACTION = "illegal_action"
INTERNAL = "internal"


class WorkerError(Exception):
    """A request that cannot be served; answered with ``error{code, message}``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Rejected(Exception):
    """The orchestrator refused this worker (``reject``)."""


def log(message: str) -> None:
    """Writes one line to the worker's log (stderr)."""
    sys.stderr.write(f"[mosaic_worker] {message}\n")
    sys.stderr.flush()


_protocol_out = None


def guard_stdout() -> Any:
    """Keeps stdout for protocol frames only.

    Libraries print banners and debug output to stdout, which would corrupt the stream.
    The protocol gets a private duplicate of file descriptor 1, and descriptor 1 itself is
    pointed at stderr, so stray prints land in the worker's log. Idempotent.
    """
    global _protocol_out
    if _protocol_out is None:
        sys.stdout.flush()
        _protocol_out = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    return _protocol_out


class Channel:
    """Line-framed JSON over a pair of binary files."""

    def __init__(self, rfile: Any, wfile: Any, max_frame: int = MAX_FRAME) -> None:
        self._readline = rfile.readline
        self._wfile = wfile
        # Writing to the descriptor directly: one system call per message instead of a
        # buffered write and a flush. In-memory files (tests) have no descriptor.
        self._fd: Optional[int] = None
        try:
            wfile.flush()
            self._fd = wfile.fileno()
        except (AttributeError, OSError, ValueError):
            self._fd = None
        self._max = max_frame
        self._lock = threading.Lock()
        self._closers: list = []
        # Whether the orchestrator proved it holds this worker's token.
        self.authenticated = False

    def read(self) -> Optional[Dict[str, Any]]:
        """The next message, or ``None`` at end of stream.

        Raises ``WorkerError(bad_frame)`` for a line that is too long, not JSON, or not an
        object; the rest of an over-long line is skipped without holding it in memory.
        """
        line = self._readline(self._max + 1)
        # The usual line: an object right at the start, then only the newline.
        if line[-1:] == b"\n":
            try:
                text = line.decode()
                message, end = _scan_once(text, 0)
                if end == len(text) - 1 and message.__class__ is dict:
                    return message
            except (StopIteration, ValueError):  # UnicodeDecodeError is a ValueError
                pass
        return self._read_slowly(line)

    def _read_slowly(self, line: bytes) -> Optional[Dict[str, Any]]:
        """Classifies a line the fast path did not take: end of stream, too long, not
        UTF-8, blanks around the object, not JSON, or not an object."""
        if not line:
            return None
        if len(line) > self._max and not line.endswith(b"\n"):
            while True:
                rest = self._readline(1 << 16)
                if not rest or rest.endswith(b"\n"):
                    break
            raise WorkerError(BAD_FRAME, f"frame longer than the limit of {self._max} bytes")
        try:
            text = line.decode("utf-8")
        except ValueError as exc:
            raise WorkerError(BAD_FRAME, f"not JSON: {exc}") from None
        message = self._decode_slowly(text)
        if not isinstance(message, dict):
            raise WorkerError(BAD_FRAME, f"a JSON {type(message).__name__} where an object was expected")
        return message

    @staticmethod
    def _decode_slowly(text: str) -> Any:
        """Decodes a line the fast path did not take (leading blanks, or not JSON: then
        the error says where)."""
        try:
            text = text.strip()
            message, end = _raw_decode(text)
            if end != len(text):
                raise ValueError(f"extra data at column {end + 1}")
        except ValueError as exc:  # JSONDecodeError included
            raise WorkerError(BAD_FRAME, f"not JSON: {exc}") from None
        return message

    def write(self, message: Any) -> None:
        """Sends one message, or one complete line given as ``bytes`` (thread-safe)."""
        data = message if message.__class__ is bytes else (_encode(message) + "\n").encode()
        lock = self._lock
        lock.acquire()
        try:
            if self._fd is None:
                self._wfile.write(data)
                self._wfile.flush()
                return
            written = os.write(self._fd, data)
            if written < len(data):
                view = memoryview(data)[written:]
                while view:
                    view = view[os.write(self._fd, view):]
        finally:
            lock.release()

    def close(self) -> None:
        for close in self._closers:
            try:
                close()
            except OSError:
                pass


def stdio_channel(max_frame: int = MAX_FRAME) -> Channel:
    """The channel on stdin/stdout (stdout guarded, see ``guard_stdout``)."""
    out = guard_stdout()
    return Channel(sys.stdin.buffer, out, max_frame)


def listen_token(token_file: Optional[str] = None) -> Optional[str]:
    """The token a listening worker asks for: the contents of ``token_file`` if given, else
    ``$MOSAIC_WORKER_TOKEN``; ``None`` without either. Surrounding whitespace is removed."""
    if token_file is not None:
        with open(token_file, encoding="utf-8") as file:
            token, source = file.read(), f"token file {token_file}"
    else:
        token, source = os.environ.get(TOKEN_ENV), TOKEN_ENV
        if token is None:
            return None
    token = token.strip()
    if not token:
        raise ValueError(f"{source}: the token is empty")
    return token


def _refusal(line: bytes, token: str) -> Optional[str]:
    """Why the orchestrator's first ``line`` does not authenticate it (``None`` when it
    does). The reason never contains a token."""
    try:
        message = json.loads(line)
    except ValueError:
        message = None
    if not isinstance(message, dict) or message.get("type") != "auth":
        return ("authentication required: this worker needs a token and the orchestrator sent none "
                "(name it with token_env or token_file in the worker settings)")
    sent = message.get("token")
    # Constant time: how long the comparison takes must not tell how much of a guess was right.
    if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), token.encode()):
        return "authentication failed: the token does not match"
    return None


def _authenticate(conn: socket.socket, rfile: Any, token: str) -> Optional[str]:
    """Reads the orchestrator's ``auth`` line within ``AUTH_TIMEOUT``; the refusal, if any."""
    conn.settimeout(AUTH_TIMEOUT)
    try:
        line = rfile.readline(MAX_AUTH_LINE)
    except (socket.timeout, OSError):
        line = b""
    conn.settimeout(None)
    return _refusal(line, token)


def _listener(address: str) -> socket.socket:
    """A socket listening on ``tcp://host:port`` or ``unix:///path``."""
    if address.startswith("tcp://"):
        host, _, port = address[len("tcp://"):].rpartition(":")
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((host, int(port)))
    elif address.startswith("unix://"):
        path = address[len("unix://"):]
        if os.path.exists(path):
            os.unlink(path)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
    else:
        raise ValueError(f"{address!r} is not a worker address (tcp://host:port or unix:///path)")
    server.listen(16)
    return server


def _accept(server: socket.socket, max_frame: int, token: Optional[str]) -> Channel:
    """The next orchestrator's connection; with a ``token``, connections that do not prove
    it are refused (``reject`` with the reason, then closed; logged without any token)."""
    while True:
        conn, peer = server.accept()
        if conn.family == socket.AF_INET:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        rfile = conn.makefile("rb")
        refusal = _authenticate(conn, rfile, token) if token else None
        if refusal is None:
            break
        log(f"refused a connection from {peer or 'a local client'}: {refusal}")
        try:
            conn.sendall((_encode({"type": "reject", "reason": refusal}) + "\n").encode())
        except OSError:
            pass
        rfile.close()
        conn.close()
    channel = Channel(rfile, conn.makefile("wb"), max_frame)
    channel.authenticated = bool(token)
    channel._closers.append(conn.close)
    return channel


def listen_channel(address: str, max_frame: int = MAX_FRAME, token: Optional[str] = None) -> Channel:
    """Listens on ``tcp://host:port`` or ``unix:///path`` and accepts one orchestrator.

    With a ``token``, a connection whose first line is not ``auth`` with that token is
    refused (``reject`` with the reason, then closed; logged without any token) and the
    worker keeps listening."""
    server = _listener(address)
    log(f"listening on {address}" + (" (token required)" if token else ""))
    try:
        return _accept(server, max_frame, token)
    finally:
        server.close()


def _serve_connections(handler: Handler, address: str, token: Optional[str], connections: int) -> int:
    """Serves ``connections`` orchestrators (0: until stopped) on ``address``, each in a
    process of its own forked at its connection, so that they are served at the same time
    and none sees another's state. Returns 0 once every one is served."""
    server = _listener(address)
    log(f"listening on {address} for " + (f"{connections} connections" if connections else "connections")
        + (" (token required)" if token else ""))
    children = set()
    accepted = 0
    try:
        while connections == 0 or accepted < connections:
            channel = _accept(server, MAX_FRAME, token)
            accepted += 1
            pid = os.fork()
            if pid == 0:
                status = 1
                try:
                    server.close()
                    status = serve(handler, channel=channel)
                finally:
                    os._exit(status)
            channel.close()
            children.add(pid)
            # Reap the connections already served, so that no zombie waits for the end.
            for child in list(children):
                if os.waitpid(child, os.WNOHANG)[0] == child:
                    children.discard(child)
    finally:
        server.close()
        for child in children:
            os.waitpid(child, 0)
    return 0


# ---------------------------------------------------------------------------------------
# Frames: base64 of raw RGB rows or of a PNG, never nested lists.


def encode_frame(rgb: Any, encoding: str = "png") -> Dict[str, Any]:
    """A frame message for an ``H x W x 3`` uint8 array (numpy or anything with ``shape``
    and ``tobytes``)."""
    height, width = int(rgb.shape[0]), int(rgb.shape[1])
    raw = rgb[:, :, :3].tobytes() if rgb.shape[2] != 3 else rgb.tobytes()
    if encoding == "png":
        data = _png(raw, width, height)
    else:
        encoding, data = "rgb", raw
    return {
        "width": width,
        "height": height,
        "encoding": encoding,
        "data": base64.b64encode(data).decode("ascii"),
    }


def _png(raw: bytes, width: int, height: int) -> bytes:
    stride = width * 3
    rows = b"".join(b"\x00" + raw[y * stride:(y + 1) * stride] for y in range(height))

    def chunk(tag: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b"")


# ---------------------------------------------------------------------------------------
# The request loop shared by env and policy workers.


class Handler:
    """Base of env and policy handlers: ``handlers()`` maps request types to methods that
    take the request and return the reply's fields (its ``type`` included), or, on a hot
    path, the whole reply line as ``bytes`` (the request's ``id`` included)."""

    kind = "env"
    frames = "png"

    def hello(self) -> Dict[str, Any]:
        raise NotImplementedError

    def handlers(self) -> Dict[str, Callable[[Dict[str, Any]], Dict[str, Any]]]:
        raise NotImplementedError

    def welcome(self, welcome: Dict[str, Any]) -> None:
        self.frames = welcome.get("frames", "png")

    def close(self) -> None:
        """Called once when the worker stops."""


class _Heartbeat:
    """Sends ``heartbeat`` while a request runs longer than the interval: while the worker
    is busy, at most about 1.25 intervals pass without a line from it."""

    def __init__(self, channel: Channel, interval_ms: int) -> None:
        self._channel = channel
        self._interval = max(interval_ms, 10) / 1000.0
        # The number of the request being handled (0 while idle); set by the serve loop.
        # A number rather than a start time: reading the clock per request would cost the
        # loop more than this thread's own clock reads, four per interval.
        self.request = 0
        thread = threading.Thread(target=self._run, name="mosaic-heartbeat", daemon=True)
        thread.start()

    def _run(self) -> None:
        # The request seen busy and when it was first seen: at most a quarter interval
        # after it started.
        seen, since, last = 0, 0.0, 0.0
        while True:
            time.sleep(self._interval / 4)
            request = self.request
            now = time.monotonic()
            if request != seen:
                seen, since = request, now
            if request and now - max(since, last) >= self._interval:
                try:
                    self._channel.write(_HEARTBEAT)
                except (OSError, ValueError):
                    return
                last = now


_HEARTBEAT = b'{"type":"heartbeat"}\n'


def serve(handler: Handler, listen: Optional[str] = None, channel: Optional[Channel] = None,
          token: Optional[str] = None, connections: int = 1) -> int:
    """Runs the handshake and answers requests until ``stop`` or end of input.

    A worker listening on a socket asks for ``token`` (by default ``$MOSAIC_WORKER_TOKEN``,
    see ``listen_token``) when there is one, and serves ``connections`` orchestrators: one
    by default, any other number each in a process of its own, at the same time (0: until
    the worker is stopped). Returns the process exit status: 0 after ``stop`` or end of
    input, 3 when rejected.
    """
    if connections < 0:
        raise ValueError(f"connections must be 0 (no limit) or more, not {connections}")
    if channel is None:
        if listen:
            token = token if token is not None else listen_token()
            if connections != 1:
                return _serve_connections(handler, listen, token, connections)
            channel = listen_channel(listen, token=token)
        else:
            channel = stdio_channel()
    try:
        greeting = handler.hello()
        if channel.authenticated:
            greeting["capabilities"] = list(greeting.get("capabilities", [])) + [AUTH_TOKEN]
        channel.write(greeting)
        welcome = channel.read()
        while welcome is not None and welcome.get("type") == "auth":
            # Sent by an orchestrator that holds a token this worker does not ask for; it
            # refuses such a worker next, and says why.
            log("the orchestrator sent a token, but this worker was started without one")
            welcome = channel.read()
        if welcome is None:
            log("orchestrator closed the connection during the handshake")
            return 1
        if welcome.get("type") == "reject":
            log(f"rejected: {welcome.get('reason', '')}")
            return 3
        if welcome.get("type") != "welcome":
            log(f"expected welcome, got {str(welcome.get('type'))!r}")
            return 1
        handler.welcome(welcome)
        heartbeat = _Heartbeat(channel, int(welcome.get("heartbeat_ms", 1000)))
        # `stop` and `ping` are the loop's own, whatever the handler lists.
        table = {kind: method for kind, method in handler.handlers().items() if kind not in ("stop", "ping")}
        read, write = channel.read, channel.write
        requests = 0
        while True:
            try:
                message = read()
            except WorkerError as exc:
                write({"type": "error", "code": exc.code, "message": str(exc)})
                continue
            if message is None:
                return 0
            kind = message.get("type")
            rid = message.get("id")
            method = table.get(kind) if kind.__class__ is str else None
            if method is not None:
                requests += 1
                heartbeat.request = requests
                try:
                    reply = method(message)
                except WorkerError as exc:
                    reply = {"type": "error", "code": exc.code, "message": str(exc)}
                except Exception as exc:  # the wrapped library failed: report, keep serving
                    log(traceback.format_exc())
                    reply = {"type": "error", "code": INTERNAL, "message": f"{type(exc).__name__}: {exc}"}
                heartbeat.request = 0
            elif kind == "stop":
                handler.close()
                write({"type": "stopped", "id": rid})
                return 0
            elif kind == "ping":
                write({"type": "pong", "id": rid})
                continue
            else:
                reply = {"type": "error", "code": UNKNOWN_TYPE, "message": f"unknown message type {kind!r}"}
            if reply.__class__ is dict and rid is not None:
                reply["id"] = rid
            write(reply)
    except (BrokenPipeError, ConnectionResetError):
        return 0
    finally:
        channel.close()


def hello(kind: str, schema: Dict[str, Any], name: str, capabilities: Optional[list] = None) -> Dict[str, Any]:
    """A ``hello`` message."""
    caps = ["heartbeat", "frames:rgb", "frames:png"] + list(capabilities or [])
    return {"type": "hello", "protocol": PROTOCOL, "worker_kind": kind, "capabilities": caps, "schema": schema, "name": name}
