"""The fewest prompt tokens a vLLM server with whole-block prefix caching computes for ``bench_server``'s 5-shot MMLU
requests, when surfacelab's token route sends them (``vllm_tokens.cache_order``), from the requests alone: no server.

Each request is expected to find in the cache the whole blocks it shares with the request it waits for; a hit that
ends exactly where two options part, at or past the context's end, sends the request whole (the first continuation
row is neither computed nor shared); every other request computes its prompt past its hit. Printed per block size,
with what each kind of request costs, beside the tokens lm-eval's client sends (every prompt whole) and the token
trie's count (every distinct prefix computed once: no block granularity at all).

    .venv/bin/python benchmarks/server_floor.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import mmlu5_requests  # noqa: E402


#: Context tokens of a domain-premise request ("Answer:") are fewer than this; those of the 5-shot prompts, far more.
DOMAIN_TOKENS = 8


def floor(seqs: list[tuple[int, ...]], starts: list[int], block: int) -> dict[str, list[int]]:
    """Per kind of request, at cache blocks of ``block`` tokens: requests, prompt tokens computed, and those computed
    where a hit past the context's end sends the request whole (as before its rows were shared)."""
    from surfacelab.backends.vllm_tokens import cache_order

    order, _, whole, hits = cache_order(seqs, starts, block)
    kinds: dict[str, list[int]] = {}
    for k, i in enumerate(order):
        if starts[i] < DOMAIN_TOKENS:
            kind = "the domain premise's (Answer: + option, no shared block)"
        elif whole[k]:
            kind = "sent whole: the hit ends where two options part"
        elif hits[k] == 0:
            kind = "no hit (a subject's first question)"
        elif hits[k] >= starts[i]:
            kind = "hit past the context's end (its rows shared)"
        else:
            kind = "hit within the context"
        got = kinds.setdefault(kind, [0, 0, 0])
        got[0] += 1
        got[1] += len(seqs[i]) - hits[k]
        got[2] += len(seqs[i]) if hits[k] >= starts[i] else len(seqs[i]) - hits[k]
    return kinds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mmlu-subjects", type=int, default=4)
    ap.add_argument("--mmlu-questions", type=int, default=5)
    ap.add_argument("--lm-eval-tokens", type=int, default=42320,
                    help="prompt tokens lm-eval's client made the server compute (results_server.md)")
    args = ap.parse_args()
    from surfacelab import text
    from surfacelab.backends.packing import unique_prefix_tokens
    from surfacelab.models import load_lm

    lm = load_lm("smollm2-135m")
    encoded = {}
    for context, option in mmlu5_requests(args.mmlu_subjects, args.mmlu_questions):
        e = text.encode(lm, context, option)
        encoded[tuple(e.input_ids)] = e.start
    seqs, starts = list(encoded), list(encoded.values())
    print(f"{len(seqs)} distinct requests, {sum(map(len, seqs)):,} prompt tokens; lm-eval's client: "
          f"{args.lm_eval_tokens:,} computed; every distinct prefix once (token trie): {unique_prefix_tokens(seqs):,} "
          f"({unique_prefix_tokens(seqs) / args.lm_eval_tokens:.3f}x)")
    for block in (16, 32, 128):
        kinds = floor(seqs, starts, block)
        total, before = sum(v[1] for v in kinds.values()), sum(v[2] for v in kinds.values())
        print(f"\nblock {block}: {total:,} computed ({total / args.lm_eval_tokens:.3f}x lm-eval's); "
              f"{before:,} ({before / args.lm_eval_tokens:.3f}x) if a hit past the context's end sent it whole")
        for kind, (n, t, b) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
            print(f"  {kind}: {n} requests, {t:,} tokens" + (f" ({b:,} sent whole)" if b != t else ""))


if __name__ == "__main__":
    main()
