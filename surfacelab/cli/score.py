"""``surfacelab score``: every scorer on the options of one premise.

Example::

    surfacelab score --premise "The man took a bath in the" --option " bathtub" --option " xylophone" --domain " the"

``--chat-template`` renders the premise and the domain premise alike as chat turns (an instruct model's own template,
or a Jinja file's), as lm-evaluation-harness's ``--apply_chat_template`` does; ``eval`` takes it too.
"""

from __future__ import annotations

import argparse
import re
import warnings
from typing import Any

from .. import text
from ..engine.requests import CUT_COLUMNS, EXTRA_CONDITIONS
from . import _checks, _output
from ..paths import write_atomic

#: the scorers a person reads first (the paper's four and lm-eval's acc_norm); --wide shows every column
DEFAULT_SCORERS = "lm,avg,per_char,unc,dcpmi"


def scorer_list(value: str) -> list[str]:
    """``--scorers``: comma-separated registered scorer names."""
    from ..scorers import check_scorers

    try:
        return check_scorers(value)
    except ValueError as err:  # "scorer: unknown scorer 'x'; known: ..." -> named after the option
        raise ValueError(f"--scorers: {str(err).split(': ', 1)[-1]}") from None


def _clip(text: str, most: int = 60) -> str:
    """A string as a literal, its middle left out past ``most`` characters (the full text is in --format json)."""
    if len(text) <= most:
        return repr(text)
    return f"{text[:most // 2]!r} … {text[-most // 2:]!r} ({len(text)} characters)"


def view(result: Any, scorers: list[str]) -> _output.TableSpec:
    """The option table of an ``MCResult``: option, tokens, the chosen scorers (best marked), and any truncation."""
    from ..scorers import get_scorer

    table = result.table
    columns, best = ["option", "n_tokens"], {}
    for name in scorers:
        col = get_scorer(name).column
        if table[col].notna().any():
            columns.append(col)
            best[col] = table[f"rank_{name}"] == 1
    cut = [c for cond, c in CUT_COLUMNS.items() if cond not in EXTRA_CONDITIONS]  # score reads no task's texts
    if table[cut].to_numpy().any():
        columns += cut
    headers = {"n_tokens": "tokens", "logprob": "lm", "avg_token": "avg", CUT_COLUMNS["domain"]: "dom. truncated"}
    return _output.TableSpec("options", table, columns, headers, best,
                        caption="* the best option under that scorer (log-probs in nats)", quoted=("option",))


def run(args: argparse.Namespace) -> int:
    """Run ``surfacelab score`` from parsed arguments; prints the results and returns the exit code."""
    scorers = scorer_list(args.scorers)
    if not args.option:
        raise ValueError("--option: required: repeat it for each option, e.g. --option ' bathtub' --option ' sink'")
    if len(args.option) < 2:
        raise ValueError(f"--option: give at least two (got one, {args.option[0]!r}): a winner and a margin need "
                         "two; repeat --option for each")
    text.check_options(args.option, "--option")
    _checks.machine(args.device)
    csv_path = _checks.output_file(args.csv, "--csv", ".csv")
    json_path = _checks.output_file(args.json, "--json", ".json")
    chat_template = _checks.chat_template(args)
    from ..scoring import score

    lm = _checks.causal_lm(args)
    with warnings.catch_warnings(record=True) as caught:  # truncation is reported in the explanation's first sentence
        warnings.simplefilter("always")
        with _checks.flags(_checks.CHAT_FLAGS):
            result = score(lm, args.premise, args.option, domain_premise=args.domain, chat_template=chat_template)
    printer = _output.Printer(args.format, args.wide)
    for w in caught:  # other warnings (an option glued to the premise, the cache) as notes, options counted from 1
        if "Truncated to fit" not in str(w.message):
            printer.note("note: " + re.sub(r"options\[(\d+)\]", lambda m: f"--option {int(m[1]) + 1}", str(w.message)))
    chat, typed = result.meta.get("chat_template"), result.meta.get("chat_user", {})  # typed: before the template
    premise, domain = typed.get("premise", result.premise), typed.get("domain_premise", result.domain_premise)
    printer.header([f"model {result.model}", f"premise {_clip(premise)}"]
                   + ([f"domain premise {_clip(domain)}"] if domain is not None else [])
                   + ([f"as chat turns (template sha256 {chat['sha'][:12]})"] if chat else []))
    printer.show([view(result, scorers)], extra={"model": result.model, "premise": result.premise,
                                                  "domain_premise": result.domain_premise,
                                                  **({"chat_template": chat, "chat_user": typed} if chat else {}),
                                                  "explanation": result.explain()})
    if args.format != "json":
        printer.note(result.explain())
    for path in (csv_path, json_path):
        if path is not None:
            printer.note(f"wrote {write_atomic(path, result.save)}")
    return 0


def add_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``score`` sub-command to an ``add_subparsers()`` object."""
    p = subparsers.add_parser("score", help="score options under a premise with every scorer", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--premise", required=True, help="the premise (context)")
    p.add_argument("--option", action="append", help="an option; repeat for each option (at least two)")
    p.add_argument("--domain", default=None, help="domain premise for Unc and DC-PMI")
    _checks.add_chat_arguments(p)
    p.add_argument("--scorers", default=DEFAULT_SCORERS,
                   help=f"comma-separated scorers to show (default: {DEFAULT_SCORERS}; --wide shows all)")
    p.add_argument("--model", default=None, help="preset, hub id or folder (default: smollm2-135m)")
    p.add_argument("--device", default=None, help="cuda, cuda:N, mps or cpu (default: auto)")
    p.add_argument("--server", default=None,
                   help="score on a vLLM server that serves --model, e.g. http://127.0.0.1:8000/v1 (its API key, if "
                        "any, from $SURFACELAB_API_KEY, sent only when $SURFACELAB_SERVER names this server)")
    p.add_argument("--served-model", default=None, help="the model's name on --server, if it serves several")
    p.add_argument("--csv", default=None, help="write the option table to this .csv file")
    p.add_argument("--json", default=None, help="write both frames (options and tokens) to this .json file")
    _output.add_arguments(p)
    p.set_defaults(func=run)
    return p
