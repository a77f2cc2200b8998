"""SCAN (Lake & Baroni 2018), generated: the grammar, its interpretation and the standard
splits, as pure Python functions of the full command set (no download, no data files).

The phrase-structure grammar (Lake 2019, Section 4.3; Lake & Baroni 2018, Fig. 6):

    C -> S and S | S after S | S
    S -> V twice | V thrice | V
    V -> D opposite | D around | D | U          (written "U opposite left", "turn around right")
    D -> U left | U right | turn left | turn right
    U -> walk | look | run | jump

and its interpretation: `walk` = I_WALK (likewise look, run, jump); `x left` = I_TURN_LEFT x;
`opposite` turns twice before acting once; `around` turns and acts four times; `turn` adds no
action of its own; `twice` / `thrice` repeat the phrase; `a and b` = a then b; `a after b` = b
then a. That gives 20,910 commands over 13 input words and 6 actions, with 1 to 48 actions each.

    >>> interpret("jump around left twice")[:4]
    ('I_TURN_LEFT', 'I_JUMP', 'I_TURN_LEFT', 'I_JUMP')
    >>> len(commands())
    20910

`split(name)` gives the train and test pairs of `addprim_jump`, `length` and
`template_around_right` (the splits of Lake 2019, Sections 4.3-4.6), and `write_split(name,
directory)` writes one in SCAN's own file format (`IN: ... OUT: ...` lines, as
`tasks_train_<name>.txt` and `tasks_test_<name>.txt`) so that it can be compared with the
public files.
"""

import functools
import itertools
from collections.abc import Iterable
from pathlib import Path

PRIMITIVES = ("walk", "look", "run", "jump")
"""The verbs `U` of the grammar."""
DIRECTIONS = ("left", "right")
INPUT_WORDS = (
    *PRIMITIVES,
    "turn",
    *DIRECTIONS,
    "opposite",
    "around",
    "twice",
    "thrice",
    "and",
    "after",
)
"""The 13 input words."""
ACTIONS = ("I_WALK", "I_LOOK", "I_RUN", "I_JUMP", "I_TURN_LEFT", "I_TURN_RIGHT")
"""The 6 output actions, in SCAN's spelling."""

_ACT = {u: f"I_{u.upper()}" for u in PRIMITIVES}
_TURN = {"left": "I_TURN_LEFT", "right": "I_TURN_RIGHT"}
_REPEAT = {"twice": 2, "thrice": 3}

Pair = tuple[str, tuple[str, ...]]
"""A command and its action sequence, e.g. `("walk left", ("I_TURN_LEFT", "I_WALK"))`."""

SPLITS = ("addprim_jump", "length", "template_around_right")


def _phrases_v() -> list[str]:
    """Every `V`: 34 phrases."""
    out: list[str] = list(PRIMITIVES)
    for verb in (*PRIMITIVES, "turn"):
        for direction in DIRECTIONS:
            out += [f"{verb} {direction}", f"{verb} opposite {direction}"]
            out.append(f"{verb} around {direction}")
    return out


def _phrases_s() -> list[str]:
    """Every `S`: 102 phrases."""
    return [f"{v}{suffix}" for v in _phrases_v() for suffix in ("", " twice", " thrice")]


@functools.cache
def commands() -> tuple[str, ...]:
    """Every command of the grammar (20,910), in a fixed order: the single phrases, then every
    `a and b`, then every `a after b`."""
    s = _phrases_s()
    joined = [f"{a} {conj} {b}" for conj in ("and", "after") for a, b in itertools.product(s, s)]
    return tuple(s + joined)


def _interpret_v(words: list[str]) -> list[str]:
    if len(words) == 1 and words[0] in _ACT:  # U
        return [_ACT[words[0]]]
    if not 2 <= len(words) <= 3 or words[0] not in (*PRIMITIVES, "turn") or words[-1] not in _TURN:
        raise ValueError(f"not a SCAN phrase: {' '.join(words)!r}")
    verb, direction = words[0], words[-1]
    act = [] if verb == "turn" else [_ACT[verb]]
    turn = [_TURN[direction]]
    if len(words) == 2:  # D: x left = LTURN x
        return turn + act
    if words[1] == "opposite":  # turn twice, act once
        return turn + turn + act
    if words[1] == "around":  # turn and act, four times
        return (turn + act) * 4
    raise ValueError(f"not a SCAN phrase: {' '.join(words)!r}")


def _interpret_s(words: list[str]) -> list[str]:
    if words and words[-1] in _REPEAT:
        return _interpret_v(words[:-1]) * _REPEAT[words[-1]]
    return _interpret_v(words)


def interpret(command: str) -> tuple[str, ...]:
    """The action sequence of a SCAN command; an error for anything the grammar cannot make."""
    words = command.split()
    for conj in ("and", "after"):
        if conj in words:
            i = words.index(conj)
            first, second = _interpret_s(words[:i]), _interpret_s(words[i + 1 :])
            return tuple(first + second if conj == "and" else second + first)
    return tuple(_interpret_s(words))


@functools.cache
def pairs() -> tuple[Pair, ...]:
    """Every command with its action sequence, in the order of `commands()`."""
    return tuple((c, interpret(c)) for c in commands())


def _has(command: str, phrase: str) -> bool:
    return f" {phrase} " in f" {command} "


def split(name: str) -> tuple[tuple[Pair, ...], tuple[Pair, ...]]:
    """The train and test pairs of a standard SCAN split (each command once):

    - `addprim_jump`: train = every command without "jump", plus "jump" alone (13,204);
      test = every other command with "jump" (7,706).
    - `length`: train = commands of at most 22 actions (16,990); test = 24 or more (3,920).
    - `template_around_right`: train = no "around right" (15,225); test = "<verb> around
      right" in any context (4,476); commands with "turn around right" are in neither.
    """
    everything = pairs()
    if name == "addprim_jump":
        train = [p for p in everything if not _has(p[0], "jump") or p[0] == "jump"]
        test = [p for p in everything if _has(p[0], "jump") and p[0] != "jump"]
    elif name == "length":
        train = [p for p in everything if len(p[1]) <= 22]
        test = [p for p in everything if len(p[1]) >= 24]
    elif name == "template_around_right":
        train = [p for p in everything if not _has(p[0], "around right")]
        test = [
            p
            for p in everything
            if _has(p[0], "around right") and not _has(p[0], "turn around right")
        ]
    else:
        raise ValueError(f"unknown SCAN split {name!r}; the splits are {', '.join(SPLITS)}.")
    return tuple(train), tuple(test)


def format_pairs(items: Iterable[Pair]) -> str:
    """Pairs in SCAN's file format: one `IN: <command> OUT: <actions>` line each."""
    return "".join(f"IN: {c} OUT: {' '.join(a)}\n" for c, a in items)


def parse_pairs(text: str) -> list[Pair]:
    """The pairs of a file in SCAN's format (the inverse of `format_pairs`)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if not line.startswith("IN: ") or " OUT: " not in line:
            raise ValueError(f"line {n} is not of the form 'IN: ... OUT: ...': {line!r}")
        command, actions = line[4:].split(" OUT: ", 1)
        out.append((command.strip(), tuple(actions.split())))
    return out


def write_split(name: str, directory: Path | str) -> tuple[Path, Path]:
    """Write the split `name` as `tasks_train_<name>.txt` and `tasks_test_<name>.txt` in
    `directory` (created if needed), in SCAN's file format; returns the two paths."""
    train, test = split(name)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = (directory / f"tasks_train_{name}.txt", directory / f"tasks_test_{name}.txt")
    for path, items in zip(paths, (train, test), strict=True):
        path.write_text(format_pairs(items))
    return paths
