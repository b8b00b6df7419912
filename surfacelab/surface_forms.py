"""English surface-form variants of an option: articles, number, capitalisation, period, leading space.

``variants(" bathtub")`` proposes " a bathtub", " the bathtubs", "Bathtub." and the rest; with ``lm=`` the
strings its tokenizer encodes identically are dropped: candidate surface forms of a concept for the
paraphrase-mass view (:mod:`surfacelab.paraphrase`). Noun number and articles come from ``inflect``
(``plural``, ``singular``, ``indefinite_article``).
"""

from __future__ import annotations

import functools
import re
from itertools import product
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd

from . import text

if TYPE_CHECKING:
    from .models import LM

_ARTICLES = ("a", "an", "the")


@functools.cache
def _inflect() -> tuple[Any, Any]:
    """inflect's engines, modern and classical ("cacti", "indices"), imported on first use.

    inflect wraps its functions in typeguard's ``@typechecked``, which re-parses and re-compiles each one as the
    module is imported: 2 s on an idle 2-core CPU, 6 s on a busy one, paid by the first run or Why view. surfacelab
    passes inflect plain strings only, so inflect is imported with that decorator as the identity (0.1 s); the
    decorator is restored at once."""
    import typeguard

    checked = typeguard.typechecked
    typeguard.typechecked = lambda target=None, **_: target if target is not None else (lambda f: f)
    try:
        import inflect
    finally:
        typeguard.typechecked = checked

    modern, classical = inflect.engine(), inflect.engine()
    classical.classical(all=True)
    return modern, classical


def _as_common_noun(inflect_fn: Callable[[str], Any], phrase: str) -> Any:
    """``inflect_fn(phrase)`` with a capitalised first word read as a common noun, the capital restored.

    inflect takes a capitalised word for a name ("University" -> "Universitys", as "Mary" -> "Marys");
    an option is capitalised at the start of a sentence far more often than it is a name. An
    all-capitals first word ("FBI agent") is passed as it is. ``phrase`` is checked text (``_head``).
    """
    if not phrase[:1].isupper() or phrase.split(" ")[0].isupper():
        return inflect_fn(phrase)
    out = inflect_fn(phrase[:1].lower() + phrase[1:])
    return out[:1].upper() + out[1:] if out else out


def _head(phrase: str) -> str:
    """The last word of ``phrase``, checked to be text."""
    return text.check_text(phrase, "phrase", allow_empty=False).split(" ")[-1]


def _acronym(word: str) -> bool:
    """An all-capitals word of two letters or more ("MBA", "FBI", "UNESCO")."""
    return len(word) > 1 and word.isupper()


def plural(phrase: str) -> str:
    """The plural of a singular English noun phrase ("bath tub" -> "bath tubs", "piece of cake" -> "pieces
    of cake", "mother-in-law" -> "mothers-in-law"); an invariant noun ("sheep", "news") comes back unchanged;
    an acronym takes a lower-case "s" ("MBA" -> "MBAs": inflect would write "MBAS")."""
    if _acronym(_head(phrase)):
        return phrase + "s"
    return _as_common_noun(_inflect()[0].plural_noun, phrase)


def singular(phrase: str) -> str | None:
    """The singular of a plural English noun phrase ("criteria" -> "criterion", "cacti" -> "cactus",
    "glasses" -> "glass"), or None when ``phrase`` is not plural ("analysis", "bus", "news", "sheep").

    A candidate from inflect counts only if inflect's plural of it gives ``phrase`` back (classical
    plurals first, then modern ones), and not if it merely drops the final "s" of a word that inflect
    pluralises otherwise ("bus" -> "buses", so "bus" is no plural of "bu"). Words ending in "s" that
    inflect knows neither way ("tennis") are read as plurals, and so is a name that ends like one ("Paris":
    inflect has no list of names). An acronym is singular, and its plural drops the "s" ("MBAs" -> "MBA").
    """
    head = _head(phrase)
    if _acronym(head[:-1]) and head.endswith("s"):
        return phrase[:-1]
    return None if _acronym(head) else _as_common_noun(_singular, phrase)


def _singular(phrase: str) -> str | None:
    modern, classical = _inflect()
    for engine in (classical, modern):
        cand = engine.singular_noun(phrase)
        if cand and cand != phrase and engine.plural_noun(cand) == phrase:
            break
    else:
        return None
    # a candidate that only drops the "s" of a word with a plural of its own is no singular ("bus", "basis")
    return None if cand == phrase[:-1] and modern.plural_noun(phrase) != phrase + "s" else cand


#: Letters whose names start with a vowel sound: "ay", "ee", "ef", "aitch", "eye", "el", "em", "en", "oh", "ar", "ess",
#: "ex" ("an FBI agent", "an LED"); the others' do not ("a BBC reporter", "a URL": "you").
VOWEL_NAMED = frozenset("AEFHILMNORSX")
#: Acronyms said as a word that the pronounceability rule (``said_as_word``) reads letter by letter: three letters,
#: or a cluster English words do not start with.
WORD_READ = frozenset({"HUD", "LAN", "RAM", "ROM", "SCSI", "SIM"})
#: Consonant clusters an English word can start with (the rest, "HT" in HTML or "NS" in NSAID, are spelled out).
_ONSETS = frozenset("B BL BR C CH CL CR D DR F FL FR G GL GR GN H J K KL KN KR L M N P PH PL PR Q QU R S SC SCR SH SK "
                    "SL SM SN SP SPL SPR ST STR SW T TH TR TW V W WH WR Z".split())


def said_as_word(acronym: str) -> bool:
    """Whether an all-capitals word is said as a word ("NASA", "NATO", "SCUBA") rather than letter by letter ("FBI",
    "LED", "HTML", "NAACP").

    The rule: ``WORD_READ``; else a word of four letters or more, without digits, that starts as English words start
    (no consonant cluster outside ``_ONSETS``), has no run of more than three consonants, and ends in a single
    consonant, a doubled one ("MADD") or an English final cluster (a liquid or nasal before a stop or fricative, as
    in "NIST", "SARS", "SMART"; a stop before S or T; SH, CH, TH, CK, NG, PH). Shorter ones, and codes with digits
    ("F1", "MP3"), are spelled out.

    >>> [said_as_word(w) for w in ("NASA", "UNESCO", "FBI", "HTML", "NAACP", "RAM")]
    [True, True, False, False, False, True]
    """
    if acronym in WORD_READ:
        return True
    if len(acronym) < 4 or not acronym.isalpha():
        return False
    runs = re.split("[AEIOU]+", acronym[0] + acronym[1:].replace("Y", "I"))  # a Y after the first letter is a vowel
    onset, last = runs[0], runs[-1]
    if len(runs) < 2 or (onset and onset not in _ONSETS) or max(len(r) for r in runs[1:]) > 3:
        return False
    return len(last) <= 1 or all(_final_pair(a + b) for a, b in zip(last, last[1:]))


def _final_pair(pair: str) -> bool:
    """Two consonants that can end an English syllable."""
    first, second = pair
    return (first == second or pair in ("SH", "CH", "TH", "CK", "NG", "PH")
            or first in "LMNRS" and second in "BCDFGKMPSTZ" or first in "BCDFGKPX" and second in "ST")


def indefinite_article(phrase: str) -> str:
    """ "a" or "an" before ``phrase``, by its sound ("an hour", "a university", "an FBI agent", "a NASA engineer").

    An acronym (a first word of capitals and digits: "FBI", "F1", "MP3", "MBAs", "X-ray") is said letter by letter
    or as a word (``said_as_word``): spelled out, its first letter's name decides (``VOWEL_NAMED``: "an LED", "an
    SOS", "a URL"); said as a word, its own first sound ("a NATO summit", "an OPEC member"), and a first U is always
    "you" ("a UEFA ruling", "a UNESCO site"). Every other phrase goes to inflect's ``a()``. An all-capitals word
    that is no acronym reads as one (a shouted "UMBRELLA" gets "a").
    """
    text.check_text(phrase, "phrase", allow_empty=False)
    code = re.match(r"[A-Z][A-Z0-9]*(?=s?(?![a-z]))", phrase.lstrip())
    if code is None or len(code.group()) == 1 and phrase.lstrip()[1:2].isalpha():
        return _inflect()[0].a(phrase).split(" ", 1)[0]
    letters = code.group()
    if said_as_word(letters):
        return "a" if letters[0] == "U" else _inflect()[0].a(letters.lower()).split(" ", 1)[0]
    return "an" if letters[0] in VOWEL_NAMED else "a"


def _number_forms(core: str, article: str) -> tuple[str, dict[str, str]]:
    """The option's number and its phrase in each number it can take (one entry for an invariant noun)."""
    if not re.search(r"[A-Za-z]$", core):
        return "singular", {"singular": core}
    one = singular(core) if article not in ("a", "an") else None
    if one is not None:
        return "plural", {"plural": core, "singular": one}
    many = plural(core)
    return "singular", {"singular": core} if many == core else {"singular": core, "plural": many}


def _set_case(s: str, upper: bool) -> str:
    """Upper- or lower-case the first character."""
    return (s[:1].upper() if upper else s[:1].lower()) + s[1:]


def _own_case(word: str, mid_sentence: bool) -> bool:
    """True when ``word`` keeps its case in every variant: it has capitals past its first letter ("MBA", "iPhone"),
    or a capital first letter mid-sentence, where only a name or a proper adjective has one (" Paris", " European")."""
    return any(c.isupper() for c in word[1:]) or (mid_sentence and word[:1].isupper())


def variants(option: str, *, lm: LM | None = None) -> pd.DataFrame:
    """Propose surface forms of one option: articles, number, capitalisation, period, leading space.

    The option is parsed as [whitespace][article ]phrase[.]; the phrase is taken as a noun phrase
    whose number is changed with ``inflect`` (irregular, Latin and Greek plurals, invariant nouns,
    compounds: "piece of cake" -> "pieces of cake"; a phrase that is not a noun phrase gets no
    sensible number change). Every combination of the five axes is built: article none / a|an (by
    sound: "an hour", "a university"; singular only) / the; singular / plural (an invariant noun such
    as "sheep" or "news" has one form); first character upper / lower case; with / without a
    trailing period; with / without a leading space. Identical strings are dropped; with ``lm``, strings that its
    tokenizer encodes to the same token ids are dropped too (the variant with fewer changes is kept).

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
    t = _table(option).copy()
    if lm is not None:
        t["token_ids"] = [text.encode(lm, "", v).scored_ids for v in t["variant"]]
        t["n_tokens"] = t["token_ids"].map(len)
        t = t.drop_duplicates("token_ids").reset_index(drop=True)
    return t


@functools.lru_cache(maxsize=4096)
def variant_rules(option: str) -> tuple[tuple[str, str], ...]:
    """(variant, rule) of each surface variant of ``option`` (``variants`` without a tokenizer), kept for the
    process: a dataset's run and a live edit of the premise ask again for the same options."""
    t = variants(option)
    return tuple(zip(t["variant"], t["rule"]))


@functools.lru_cache(maxsize=1024)
def _table(option: str) -> pd.DataFrame:
    """The variants of a checked option (a function of its text alone, kept: ``variants`` hands out copies)."""
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
    # after a leading space or an article the option continues a sentence, so a capital is the word's own and stays
    # in every variant (" European" -> " a European"); at the very start of an option ("Knives") it is the
    # sentence's, not the noun's ("A knife", not "A Knife")
    keep = _own_case(core.split(" ")[0], bool(lead or article))
    if not article and not keep:
        core = _set_case(core, False)
    number, phrases = _number_forms(core, article)
    orig = {"article": article or "none", "number": number, "capitalised": capitalised, "period": period,
            "leading_space": bool(lead)}
    rows = [{"variant": option, "rule": "original", "n_changes": 0, "_order": (-1, ()), **orig}]
    for art, num, cap, per, space in product(("none", "a/an", "the"), ("singular", "plural"), (False, True),
                                            (False, True), (False, True)):
        if num not in phrases or (art == "a/an" and num == "plural"):
            continue
        phrase = phrases[num]
        word = indefinite_article(phrase) if art == "a/an" else art
        s = f"{word} {phrase}" if art != "none" else phrase
        if art != "none" or not keep:
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
    return pd.DataFrame(rows).drop(columns="_order").drop_duplicates("variant").reset_index(drop=True)
