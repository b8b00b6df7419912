"""Boundary-safe encoding of (context, continuation) requests for causal scoring.

The rules, in order:

1. **Whitespace.** Trailing whitespace of the context moves onto the continuation (as
   lm-evaluation-harness does): ``("in the ", "tub")`` is scored as ``("in the", " tub")``.
2. **Joint encoding.** ``context + continuation`` is tokenized once, with character offsets.
3. **Scored tokens.** Exactly the tokens whose character span reaches into the continuation are
   scored; each carries its span within the (whitespace-adjusted) continuation.
4. **Boundary merge.** If the first scored token also covers characters of the context (the
   tokenizer merged across the join, e.g. ``"Hello" + "!!"``), that whole token is charged to the
   continuation, its span starts at 0, and the encoding is flagged ``merged``. Its log-prob is
   P(token | context tokens before it): the context is scored one token shorter, never shifted.
5. **Empty context.** The continuation is conditioned on BOS, or EOS where the model has no BOS.
   Models whose tokenizer adds BOS to every sequence get it on every request, once: a context that
   starts with the BOS token itself (a chat template that writes it) gets no second one, as in
   lm-evaluation-harness.
6. **Window.** If the sequence is longer than the model's window, context tokens are dropped from
   the left (BOS is kept) and ``truncated`` says how many; a continuation that cannot fit at all
   raises ``ValueError``.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .models import LM


@dataclass(frozen=True)
class Encoding:
    """A request ready for the engine.

    Attributes:
        context: the context after the whitespace rule.
        continuation: the scored text (the continuation after the whitespace rule).
        input_ids: the tokens to forward (prefix, kept context tokens, continuation tokens).
        start: index in ``input_ids`` of the first scored token (always >= 1).
        spans: character span within ``continuation`` of every scored token.
        merged: the first scored token straddles the context/continuation join.
        truncated: number of context tokens dropped from the left to fit the window.
    """

    context: str
    continuation: str
    input_ids: tuple[int, ...]
    start: int
    spans: tuple[tuple[int, int], ...]
    merged: bool
    truncated: int

    @property
    def scored_ids(self) -> tuple[int, ...]:
        """The token ids of the continuation."""
        return self.input_ids[self.start:]

    @property
    def key(self) -> tuple[tuple[int, ...], int]:
        """Identity of the computation: identical keys give identical scores."""
        return self.input_ids, self.start


def move_whitespace(context: str, continuation: str) -> tuple[str, str]:
    """Move the context's trailing whitespace onto the continuation."""
    stripped = context.rstrip()
    return stripped, context[len(stripped):] + continuation


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_text(value: Any, name: str, *, allow_empty: bool = True) -> str:
    """Return ``value`` if it is valid text (non-empty unless allowed), else raise naming ``name``.

    A lone surrogate (U+D800..U+DFFF) is not text a tokenizer can take; U+DC80..U+DCFF is how
    Python carries a byte that is not UTF-8 in command-line arguments and file names, and is
    reported as that byte.

    Raises:
        TypeError: not a string.
        ValueError: empty (unless allowed), or a lone surrogate (its 0-based character position named).
    """
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a string, got {type(value).__name__}")
    if not allow_empty and value == "":
        raise ValueError(f"{name}: must not be empty")
    bad = bad_character(value)
    if bad:
        raise ValueError(f"{name}: {bad}")
    return value


def bad_character(value: str) -> str | None:
    """The first character of ``value`` that is not text (see ``check_text``), described with its 0-based position
    within ``value`` (the one position every message reports), or None when there is none."""
    bad = _SURROGATE.search(value)
    if not bad:
        return None
    i, code = bad.start(), ord(bad.group())
    what = (f"byte 0x{code - 0xDC00:02X} that is not UTF-8" if 0xDC80 <= code <= 0xDCFF
            else f"lone surrogate U+{code:04X}, which is not valid Unicode")
    return f"character {i} (0-based) is a {what} (near {value[max(0, i - 20):i]!r})"


def blank(value: str) -> bool:
    """True when ``value`` shows nothing to read: empty once whitespace and format characters (Unicode category Cf:
    zero-width space and joiners, BOM, soft hyphen, ...) are removed."""
    return all(c.isspace() or unicodedata.category(c) == "Cf" for c in value)


def glued(premise: str, option: str) -> bool:
    """True when ``option`` would be glued to the premise's last word (neither side has whitespace there):
    ``"into a" + "cup"`` reads "into acup"."""
    return bool(premise.strip()) and not blank(option) and not premise[-1:].isspace() and not option[:1].isspace()


def check_options(options: Any, name: str = "options", *, min_count: int = 1, distinct: bool = True) -> list[str]:
    """Validate a list of answer options: the one set of rules for scoring, letters and paraphrase views.

    Args:
        options: the options (a list or tuple of strings).
        name: the argument name used in error messages.
        min_count: how many options are needed at least.
        distinct: refuse an option listed twice (a dataset item may repeat a choice: pass False).

    Returns:
        The options as a list.

    Raises:
        TypeError: not a list of strings.
        ValueError: too few options, an option that is empty or blank (only whitespace or invisible format
            characters, see ``blank``; or not valid text, see ``check_text``), or a duplicate (with ``distinct``):
            listed twice, or the same text after Unicode NFC normalisation (" café" with one code point é and
            with e + U+0301).
    """
    if isinstance(options, (str, bytes)) or not isinstance(options, Iterable):
        raise TypeError(f"{name}: expected a list of strings, got {type(options).__name__}")
    options = list(options)
    if len(options) < min_count:
        raise ValueError(f"{name}: need at least {min_count} option{'s' if min_count > 1 else ''}, got {len(options)}")
    for i, o in enumerate(options):
        check_text(o, f"{name}[{i}]", allow_empty=False)
        if blank(o):
            raise ValueError(f"{name}[{i}]: an option must contain more than whitespace and invisible format "
                             f"characters (such as U+200B, the zero-width space), got {ascii(o)}")
    pairs = duplicates(options) if distinct else []
    exact = sorted({options[i] for j, i in pairs if options[i] == options[j]})
    if exact:
        raise ValueError(f"{name}: duplicate option(s) {exact}")
    if pairs:
        (j, i), o = pairs[0], options[pairs[0][1]]
        raise ValueError(f"{name}: options {j} and {i} ({options[j]!r} and {o!r}) are the same text after Unicode NFC "
                         f"normalisation, written with different code points ({ascii(options[j])} and {ascii(o)}): "
                         "keep one (unicodedata.normalize('NFC', option) writes it one way)")
    return options


def duplicates(options: Sequence[str]) -> list[tuple[int, int]]:
    """``(j, i)`` for every option ``i`` that repeats an earlier option ``j``: the same text, or the same after
    Unicode NFC normalisation (" café" with the one code point é and with e + U+0301: one answer, which a
    tokenizer may read as two)."""
    first: dict[str, int] = {}  # NFC form -> the first option written so
    out = []
    for i, o in enumerate(options):
        j = first.setdefault(unicodedata.normalize("NFC", o), i)
        if j != i:
            out.append((j, i))
    return out


def encode(lm: LM, context: str, continuation: str) -> Encoding:
    """Encode one request for ``lm`` (an ``LM``) by the rules in this module's docstring."""
    check_text(context, "context")
    check_text(continuation, "continuation", allow_empty=False)
    ctx, cont = move_whitespace(context, continuation)
    tok = lm.tokenizer
    enc = tok(ctx + cont, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    boundary = len(ctx)
    first = next((i for i, (s, e) in enumerate(offsets) if e > boundary and e > s), None)
    if first is None:
        raise ValueError(f"continuation: {continuation!r} encodes to no tokens after the context")
    merged = offsets[first][0] < boundary
    spans = tuple((max(0, s - boundary), e - boundary) for s, e in offsets[first:])
    head: list[int] = []
    context_ids = list(ids[:first])
    if lm.add_bos and context_ids[:1] == [tok.bos_token_id]:  # the context writes BOS itself (a chat template's)
        head, context_ids = context_ids[:1], context_ids[1:]
    elif lm.add_bos:
        head = [tok.bos_token_id]
    elif first == 0:
        head = [lm.prefix_id]
    scored = list(ids[first:])
    room = lm.max_length - len(scored) - len(head)
    if room < (0 if head else 1):
        raise ValueError(
            f"continuation: {len(scored)} tokens do not fit the model's window of {lm.max_length} tokens"
        )
    truncated = max(0, len(context_ids) - room)
    if truncated:
        context_ids = context_ids[truncated:]
    input_ids = tuple(head + context_ids + scored)
    return Encoding(ctx, cont, input_ids, len(head) + len(context_ids), spans, merged, truncated)


def encode_prompt(lm: LM, context: str) -> tuple[int, ...]:
    """Token ids of a prompt whose next-token distribution is wanted (BOS/EOS rule as above).

    A prompt longer than the model's window keeps its last tokens, with a warning that says so.
    """
    check_text(context, "context")
    ids = list(lm.tokenizer(context, add_special_tokens=False)["input_ids"])
    bos = lm.tokenizer.bos_token_id
    head = ([] if ids[:1] == [bos] else [bos]) if lm.add_bos else ([] if ids else [lm.prefix_id])
    ids = head + ids
    head = ids[:1] if lm.add_bos else head  # the BOS is kept, whoever wrote it
    if len(ids) > lm.max_length:
        cut = len(ids) - lm.max_length
        warnings.warn(f"context: {len(ids)} tokens exceed the model's window of {lm.max_length}; "
                      f"the first {cut} context tokens were dropped ({context[:40]!r}...)", stacklevel=2)
        ids = head + ids[cut + len(head):]
    return tuple(ids)
