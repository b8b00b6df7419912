"""Tests of surfacelab.variants: English number and articles (inflect) and the variant generator.

Every expected form below is written by hand from English usage, not read off the code.
"""

from __future__ import annotations

import pytest

from surfacelab import surface_forms
from test_paraphrase import lower_lm  # noqa: F401 - the fixture: a tokenizer that ignores case and spaces

# --- number and articles -----------------------------------------------------------------------

PLURALS = [
    ("box", "boxes"), ("city", "cities"), ("day", "days"), ("church", "churches"), ("quiz", "quizzes"),
    ("potato", "potatoes"), ("photo", "photos"), ("hero", "heroes"), ("toothbrush", "toothbrushes"),
    # irregular
    ("child", "children"), ("person", "people"), ("man", "men"), ("woman", "women"), ("tooth", "teeth"),
    ("mouse", "mice"), ("goose", "geese"), ("ox", "oxen"), ("knife", "knives"), ("leaf", "leaves"),
    # Latin and Greek
    ("criterion", "criteria"), ("phenomenon", "phenomena"), ("analysis", "analyses"), ("crisis", "crises"),
    ("basis", "bases"), ("glass", "glasses"), ("bus", "buses"),
    # compound nouns: the head takes the number
    ("bath tub", "bath tubs"), ("piece of cake", "pieces of cake"), ("mother-in-law", "mothers-in-law"),
    ("attorney general", "attorneys general"), ("FBI agent", "FBI agents"),
    # capitalised at the start of a sentence, not a name
    ("University", "Universities"), ("Knife", "Knives"), ("Child", "Children"),
]

#: plurals that are the singular spelled another way (Latin, Greek, irregular)
SINGULARS = [
    ("criteria", "criterion"), ("cacti", "cactus"), ("analyses", "analysis"), ("glasses", "glass"),
    ("crises", "crisis"), ("phenomena", "phenomenon"), ("indices", "index"), ("matrices", "matrix"),
    ("mice", "mouse"), ("children", "child"), ("people", "person"), ("knives", "knife"), ("teeth", "tooth"),
    ("hours", "hour"), ("bathtubs", "bathtub"), ("boxes", "box"), ("cities", "city"),
    ("pieces of cake", "piece of cake"), ("mothers-in-law", "mother-in-law"), ("FBI agents", "FBI agent"),
    ("Knives", "Knife"), ("Bath tubs", "Bath tub"),
]

INVARIANT = ["sheep", "deer", "fish", "aircraft", "news", "species", "series"]

#: singular words that end like plurals
NOT_PLURAL = ["analysis", "cactus", "bus", "basis", "axis", "lens", "glass", "octopus", "piece of cake",
              "attorney general"]

ARTICLES = [
    ("hour", "an"), ("honest man", "an"), ("heir", "an"), ("university", "a"), ("unicorn", "a"),
    ("European", "a"), ("one-way street", "a"), ("user", "a"), ("FBI agent", "an"), ("MRI", "an"),
    ("X-ray", "an"), ("UFO", "a"), ("apple", "an"), ("umbrella", "an"), ("bathtub", "a"), ("Hour", "an"),
]


@pytest.mark.parametrize("one, many", PLURALS)
def test_plural(one, many):
    assert surface_forms.plural(one) == many


@pytest.mark.parametrize("many, one", SINGULARS)
def test_singular(many, one):
    assert surface_forms.singular(many) == one


@pytest.mark.parametrize("word", INVARIANT)
def test_invariant_nouns_have_one_form(word):
    assert surface_forms.plural(word) == word
    assert surface_forms.singular(word) is None


@pytest.mark.parametrize("word", NOT_PLURAL)
def test_singular_words_ending_like_plurals_are_not_plurals(word):
    assert surface_forms.singular(word) is None


@pytest.mark.parametrize("phrase, article", ARTICLES)
def test_indefinite_article_by_sound(phrase, article):
    assert surface_forms.indefinite_article(phrase) == article


def test_inflection_bad_input():
    with pytest.raises(TypeError, match="phrase"):
        surface_forms.plural(3)
    with pytest.raises(ValueError, match="phrase"):
        surface_forms.singular("")


# --- the variant generator ---------------------------------------------------------------------

def _forms(option: str) -> set[str]:
    return set(surface_forms.variants(option)["variant"])


def test_variants_cover_the_rules():
    v = surface_forms.variants(" bathtub")
    got = set(v["variant"])
    for expected in (" bathtub", " a bathtub", " the bathtub", "bathtub", " Bathtub", " bathtubs", " the bathtubs",
                     " bathtub.", " A bathtub", "The bathtubs."):
        assert expected in got
    assert " a bathtubs" not in got and " an bathtub" not in got
    assert v.loc[0, "variant"] == " bathtub" and v.loc[0, "rule"] == "original"
    assert (v["n_changes"].diff().dropna() >= 0).all()
    plural = _forms(" the boxes.")
    assert " the box." in plural and " a box." in plural


@pytest.mark.parametrize("option, present, absent", [
    (" an hour", [" an hour", " hours", " the hours", " An hour."], [" a hour", " an hours"]),
    (" university", [" a university", " universities", "A university."], [" an university"]),
    (" unicorn", [" a unicorn"], [" an unicorn"]),
    ("FBI agent", ["an FBI agent", "An FBI agent", "FBI agents", "the FBI agents"], ["a FBI agent", "fBI agent"]),
    (" criteria", [" a criterion", " the criterion", " the criteria"], [" criterias", " a criteria"]),
    (" cacti", [" a cactus", " cactus", " the cacti"], [" cactis", " a cacti"]),
    (" analyses", [" an analysis", " the analyses"], [" analysess", " an analyses"]),
    (" glasses", [" a glass", " the glasses", " glass"], [" glasseses", " a glasses"]),
    (" news", [" the news", " News"], [" new", " a new", " newses"]),
    (" sheep", [" a sheep", " the sheep"], [" sheeps"]),
    (" a piece of cake", [" pieces of cake", " the pieces of cake", " A piece of cake."], [" piece of cakes"]),
    (" mother-in-law", [" a mother-in-law", " mothers-in-law"], [" mother-in-laws"]),
    (" bath tub", [" a bath tub", " bath tubs"], [" baths tub"]),
    ("Knives", ["A knife", "The knife", "Knife", "knives", "The knives."], ["A Knife", "Knifes"]),
    ("University", ["A university", "Universities", "The universities"], ["Universitys", "An university"]),
    (" The Glasses.", [" The Glass.", " Glasses.", " A Glass."], [" The Glasseses."]),
])
def test_variants_hard_cases(option, present, absent):
    got = _forms(option)
    assert set(present) <= got, sorted(set(present) - got)
    assert not set(absent) & got, sorted(set(absent) & got)


def test_variants_number_column():
    v = surface_forms.variants(" criteria").set_index("variant")
    assert v.loc[" criteria", "number"] == "plural" and v.loc[" criterion", "number"] == "singular"
    assert v.loc[" criterion", "rule"] == "singular"
    assert set(surface_forms.variants(" news")["number"]) == {"singular"}  # no second number for an invariant noun


def test_variants_drop_identical_strings():
    v = surface_forms.variants(" sheep")  # invariant: the plural is the same string
    assert v["variant"].is_unique
    assert (v["variant"] == " sheep").sum() == 1


def test_variants_drop_tokenizer_identical_strings(lower_lm):  # noqa: F811 - the imported fixture
    plain = surface_forms.variants(" bathtub")
    dedup = surface_forms.variants(" bathtub", lm=lower_lm)
    ids = {v: tuple(lower_lm.tokenizer(v, add_special_tokens=False)["input_ids"]) for v in plain["variant"]}
    assert len(set(ids.values())) == len(dedup) < len(plain)
    assert dedup["token_ids"].map(tuple).is_unique
    for _, row in dedup.iterrows():
        assert tuple(row["token_ids"]) == ids[row["variant"]]
        assert row["n_tokens"] == len(ids[row["variant"]])
    assert dedup.loc[0, "variant"] == " bathtub"  # the original is kept over " Bathtub", "bathtub", ...


def test_variants_bad_input():
    with pytest.raises(TypeError, match="option"):
        surface_forms.variants(3)
    with pytest.raises(ValueError, match="option"):
        surface_forms.variants("")
    with pytest.raises(ValueError, match="option"):
        surface_forms.variants("   ")


# --- proper nouns, proper adjectives and acronyms keep their case --------------------------------
#: held-out words: none of them is special-cased in the code
PROPER = [" American", " Paris", " Einstein", " English", " European", " Tuesday", " Shakespeare", " Londoner"]
ACRONYMS = [" NASA", " FBI", " URL", " UNESCO", " DVD", " MBA", " CEO", " PDF"]


def _words(option: str) -> list[str]:
    return [w.rstrip(".") for w in option.split()]


@pytest.mark.parametrize("option", PROPER + [" iPhone", " eBay"] + ACRONYMS)
def test_a_word_with_its_own_capitals_keeps_them_in_every_variant(option):
    word = option.strip()
    for v in _forms(option):
        noun = _words(v)[-1]
        assert noun[:1] == word[:1], v  # never lower-cased (" european") nor upper-cased (" IPhone")
        assert noun[1:len(word) - 1] == word[1:-1], v  # the rest of the word as written (only a plural's end changes)


@pytest.mark.parametrize("option", ACRONYMS)
def test_an_acronym_plural_adds_a_lower_case_s(option):
    word = option.strip()
    forms = _forms(option)
    assert f" {word}s" in forms and f" the {word}s" in forms
    assert not [v for v in forms if _words(v)[-1] not in (word, word + "s")]  # no "MBAS", "UNESCOES"
    assert surface_forms.plural(word) == word + "s" and surface_forms.singular(word + "s") == word
    assert surface_forms.singular(word) is None  # an acronym is singular
    article = surface_forms.indefinite_article(word)  # by sound (ACRONYM_ARTICLES below holds the list)
    assert f" {article} {word}" in forms and f" {'a' if article == 'an' else 'an'} {word}" not in forms


def test_articles_before_acronyms_and_proper_words_go_by_sound():
    assert " an MBA" in _forms(" MBA") and " an FBI" in _forms(" FBI") and " a NASA" in _forms(" NASA")
    assert " a European" in _forms(" European") and " an American" in _forms(" American")


def test_a_capital_at_the_very_start_of_an_option_is_still_the_sentences():
    assert "A knife" in _forms("Knives") and " a European" in _forms(" European")
    assert "a european" in _forms("European")  # no leading space: read like "Knives" (a sentence's first word)


# --- the article of an acronym: how its first letter or syllable is said ---------------------------
#: The article a careful writer puts before each, written by hand from how the word is said: letter by letter, the
#: letters A E F H I L M N O R S X have names that start with a vowel sound ("ef", "aitch", "el", "em", "en", "ar",
#: "ess", "ex"), the others do not ("bee", "you", "double-u"); said as a word, the word's own first sound counts.
SPELLED_AN = ["FBI agent", "LED", "SOS", "MRI", "HTML page", "F1 car", "MP3", "NGO", "HIV test", "RSVP", "SUV",
              "LCD screen", "MBA", "NBA team", "XML file", "HR manager", "LLM", "NSAID", "HVAC system", "NCAA title",
              "NAACP chapter", "HTTP request", "ATM", "IOU", "EU law", "API", "OCR engine", "H1N1 outbreak",
              "RV", "X-ray", "S-bend", "MSc", "NHS hospital", "SSD"]
SPELLED_A = ["URL", "UFO", "BBC reporter", "USB stick", "CEO", "DVD", "GPS", "PDF", "TV", "VIP", "YMCA", "UK firm",
             "JPEG", "B12 shot", "U-turn", "T-shirt", "UN resolution", "WHO report", "K9 unit", "CD"]
SAID_A = ["NASA engineer", "NATO summit", "UEFA ruling", "UNESCO site", "FIFA official", "UNICEF report", "LASER",
          "RADAR", "SCUBA diver", "SWAT team", "STEM degree", "SARS outbreak", "NAFTA clause", "HIPAA form",
          "HEPA filter", "FEMA trailer", "NIST standard", "RAM chip", "LAN party", "SIM card", "MIDI file",
          "MADD chapter", "NORAD alert", "FOIA request", "LASIK surgeon", "NIMBY", "SMART goal", "RAID array"]
SAID_AN = ["OPEC member", "AIDS patient", "IKEA store", "OSHA rule", "ASCII table", "ANOVA", "EFTA member"]
ACRONYM_ARTICLES = ([(w, "an") for w in SPELLED_AN + SAID_AN] + [(w, "a") for w in SPELLED_A + SAID_A])


def test_the_acronym_list_covers_both_readings_and_every_kind_of_first_letter():
    assert len(ACRONYM_ARTICLES) >= 40
    first = {w[0] for w, _ in ACRONYM_ARTICLES}
    assert set("FHLMNRSX") <= {w[0] for w in SPELLED_AN} and set("FHLMNRS") <= {w[0] for w in SAID_A}
    assert set("AEIO") <= first and "U" in first and set("BCDGJKPTVWY") <= first


@pytest.mark.parametrize("phrase, article", ACRONYM_ARTICLES)
def test_an_acronym_takes_the_article_of_its_sound(phrase, article):
    assert surface_forms.indefinite_article(phrase) == article


@pytest.mark.parametrize("option, present, absent", [
    (" an FBI agent", [" an FBI agent", " An FBI agent."], [" a FBI agent", " A FBI agent"]),
    (" a URL", [" a URL", " A URL."], [" an URL", " An URL"]),
    (" an SOS", [" an SOS"], [" a SOS"]),
    (" LED", [" an LED", " the LEDs"], [" a LED"]),
    (" F1 car", [" an F1 car"], [" a F1 car"]),
    (" UEFA ruling", [" a UEFA ruling"], [" an UEFA ruling"]),
    (" NASA engineer", [" a NASA engineer"], [" an NASA engineer"]),
])
def test_the_variants_propose_the_article_of_the_acronyms_sound(option, present, absent):
    got = _forms(option)
    assert set(present) <= got, sorted(set(present) - got)
    assert not set(absent) & got, sorted(set(absent) & got)
