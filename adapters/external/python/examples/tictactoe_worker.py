"""Wraps PettingZoo's tic-tac-toe as a mosaic environment worker, with a text view for
language models. Run by mosaic as: command = ["python3", "tictactoe_worker.py"]."""

import mosaic_worker  # first: keeps stdout for protocol frames

from pettingzoo.classic import tictactoe_v3

LABELS = [f"{'top middle bottom'.split()[i % 3]}-{'left centre right'.split()[i // 3]}" for i in range(9)]


def board_text(env, agent, raw):
    """The board as three rows of X, O and dots, from the acting player's planes."""
    planes = raw["observation"]
    rows = []
    for r in range(3):
        cells = []
        for c in range(3):
            mine, theirs = planes[r][c][0], planes[r][c][1]
            cells.append("X" if mine else "O" if theirs else ".")
        rows.append(" ".join(cells))
    return f"You are {agent} (X). Board:\n" + "\n".join(rows)


if __name__ == "__main__":
    env = tictactoe_v3.env(render_mode="rgb_array")
    raise SystemExit(mosaic_worker.serve_aec(env, "tictactoe", labels=LABELS, text=board_text, zero_sum_outcome=True))
