"""Run lighteval 0.13.0's own command line with no model hub: `python run_offline.py accelerate ...`.

lighteval builds its task registry by importing every bundled task module. One of them (`tasks/mt_bench/main.py`)
checks at import time that its judge model exists on the Hub with `HfApi().list_models(model_name=...)`, which
fails here twice over: huggingface_hub 2.x no longer takes `model_name` (TypeError) and there is no Hub (offline).
This replaces only `HfApi.list_models` with an offline hub listing (an iterator with nothing in it, which that check
accepts); the evaluation itself, the tasks, the model and everything lighteval writes are lighteval's own.
"""

import sys

from huggingface_hub import HfApi


def offline_list_models(self: HfApi, *args: object, **kwargs: object):
    """What an unreachable hub lists: nothing."""
    return iter(())


HfApi.list_models = offline_list_models

from lighteval.__main__ import app  # noqa: E402  (imported after the patch: its registry imports the tasks)

if __name__ == "__main__":
    sys.exit(app())
