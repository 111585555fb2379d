import base64
import io
import json
import struct
import zlib

import numpy as np
import pytest

from mosaic_worker import protocol
from mosaic_worker.protocol import Channel, Handler, WorkerError, encode_frame, serve


def channel(text: bytes, max_frame: int = 1 << 20):
    out = io.BytesIO()
    return Channel(io.BytesIO(text), out, max_frame), out


def test_reads_objects_and_classifies_bad_lines():
    ch, _ = channel(b'{"type":"ping","id":1}\n[1,2]\nnot json\n' + b"x" * 100 + b"\n{}\n", max_frame=64)
    assert ch.read() == {"type": "ping", "id": 1}
    for expected in ("where an object was expected", "not JSON", "longer than the limit of 64 bytes"):
        with pytest.raises(WorkerError) as err:
            ch.read()
        assert err.value.code == protocol.BAD_FRAME and expected in str(err.value)
    assert ch.read() == {}
    assert ch.read() is None


def test_blanks_around_an_object_are_allowed_and_anything_else_is_not():
    ch, _ = channel(b'{"type":"ping","id":1}\r\n  {"id":2} \n{"id":3} x\n{"id":4}{}\n"\xff"\n{"id":5}')
    assert ch.read() == {"type": "ping", "id": 1}
    assert ch.read() == {"id": 2}
    for _ in range(3):
        with pytest.raises(WorkerError) as err:
            ch.read()
        assert "not JSON" in str(err.value)
    assert ch.read() == {"id": 5}
    assert ch.read() is None


def test_writes_one_compact_line_and_refuses_nan():
    ch, out = channel(b"")
    ch.write({"type": "pong", "id": 3})
    assert out.getvalue() == b'{"type":"pong","id":3}\n'
    with pytest.raises(ValueError):
        ch.write({"x": float("nan")})


def _png_pixels(data: bytes):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        tag, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        crc = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        assert crc == zlib.crc32(tag + body) & 0xFFFFFFFF
        if tag == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif tag == b"IDAT":
            idat += body
        pos += 12 + length
    width, height = header[0], header[1]
    raw = zlib.decompress(idat)
    stride = width * 3 + 1
    return width, height, b"".join(raw[y * stride + 1:(y + 1) * stride] for y in range(height))


def test_frames_are_base64_rgb_or_png_never_lists():
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 255, size=(5, 7, 3), dtype=np.uint8)
    raw = encode_frame(rgb, "rgb")
    assert (raw["width"], raw["height"], raw["encoding"]) == (7, 5, "rgb")
    assert base64.b64decode(raw["data"]) == rgb.tobytes()
    png = encode_frame(rgb, "png")
    assert png["encoding"] == "png"
    assert _png_pixels(base64.b64decode(png["data"])) == (7, 5, rgb.tobytes())
    rgba = np.dstack([rgb, np.zeros((5, 7), np.uint8)])
    assert base64.b64decode(encode_frame(rgba, "rgb")["data"]) == rgb.tobytes()


class Echo(Handler):
    def hello(self):
        return protocol.hello("policy", {}, "echo")

    def handlers(self):
        def boom(_msg):
            raise RuntimeError("kaput")

        return {"echo": lambda m: {"type": "echoed", "value": m.get("value")}, "boom": boom}


def run(lines):
    ch, out = channel(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    status = serve(Echo(), channel=ch)
    return status, [json.loads(line) for line in out.getvalue().splitlines()]


def test_serve_answers_requests_and_errors_with_ids():
    welcome = {"type": "welcome", "protocol": "mosaic/1", "session": "s", "heartbeat_ms": 1000}
    status, replies = run([welcome, {"type": "echo", "id": 1, "value": 5}, {"type": "dance", "id": 2},
                           {"type": "boom", "id": 3}, {"type": "ping", "id": 4}, {"type": "stop", "id": 5},
                           {"type": "echo", "id": 6}])
    assert status == 0
    assert [r["type"] for r in replies] == ["hello", "echoed", "error", "error", "pong", "stopped"]
    assert replies[1] == {"type": "echoed", "value": 5, "id": 1}
    assert replies[2]["code"] == protocol.UNKNOWN_TYPE and replies[2]["id"] == 2
    assert replies[3]["code"] == protocol.INTERNAL and "kaput" in replies[3]["message"]


def test_serve_exits_3_when_rejected():
    status, replies = run([{"type": "reject", "reason": "protocol mosaic/2 is not supported"}])
    assert status == 3 and replies[0]["type"] == "hello"


def test_heartbeats_while_a_request_runs_long():
    import time

    class Slow(Echo):
        def handlers(self):
            return {"slow": lambda m: (time.sleep(0.35), {"type": "done"})[1]}

    lines = [{"type": "welcome", "protocol": "mosaic/1", "session": "s", "heartbeat_ms": 100},
             {"type": "slow", "id": 1}, {"type": "stop", "id": 2}]
    ch, out = channel(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    serve(Slow(), channel=ch)
    kinds = [json.loads(line)["type"] for line in out.getvalue().splitlines()]
    assert kinds[0] == "hello" and kinds[-2:] == ["done", "stopped"]
    assert 1 <= kinds.count("heartbeat") <= 4
