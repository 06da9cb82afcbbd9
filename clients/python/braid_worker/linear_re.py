"""JSON Schema `pattern`s matched in time linear in the string, whatever the pattern: braid's TypeScript side runs
them on RE2, and Python's `re` backtracks (`^(a+)+$` against thirty characters takes minutes). A pattern is parsed
from its ECMA-262 syntax (what braid's validate lets through: no backreferences, no lookaround) into a Thompson NFA,
and a string is searched by simulating every state at once (a Pike VM): at most one visit of each state per
character. Compiled patterns are kept by their text."""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from typing import Callable, Union

Pred = Callable[[str], bool]


class PatternError(ValueError):
    """A pattern this matcher cannot run (braid's validate refuses the same ones)."""


# the program: ("char", pred), ("split", a, b), ("jmp", a), ("assert", kind), ("match",)
Inst = tuple[object, ...]
Node = tuple[object, ...]

_MAX_REPEAT = 1000
_MAX_PROGRAM = 100_000
# as RE2 reads them (braid's TypeScript side): `.` is all but a newline, \s the ASCII spaces
_SPACE = set(" \t\n\f\r")


def _is_word(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "_")


def _is_digit(c: str) -> bool:
    return "0" <= c <= "9"


_CLASS_ESCAPES: dict[str, Pred] = {
    "d": _is_digit,
    "D": lambda c: not _is_digit(c),
    "w": _is_word,
    "W": lambda c: not _is_word(c),
    "s": lambda c: c in _SPACE,
    "S": lambda c: c not in _SPACE,
}
_CHAR_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "v": "\v", "f": "\f", "0": "\0"}


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def more(self) -> bool:
        return self.i < len(self.p)

    def peek(self) -> str:
        return self.p[self.i] if self.more() else ""

    def take(self) -> str:
        c = self.p[self.i]
        self.i += 1
        return c

    def fail(self, why: str) -> PatternError:
        return PatternError(f"pattern {self.p!r} at {self.i}: {why}")

    def parse(self) -> Node:
        node = self.alternation()
        if self.more():
            raise self.fail("unmatched )")
        return node

    def alternation(self) -> Node:
        branches = [self.concatenation()]
        while self.peek() == "|":
            self.take()
            branches.append(self.concatenation())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def concatenation(self) -> Node:
        items: list[Node] = []
        while self.more() and self.peek() not in "|)":
            items.append(self.repetition())
        return ("cat", items)

    def repetition(self) -> Node:
        atom = self.atom()
        while self.more() and self.peek() in "*+?{":
            c = self.peek()
            if c == "{":
                bounds = self.bounds()
                if bounds is None:
                    break
                lo, hi = bounds
            else:
                self.take()
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
            if atom[0] == "assert":
                raise self.fail("nothing to repeat")
            if self.peek() == "?":
                self.take()  # lazy: the same strings match
            atom = ("rep", atom, lo, hi)
        return atom

    def bounds(self) -> tuple[int, int | None] | None:
        start = self.i
        self.take()
        lo = self.number()
        if lo is None:
            self.i = start
            return None
        hi: int | None = lo
        if self.peek() == ",":
            self.take()
            hi = self.number()
        if self.peek() != "}":
            self.i = start
            return None
        self.take()
        if lo > _MAX_REPEAT or (hi is not None and (hi > _MAX_REPEAT or hi < lo)):
            raise self.fail(f"a repeat count over {_MAX_REPEAT}, or out of order")
        return lo, hi

    def number(self) -> int | None:
        digits = ""
        while self.more() and _is_digit(self.peek()):
            digits += self.take()
        return int(digits) if digits else None

    def atom(self) -> Node:
        c = self.take()
        if c == "(":
            if self.p.startswith("?:", self.i):
                self.i += 2
            elif self.p.startswith("?<", self.i) and not self.p.startswith(("?<=", "?<!"), self.i):
                end = self.p.find(">", self.i)
                if end < 0:
                    raise self.fail("unterminated group name")
                self.i = end + 1
            elif self.peek() == "?":
                raise self.fail("lookaround has no linear-time form")
            inner = self.alternation()
            if self.peek() != ")":
                raise self.fail("missing )")
            self.take()
            return inner
        if c == "[":
            return ("char", self.char_class())
        if c == ".":
            return ("char", lambda x: x != "\n")
        if c == "^":
            return ("assert", "bol")
        if c == "$":
            return ("assert", "eol")
        if c == "\\":
            return self.escape(in_class=False)
        if c in "*+?":
            raise self.fail("nothing to repeat")
        if c == ")":
            raise self.fail("unmatched )")
        return ("char", _equals(c))

    def escape(self, in_class: bool) -> Node:
        if not self.more():
            raise self.fail("a trailing backslash")
        c = self.take()
        if c in _CLASS_ESCAPES:
            return ("char", _CLASS_ESCAPES[c])
        if not in_class and c in "bB":
            return ("assert", "word" if c == "b" else "notword")
        if c in "pP":
            pred = self.property()
            return ("char", pred if c == "p" else (lambda x: not pred(x)))
        if c in "123456789":
            raise self.fail("backreferences have no linear-time form")
        if c in _CHAR_ESCAPES:
            return ("char", _equals(_CHAR_ESCAPES[c]))
        if c == "x":
            return ("char", _equals(chr(self.hex(2))))
        if c == "u":
            if self.peek() == "{":
                self.take()
                end = self.p.find("}", self.i)
                if end < 0:
                    raise self.fail("unterminated \\u{")
                code = int(self.p[self.i : end], 16)
                self.i = end + 1
                return ("char", _equals(chr(code)))
            return ("char", _equals(chr(self.hex(4))))
        if c == "c" and self.more() and self.peek().isascii() and self.peek().isalpha():
            return ("char", _equals(chr(ord(self.take()) % 32)))
        return ("char", _equals(c))

    def hex(self, n: int) -> int:
        text = self.p[self.i : self.i + n]
        if len(text) != n or any(x not in "0123456789abcdefABCDEF" for x in text):
            raise self.fail("a bad hexadecimal escape")
        self.i += n
        return int(text, 16)

    def property(self) -> Pred:
        if self.peek() != "{":
            category = self.take() if self.more() else ""
        else:
            end = self.p.find("}", self.i)
            if end < 0:
                raise self.fail("unterminated \\p{")
            category = self.p[self.i + 1 : end]
            self.i = end + 1
        category = category.removeprefix("General_Category=").removeprefix("gc=")
        if len(category) not in (1, 2) or not category[0].isupper():
            raise self.fail(f"unicode property {category!r} is not a general category")
        return lambda x: unicodedata.category(x).startswith(category)

    def char_class(self) -> Pred:
        negated = self.peek() == "^"
        if negated:
            self.take()
        parts: list[Pred] = []
        first = True
        while True:
            if not self.more():
                raise self.fail("missing ]")
            c = self.take()
            if c == "]" and not first:
                break
            first = False
            low: str
            if c == "\\":
                node = self.escape(in_class=True)
                single = getattr(node[1], "char", None)
                if single is None:
                    parts.append(node[1])  # type: ignore[arg-type]
                    continue
                low = str(single)
            else:
                low = c
            if self.peek() == "-" and self.i + 1 < len(self.p) and self.p[self.i + 1] != "]":
                self.take()
                h = self.take()
                high: str
                if h == "\\":
                    end = getattr(self.escape(in_class=True)[1], "char", None)
                    if end is None:
                        raise self.fail("a class escape cannot end a range")
                    high = str(end)
                else:
                    high = h
                if high < low:
                    raise self.fail("a range out of order")
                parts.append(_Range(low, high))
            else:
                parts.append(_equals(low))
        if negated:
            return lambda x: not any(p(x) for p in parts)
        return lambda x: any(p(x) for p in parts)


class _Equals:
    """A predicate for one character, which a class can use as a range's end."""

    def __init__(self, char: str) -> None:
        self.char = char

    def __call__(self, x: str) -> bool:
        return x == self.char


class _Range:
    """A predicate for the characters from `low` to `high`."""

    def __init__(self, low: str, high: str) -> None:
        self.low, self.high = low, high

    def __call__(self, x: str) -> bool:
        return self.low <= x <= self.high


def _equals(c: str) -> Pred:
    return _Equals(c)


def _compile(node: Node, prog: list[Inst]) -> None:
    if len(prog) > _MAX_PROGRAM:
        raise PatternError("the pattern is too large once its repeats are counted out")
    kind = node[0]
    if kind == "char":
        prog.append(("char", node[1]))
    elif kind == "assert":
        prog.append(("assert", node[1]))
    elif kind == "cat":
        for item in node[1]:  # type: ignore[attr-defined]
            _compile(item, prog)
    elif kind == "alt":
        branches: list[Node] = node[1]  # type: ignore[assignment]
        jumps: list[int] = []
        for b in branches[:-1]:
            split = len(prog)
            prog.append(("split", split + 1, -1))
            _compile(b, prog)
            jumps.append(len(prog))
            prog.append(("jmp", -1))
            prog[split] = ("split", split + 1, len(prog))
        _compile(branches[-1], prog)
        for j in jumps:
            prog[j] = ("jmp", len(prog))
    elif kind == "rep":
        inner: Node = node[1]  # type: ignore[assignment]
        lo: int = node[2]  # type: ignore[assignment]
        hi: int | None = node[3]  # type: ignore[assignment]
        for _ in range(lo):
            _compile(inner, prog)
        if hi is None:
            split = len(prog)
            prog.append(("split", split + 1, -1))
            _compile(inner, prog)
            prog.append(("jmp", split))
            prog[split] = ("split", split + 1, len(prog))
        else:
            holes: list[int] = []
            for _ in range(hi - lo):
                holes.append(len(prog))
                prog.append(("split", len(prog) + 1, -1))
                _compile(inner, prog)
            for h in holes:
                prog[h] = ("split", h + 1, len(prog))


@lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> tuple[Inst, ...]:
    """The program of a pattern; PatternError for one this matcher cannot run."""
    prog: list[Inst] = []
    _compile(_Parser(pattern).parse(), prog)
    prog.append(("match",))
    return tuple(prog)


def _holds(kind: object, text: str, i: int) -> bool:
    if kind == "bol":
        return i == 0
    if kind == "eol":
        return i == len(text)
    before = i > 0 and _is_word(text[i - 1])
    after = i < len(text) and _is_word(text[i])
    return (before != after) if kind == "word" else (before == after)


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches somewhere in `text` (JSON Schema's `pattern` is not anchored)."""
    prog = compile_pattern(pattern)
    current: list[int] = []
    seen = [-1] * len(prog)

    def add(pc: int, i: int, into: list[int]) -> bool:
        # the states reachable without reading a character; True once the match state is among them
        stack = [pc]
        while stack:
            at = stack.pop()
            if seen[at] == i:
                continue
            seen[at] = i
            inst = prog[at]
            op = inst[0]
            if op == "match":
                return True
            if op == "jmp":
                stack.append(inst[1])  # type: ignore[arg-type]
            elif op == "split":
                stack.append(inst[2])  # type: ignore[arg-type]
                stack.append(inst[1])  # type: ignore[arg-type]
            elif op == "assert":
                if _holds(inst[1], text, i):
                    stack.append(at + 1)
            else:
                into.append(at)
        return False

    for i in range(len(text) + 1):
        # a match may begin at every position
        if add(0, i, current):
            return True
        if i == len(text):
            break
        c = text[i]
        following: list[int] = []
        for pc in current:
            pred: Union[Pred, object] = prog[pc][1]
            if callable(pred) and pred(c) and add(pc + 1, i + 1, following):
                return True
        current = following
    return False
