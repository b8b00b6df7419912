"""Each loader on its real file: row count, the exact rendered strings of a known item, gold index.

Expected strings are written by hand from the raw JSON line and the paper's data_loaders.py.
"""

from __future__ import annotations

import pytest

import surfacelab.tasks as tasks

#: tasks whose files surfacelab does not ship (their licences do not allow it)
UNSHIPPED = tuple(name for name, spec in tasks.SPECS.items() if spec.obtain)

COUNTS = [
    ("copa", "dev", 500), ("copa", "val", 100), ("copa-flipped", "dev", 500), ("copa-flipped", "val", 100),
    ("storycloze", "val", 1871), ("storycloze", "test", 1871),
    ("arc-challenge", "test", 1172), ("arc-challenge", "pride_test", 1165),
    ("openbookqa", "test", 500), ("commonsenseqa", "dev", 1221), ("commonsenseqa", "pride_test", 1216),
    ("boolq", "dev", 3270), ("rte", "dev", 277), ("cb", "dev", 56),
    ("sst-2", "dev", 872), ("sst-2", "test", 1821), ("sst-5", "dev", 1101), ("sst-5", "test", 2210),
    ("ag_news", "test", 7600), ("trec", "test", 500), ("mmlu", "test", 14042), ("mmlu", "dev", 285),
]


@pytest.mark.parametrize("name,split,n", COUNTS)
def test_row_count_and_gold_valid(request, name, split, n):
    root = request.getfixturevalue("unshipped_root" if name in UNSHIPPED else "data_root")
    task = tasks.load(name, split, source=root)
    assert len(task) == n
    assert task.name == name and task.split == split
    for it in task:
        assert 0 <= it.gold < len(it.options)
        assert it.meta["raw"] and it.meta["fields"]


def test_default_source_is_the_shipped_data(monkeypatch):
    monkeypatch.delenv("SURFACELAB_DATA", raising=False)
    task = tasks.load("copa", "val")
    assert task.source == str(tasks.DATA_DIR / "copa" / "val.jsonl")
    assert len(task) == 100


def test_surfacelab_data_overrides_the_shipped_data(tmp_path, monkeypatch):
    (tmp_path / "copa").mkdir()
    (tmp_path / "copa" / "val.jsonl").write_bytes((tasks.DATA_DIR / "copa" / "val.jsonl").read_bytes()[:2000]
                                                  .rsplit(b"\n", 1)[0] + b"\n")
    monkeypatch.setenv("SURFACELAB_DATA", str(tmp_path))
    task = tasks.load("copa", "val")
    assert task.source == str(tmp_path / "copa" / "val.jsonl") and 0 < len(task) < 100


@pytest.mark.parametrize("name", UNSHIPPED)
def test_an_unshipped_task_says_where_to_get_it(name, monkeypatch):
    monkeypatch.delenv("SURFACELAB_DATA", raising=False)
    with pytest.raises(FileNotFoundError) as exc:
        tasks.load(name)
    msg = str(exc.value)
    assert UNSHIPPED == ("storycloze", "ag_news")
    assert "not shipped" in msg and "SURFACELAB_DATA" in msg and "source=" in msg
    assert ("request form" in msg) if name == "storycloze" else ("non-commercial" in msg and "Title" in msg)


def test_every_shipped_task_has_its_files_and_provenance():
    for spec in tasks.SPECS.values():
        if spec.shipped:
            folder = tasks.DATA_DIR / spec.folder
            assert (folder / "PROVENANCE.md").is_file(), spec.name
            assert all((folder / f"{split}.jsonl").is_file() for split in spec.splits), spec.name
        else:
            assert not (tasks.DATA_DIR / spec.folder).exists(), f"{spec.name} is not to be shipped"


def test_default_splits(data_root):
    assert tasks.load("copa", source=data_root).split == "dev"  # the paper's 500-item dev
    assert tasks.load("sst-2", source=data_root).split == "test"


def test_storycloze_default_split(unshipped_root):
    assert tasks.load("storycloze", source=unshipped_root).split == "test"


def test_copa_dev_cause(data_root, by_line):
    it = by_line(tasks.load("copa", "dev", source=data_root), 1)
    # {"premise": "My body cast a shadow over the grass.", "choice1": "The sun was rising.",
    #  "choice2": "The grass was cut.", "question": "cause", "label": 0}
    assert it.premise == " My body cast a shadow over the grass because"
    assert it.options == [" the sun was rising.", " the grass was cut."]
    assert it.domain_premise == " because"
    assert it.gold == 0
    assert it.id == "1"
    assert it.meta["question"] == "cause"


def test_copa_val_effect(data_root, by_line):
    it = by_line(tasks.load("copa", "val", source=data_root), 1)
    assert it.premise == " The man turned on the faucet so"
    assert it.options == [" the toilet filled with water.", " water flowed from the spout."]
    assert it.domain_premise == " so"
    assert it.gold == 1
    assert it.requests() == [(" The man turned on the faucet so", " the toilet filled with water."),
                             (" The man turned on the faucet so", " water flowed from the spout.")]


def test_copa_flipped(data_root, by_line):
    task = tasks.load("copa-flipped", "val", source=data_root)
    it = by_line(task, 1)  # effect question -> reversed bridge ' because'
    assert it.premise_per_option == [" the toilet filled with water because", " water flowed from the spout because"]
    assert it.options == [" the man turned on the faucet.", " the man turned on the faucet."]
    assert it.domain_premise == " because"
    assert it.gold == 1
    assert it.requests() == [(" the toilet filled with water because", " the man turned on the faucet."),
                             (" water flowed from the spout because", " the man turned on the faucet.")]
    assert it.domain_requests() == [(" because", " the man turned on the faucet.")] * 2
    cause = by_line(tasks.load("copa-flipped", "dev", source=data_root), 1)  # cause -> ' so'
    assert cause.premise_per_option == [" the sun was rising so", " the grass was cut so"]
    assert cause.options[0] == " my body cast a shadow over the grass."
    assert "premise_per_option" in task.frame().columns


def test_storycloze(unshipped_root, by_line):
    it = by_line(tasks.load("storycloze", "val", source=unshipped_root), 1)
    assert it.premise == ("Rick grew up in a troubled household. He never found good support in family, and "
                          "turned to gangs. It wasn't long before Rick got shot in a robbery. The incident caused "
                          "him to turn a new leaf.")
    assert it.options == [" He is happy now.", " He joined a gang."]
    assert it.domain_premise == " The story continues:"
    assert it.gold == 0
    assert it.id == "138d5bfb-05cc-41e3-bf2c-fa85ebad14e2"
    # a story whose last sentence ends in a quote mark gets a '.' appended (the code's default end)
    q = by_line(tasks.load("storycloze", "test", source=unshipped_root), 132)
    assert q.premise.endswith('The cookie said "Happy Valentine\'s Day.".')
    assert q.gold == 1


def test_arc_challenge(data_root, by_line):
    task = tasks.load("arc-challenge", "test", source=data_root)
    it = by_line(task, 1)
    assert it.premise == ("An astronomer observes that a planet rotates faster after a meteorite impact. "
                          "Which is the most likely effect of this increase in rotation?")
    assert it.options == [" Planetary density will decrease.", " Planetary years will become longer.",
                          " Planetary days will become shorter.", " Planetary gravity will become stronger."]
    assert it.domain_premise == " the answer is:"
    assert it.gold == 2
    numeric = by_line(task, 45)  # labels '1'..'4', answerKey '2'
    assert numeric.gold == 1
    assert numeric.options[1] == " Kinetic energy increases and potential energy decreases."
    five = by_line(task, 837)
    assert len(five.options) == 5 and five.gold == 3
    pride = by_line(tasks.load("arc-challenge", "pride_test", source=data_root), 1)
    assert pride.premise == it.premise and pride.options == it.options and pride.gold == 2


def test_openbookqa(data_root, by_line):
    it = by_line(tasks.load("openbookqa", "test", source=data_root), 1)
    assert it.premise == ("A person wants to start saving money so that they can afford a nice vacation at the end "
                          "of the year. After looking over their budget and expenses, they decide the best way to "
                          "save money is to")
    assert it.options == [" make more phone calls", " quit eating lunch out", " buy less with monopoly money",
                          " have lunch with friends"]
    assert it.domain_premise == " the answer is:"
    assert it.gold == 1
    assert it.id == "8-343"


def test_commonsenseqa(data_root, by_line):
    task = tasks.load("commonsenseqa", "dev", source=data_root)
    it = by_line(task, 1)
    assert it.premise == (" A revolving door is convenient for two direction travel, but it also serves as a "
                          "security measure at a what? the answer is:")
    assert it.options == [' "bank"', ' "library"', ' "department store"', ' "mall"', ' "new york"']
    assert it.domain_premise == " the answer is:"
    assert it.gold == 0
    # a stem with no final punctuation keeps its last character and still gets '?'
    nopunct = by_line(task, 103)
    assert nopunct.premise == (" When learning about the world and different cultures, what is important if you are "
                               "committed to eliminating preconceived notions? the answer is:")
    assert nopunct.gold == 3
    pride = by_line(tasks.load("commonsenseqa", "pride_test", source=data_root), 1)
    assert pride.premise == " Where is knight always portrayed as a hero? the answer is:"
    assert pride.options[3] == ' "fairy tale"' and pride.gold == 3


def test_boolq(data_root, by_line):
    task = tasks.load("boolq", "dev", source=data_root)
    it = by_line(task, 1)  # gold 0 in the file = answer False -> ' no' (index 1)
    assert it.premise == " question: Does ethanol take more energy make that produces?\n answer:"
    assert it.options == [" yes", " no"]
    assert it.domain_premise == "\n answer:"
    assert it.gold == 1
    i_q = by_line(task, 232)  # 'is i can only imagine based on a true story' , answer True
    assert i_q.premise == " question: Is I can only imagine based on a true story?\n answer:"
    assert i_q.gold == 0


def test_boolq_with_title_renders_code_template(tmp_path):
    f = tmp_path / "boolq.jsonl"
    f.write_text('{"question": "is the sky blue", "title": "Sky", "passage": "p", "answer": true}\n')
    it = tasks.load("boolq", "dev", source=f)[0]
    assert it.premise == " title: Sky\n question: Is the sky blue?\n answer:"
    assert it.gold == 0


def test_rte(data_root, by_line):
    it = by_line(tasks.load("rte", "dev", source=data_root), 2)
    assert it.premise == (" Yet, we now are discovering that antibiotics are losing their effectiveness against "
                          "illness. Disease-causing bacteria are mutating faster than we can come up with new "
                          "antibiotics to fight the new variations.\n question: Bacteria is winning the war against "
                          "antibiotics. true or false?\n answer:")
    assert it.options == [" true", " false"]
    assert it.domain_premise == " true or false?\n answer:"
    assert it.gold == 0


def test_cb(data_root, by_line):
    it = by_line(tasks.load("cb", "dev", source=data_root), 1)
    assert it.premise == (' question: Given that "Valence the void-brain, Valence the virtuous valet. Why couldn\'t '
                          'the figger choose his own portion of titanic anatomy to shaft? Did he think he was '
                          'helping?" Is "Valence was helping" true, false, or neither?\n answer:')
    assert it.options == [" true", " false", " neither"]
    assert it.domain_premise == " the answer is:"
    assert it.gold == 1  # contradiction


def test_sst2(data_root, by_line):
    it = by_line(tasks.load("sst-2", "dev", source=data_root), 1)
    assert it.premise == "It 's a lovely film with lovely performances by Buy and Accorsi .:"
    assert it.options == [" negative\n", " positive\n"]
    assert it.domain_premise == " The quote has a tone that is"
    assert it.gold == 1


def test_sst5(data_root, by_line):
    it = by_line(tasks.load("sst-5", "dev", source=data_root), 1)
    assert it.premise == '"It \'s a lovely film with lovely performances by Buy and Accorsi ." has a tone that is'
    assert it.options == [" very negative.<|endoftext|>", " somewhat negative.<|endoftext|>",
                          " neutral.<|endoftext|>", " somewhat positive.<|endoftext|>",
                          " very positive.<|endoftext|>"]
    assert it.domain_premise == " The quote has a tone that is"
    assert it.gold == 3  # label 4 of 1..5


def test_ag_news(unshipped_root, by_line):
    it = by_line(tasks.load("ag_news", "test", source=unshipped_root), 1)
    assert it.premise == (" title: Fears for T N pension after talks\n summary: Unions representing workers at "
                          "Turner   Newall say they are 'disappointed' after talks with stricken parent firm "
                          "Federal Mogul.\n topic:")
    assert it.options == [" world", " sports", " business", " science"]
    assert it.domain_premise == "\n topic:"
    assert it.gold == 2
    table = by_line(tasks.load("ag_news", "test", source=unshipped_root, variant="paper_table"), 1)
    assert table.domain_premise == " topic:"


def test_trec(data_root, by_line):
    task = tasks.load("trec", "test", source=data_root)
    it = by_line(task, 1)
    assert it.premise == " How far is it from Denver to Aspen? The answer to this question will be"
    assert it.options == [" a description.", " an entity.", " a location.", " a number.", " an abbreviation.",
                          " a person."]
    assert it.domain_premise == " The answer to this question will be"
    assert it.gold == 3
    quoted = by_line(task, 53)  # "Which comedian 's signature line is `` Can we talk '' ?"
    assert quoted.premise == ' Which comedian\'s signature line is "Can we talk"? The answer to this question will be'
    assert quoted.gold == 5


def test_mmlu(data_root, by_line):
    task = tasks.load("mmlu", "test", source=data_root)
    it = by_line(task, 1)
    assert it.premise == "Find the degree for the given field extension Q(sqrt(2), sqrt(3), sqrt(18)) over Q."
    assert it.options == [" 0", " 4", " 2", " 6"]
    assert it.domain_premise == " the answer is:"
    assert it.gold == 1
    assert it.meta["subject"] == "abstract_algebra"
    assert "subject" in task.frame().columns
    assert task.frame()["subject"].nunique() == 57


def test_paper_table_variant(data_root, by_line):
    assert by_line(tasks.load("rte", "dev", source=data_root, variant="paper_table"), 2).domain_premise == \
        " true or false? answer:"
    assert by_line(tasks.load("boolq", "dev", source=data_root, variant="paper_table"), 1).domain_premise == " answer:"
    # where code and table agree the variant changes nothing
    a = by_line(tasks.load("copa", "val", source=data_root, variant="paper_table"), 1)
    assert a.domain_premise == " so"


def test_frame_columns(data_root):
    df = tasks.load("copa", "val", source=data_root).frame()
    assert list(df.columns[:7]) == ["id", "premise", "options", "n_options", "gold", "gold_option", "domain_premise"]
    assert len(df) == 100
    assert (df["gold_option"] == df.apply(lambda r: r["options"][r["gold"]], axis=1)).all()


def test_list_tasks():
    df = tasks.list_tasks()
    names = set(df["task"])
    assert {"copa", "copa-flipped", "storycloze", "arc-challenge", "arc-easy", "openbookqa", "commonsenseqa",
            "boolq", "rte", "cb", "sst-2", "sst-5", "ag_news", "trec", "mmlu", "hellaswag", "race-m",
            "race-h"} <= names
    row = df.set_index("task").loc["rte"]
    assert row["domain_premise"] == " true or false?\n answer:"
    assert row["default_split"] == "dev" and row["n_options"] == 2
    assert not df.set_index("task").loc["hellaswag", "shipped"]
