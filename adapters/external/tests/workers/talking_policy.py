"""A policy worker (built on mosaic_worker) that talks on the team channel.

Each decision takes the first legal action, records what it read in its detail (``heard``:
``"<from>: <text>"`` per message), and says ``"<agent> at <n> ok"`` for its n-th decision of
the episode, addressed to the sender of the last message it read (``@<sender> ...``) when
there was one.
"""

import mosaic_worker


def decide(observation, legal, context):
    heard = [f"{m['from']}: {m['text']}" for m in context.inbox]
    message = f"{context.agent_id} at {context.decisions} ok"
    if context.inbox:
        message = f"@{context.inbox[-1]['from']} {message}"
    return {"action": legal[0], "message": message, "detail": {"heard": heard}}


raise SystemExit(mosaic_worker.serve_policy(decide, "talking", messages=True))
