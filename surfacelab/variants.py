"""English surface-form variants of an option: articles, number, capitalisation, period, leading space.

``variants(" bathtub")`` proposes " a bathtub", " the bathtubs", "Bathtub." and the rest; with ``lm=`` the
strings its tokenizer encodes identically are dropped. The paraphrase-mass view (:mod:`surfacelab.paraphrase`)
and the teaching set take their concept forms from here.
"""

from __future__ import annotations

import re
from itertools import product
from typing import Any

import pandas as pd

from . import text

_IRREGULAR = {"man": "men", "woman": "women", "child": "children", "person": "people", "foot": "feet",
              "tooth": "teeth", "mouse": "mice", "goose": "geese", "knife": "knives", "leaf": "leaves",
              "wife": "wives", "life": "lives", "half": "halves", "sheep": "sheep", "fish": "fish", "deer": "deer"}
_SINGULAR = {v: k for k, v in _IRREGULAR.items() if k != v}
_ARTICLES = ("a", "an", "the")


def _match_case(word: str, like: str) -> str:
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def pluralize(word: str) -> str:
    """Plural of a simple English noun (-s, -es, -ies and a few common irregulars)."""
    low = word.lower()
    if low in _IRREGULAR:
        return _match_case(_IRREGULAR[low], word)
    if re.search(r"[^aeiou]y$", low):
        return word[:-1] + "ies"
    if re.search(r"(s|x|z|ch|sh)$", low):
        return word + "es"
    return word + "s"


def singularize(word: str) -> str | None:
    """Singular of a simple English plural noun, or None if ``word`` does not look plural."""
    low = word.lower()
    if low in _SINGULAR:
        return _match_case(_SINGULAR[low], word)
    if len(low) > 4 and low.endswith("ies"):
        return word[:-3] + "y"
    if re.search(r"(ss|x|z|ch|sh)es$", low):
        return word[:-2]
    if len(low) > 2 and low.endswith("s") and not re.search(r"(ss|us|is)$", low):
        return word[:-1]
    return None


def _an(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _set_case(s: str, upper: bool) -> str:
    """Upper- or lower-case the first character (an all-capitals first word such as "GP" is kept)."""
    first = s.split(" ")[0]
    if not upper and len(first) > 1 and first.isupper():
        return s
    return (s[:1].upper() if upper else s[:1].lower()) + s[1:]


def variants(option: str, *, lm: Any = None) -> pd.DataFrame:
    """Propose surface forms of one option: articles, number, capitalisation, period, leading space.

    The option is parsed as [whitespace][article ]phrase[.]; the last word of the phrase is the
    noun whose number is changed (simple English rules). Every combination of the five axes is
    built: article none / a|an (by the first letter: a, e, i, o, u take "an"; singular only) / the;
    singular / plural; first character upper / lower case; with / without a trailing period; with /
    without a leading space. Identical strings are dropped; with ``lm``, strings that its tokenizer
    encodes to the same token ids are dropped too (the variant with fewer changes is kept).

    Args:
        option: one option string, e.g. " a bathtub".
        lm: a loaded ``LM`` whose tokenizer decides which variants are the same.

    Returns:
        One row per variant, the original first, then by number of changes: variant, rule,
        n_changes, article, number, capitalised, period, leading_space (and token_ids, n_tokens
        with ``lm``).

    Example:
        >>> variants(" bathtub")["variant"].tolist()[:4]
        [' bathtub', ' a bathtub', ' the bathtub', ' bathtubs']
    """
    text.check_text(option, "option", allow_empty=False)
    if not option.strip():
        raise ValueError("option: must contain more than whitespace")
    lead = option[:len(option) - len(option.lstrip())]
    core = option.strip()
    period = core.endswith(".") and len(core) > 1
    if period:
        core = core[:-1].rstrip()
    words = core.split(" ")
    article = ""
    if len(words) > 1 and words[0].lower() in _ARTICLES:
        article, core = words[0].lower(), " ".join(words[1:]).lstrip()
    capitalised = (option.strip()[:1]).isupper()
    m = re.search(r"[A-Za-z]+$", core)
    plural_of = singularize(m.group()) if m else None
    number = "plural" if plural_of and article not in ("a", "an") else "singular"
    phrases = {number: core}
    if m and number == "plural":
        phrases["singular"] = core[:m.start()] + plural_of
    elif m:
        phrases["plural"] = core[:m.start()] + pluralize(m.group())
    orig = {"article": article or "none", "number": number, "capitalised": capitalised, "period": period,
            "leading_space": bool(lead)}
    rows = [{"variant": option, "rule": "original", "n_changes": 0, "_order": (-1, ()), **orig}]
    for art, num, cap, per, space in product(("none", "a/an", "the"), ("singular", "plural"), (False, True),
                                            (False, True), (False, True)):
        if num not in phrases or (art == "a/an" and num == "plural"):
            continue
        phrase = phrases[num]
        word = _an(phrase) if art == "a/an" else art
        s = f"{word} {phrase}" if art != "none" else phrase
        s = _set_case(s, cap)
        s = (lead or " " if space else "") + s + ("." if per else "")
        art_name = "none" if art == "none" else word
        state = {"article": art_name, "number": num, "capitalised": cap, "period": per, "leading_space": space}
        changes = [f"article={art_name}" if art_name != orig["article"] and not (
                       {art_name, orig["article"]} <= {"a", "an"}) else "",
                   num if num != number else "",
                   ("capitalised" if cap else "lower-case") if cap != capitalised else "",
                   ("+period" if per else "-period") if per != period else "",
                   ("+space" if space else "-space") if space != bool(lead) else ""]
        axes = tuple(i for i, c in enumerate(changes) if c)
        rule = " + ".join(c for c in changes if c) or ("original" if s == option else "normalised")
        rows.append({"variant": s, "rule": rule, "n_changes": len(axes), "_order": (len(axes), axes), **state})
    rows.sort(key=lambda r: r["_order"])
    t = pd.DataFrame(rows).drop(columns="_order").drop_duplicates("variant")
    if lm is not None:
        t["token_ids"] = [text.encode(lm, "", v).scored_ids for v in t["variant"]]
        t["n_tokens"] = t["token_ids"].map(len)
        t = t.drop_duplicates("token_ids")
    return t.reset_index(drop=True)
