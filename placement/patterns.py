"""Node-name patterns (latency multipliers) matched in bounded time.

User patterns are never handed to the ``re`` module (a pattern such as ``^(a+)+$`` backtracks
for seconds). A pattern is a case-insensitive glob matched anywhere in a name:

* ``|`` separates alternatives (``attention|softmax``);
* ``*`` matches any run of characters, ``?`` one character, ``[abc]`` / ``[a-z]`` / ``[!0-9]``
  (or ``[^0-9]``) one character of (not of) a set;
* ``^`` at the start / ``$`` at the end of an alternative anchors it to the start / end of the name;
* every other character matches itself (``\\`` escapes the next character).

Matching simulates the pattern's automaton with one integer bitmask per character, so it takes
O(len(name) x len(pattern) / 64) steps whatever the input; names are matched on their first
:data:`MAX_NAME_CHARS` characters and patterns are at most :data:`MAX_PATTERN_CHARS` long.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InvalidGraphError, quote

#: Longest pattern accepted.
MAX_PATTERN_CHARS = 200
#: Names are matched on this many leading characters.
MAX_NAME_CHARS = 10_000


@dataclass(frozen=True)
class _Alternative:
    """One alternative compiled to a bit-parallel automaton over its tokens."""

    size: int  # number of tokens; state i = "tokens[:i] matched"
    star: int  # bit i set: token i is '*' (stays, or is skipped)
    classes: tuple  # per token: (chars frozenset, ranges tuple, negated) or None for '*'

    def _closure(self, states: int) -> int:
        # Consecutive stars were merged, so one step reaches every state a star can skip to.
        return states | ((states & self.star) << 1)

    def char_mask(self, char: str) -> int:
        """Bit i set when token i (not a star) accepts ``char``."""
        mask = 0
        for i, token in enumerate(self.classes):
            if token is not None and _accepts(token, char):
                mask |= 1 << i
        return mask

    def matches(self, text: str, masks: dict) -> bool:
        """Run the automaton over ``text``; ``masks`` caches :meth:`char_mask` per character."""
        accept = 1 << self.size
        ends_with_star = bool(self.star >> (self.size - 1) & 1) if self.size else False
        states = self._closure(1)
        for char in text:
            if ends_with_star and states & accept:
                return True  # a trailing '*' keeps the match whatever follows
            mask = masks.get(char)
            if mask is None:
                mask = masks[char] = self.char_mask(char)
            states = self._closure((states & self.star) | ((states & mask) << 1))
            if not states:
                return False
        return bool(states & accept)


def _accepts(token, char: str) -> bool:
    chars, ranges, negated = token
    inside = char in chars or any(low <= char <= high for low, high in ranges)
    return inside != negated


@dataclass(frozen=True)
class NamePattern:
    """A compiled pattern; :meth:`matches` is the only way it is used."""

    text: str
    alternatives: tuple[_Alternative, ...]

    def matches(self, name: str) -> bool:
        """True when some alternative matches ``name`` (case-insensitive, anywhere unless anchored)."""
        name = (name or "")[:MAX_NAME_CHARS].casefold()
        return any(alt.matches(name, masks) for alt, masks in zip(self.alternatives, self._masks))

    @property
    def _masks(self) -> tuple[dict, ...]:
        # Per-call caches (the object stays immutable and shareable between threads).
        return tuple({} for _ in self.alternatives)


def _split_alternatives(pattern: str) -> list[str]:
    parts, current, escaped, in_class = [], [], False, False
    for char in pattern:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[" and not in_class:
            in_class = True
            current.append(char)
        elif char == "]" and in_class:
            in_class = False
            current.append(char)
        elif char == "|" and not in_class:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        current.append("\\\\")
    parts.append("".join(current))
    return parts


def _compile_alternative(text: str, pattern: str) -> _Alternative:
    anchored_start = text.startswith("^")
    if anchored_start:
        text = text[1:]
    anchored_end = text.endswith("$") and not text.endswith("\\$")
    if anchored_end:
        text = text[:-1]
    tokens: list = [] if anchored_start else [None]
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            tokens.append((frozenset(text[i + 1].casefold()), (), False))
            i += 2
            continue
        if char == "*":
            if not tokens or tokens[-1] is not None:
                tokens.append(None)
        elif char == "?":
            tokens.append((frozenset(), (), True))  # "not in the empty set": any character
        elif char == "[":
            end = text.find("]", i + 2)
            if end < 0:
                raise InvalidGraphError(f"latency pattern {quote(pattern)}: '[' at position {i + 1} is never closed")
            body = text[i + 1 : end]
            negated = body[:1] in ("!", "^")
            if negated:
                body = body[1:]
            chars, ranges, k = set(), [], 0
            while k < len(body):
                if k + 2 < len(body) and body[k + 1] == "-":
                    ranges.append((body[k].casefold(), body[k + 2].casefold()))
                    k += 3
                else:
                    chars.add(body[k].casefold())
                    k += 1
            tokens.append((frozenset(chars), tuple(ranges), negated))
            i = end + 1
            continue
        else:
            tokens.append((frozenset(char.casefold()), (), False))
        i += 1
    if not anchored_end and (not tokens or tokens[-1] is not None):
        tokens.append(None)
    star = 0
    for k, token in enumerate(tokens):
        if token is None:
            star |= 1 << k
    return _Alternative(size=len(tokens), star=star, classes=tuple(tokens))


def compile_pattern(pattern: str) -> NamePattern:
    """Compile a node-name pattern (see the module docstring).

    Raises
    ------
    InvalidGraphError
        An empty or over-long pattern, or an unclosed ``[``.
    """
    if not isinstance(pattern, str) or not pattern:
        raise InvalidGraphError("latency pattern: must be a non-empty text")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidGraphError(f"latency pattern: at most {MAX_PATTERN_CHARS} characters (got {len(pattern):,})")
    return NamePattern(pattern, tuple(_compile_alternative(alt, pattern) for alt in _split_alternatives(pattern)))
