"""Option-ID scoring: letter priors, contextual calibration, permutation debiasing and PriDe.

A question is rendered with its options labelled by IDs (A/B/C/D..., or 1/2/3...) and an answer
cue ("Answer:", never followed by a space). The model's answer is read from the next-token
distribution at the cue:

* **Observed.** For each ID the probabilities of its two variants, " A" and "A", are summed
  (PriDe's rule), then renormalised over the IDs. Variants that are one token after the cue come
  from a single forward pass (``engine.next_token_logprobs``); a variant that spans several tokens
  (" 10" for most tokenizers) is scored as a continuation by ``engine.logprobs``.
* **Content-free prior and calibration** (Zhao et al. 2021). The same prompt with the question
  replaced by "N/A", "" and "[MASK]" (options kept); the three ID distributions are averaged into
  ``p_cf`` and the calibrated distribution is ``normalise(p / p_cf)``, i.e. W = diag(p_cf)^-1.
* **Domain-context calibration** (Fei et al. 2023). As contextual calibration, with the question replaced by
  ``domain_samples`` (20) texts of words drawn at random from the run's own questions, each as long as their mean.
* **Batch Calibration** (Zhou et al. 2024). The prior is the mean observed ID distribution of the run's items with
  as many options (label-free, no content-free input, no extra forward); it is divided out as in calibration.
* **Permutation debiasing** (Zheng et al. 2024, PriDe, section 3.1). The options are shown under
  several orders (cyclic: n forwards; full: n! forwards); the debiased probability of an option is
  the geometric mean of its observed probabilities over the orders (each read at the ID it was
  shown under), renormalised. The same forwards give the sample's ID prior: the geometric mean of
  the observed probability of each ID over the orders, renormalised.
* **PriDe.** The prior is estimated on a seeded fraction ``alpha`` of the items with cyclic
  permutations (the per-sample priors are averaged as probabilities, as the public code does);
  every other item is debiased with one forward: ``argmax(log p - log prior)``. Estimation items
  keep their cyclic-permutation prediction. Cost = forwards per item.
* **RStd**: the population standard deviation (numpy's default, as in the PriDe code) of the
  per-gold-ID recalls, x100, over the IDs that occur as gold answers.

Probabilities are handled as float64 log-probabilities; the model's log-softmax runs in float32
inside the engine.

Modules: ``prompts`` (templates, items, IDs, option orders), ``reading`` (IDs read at the cue), ``question`` (one
question: :func:`score`), ``methods`` (the method registry), ``evaluation`` (a dataset: :func:`evaluate`), ``math``.
"""

from .evaluation import LetterEval, evaluate
from .math import (batch_prior, calibrate, cyclic_permutations, full_permutations, normalise, permutation_debias,
                   pride_debias, rstd)
from .methods import METHODS, LetterMethod, LetterRun, Prediction, register_method
from .prompts import (CONTENT_FREE, DOMAIN_SAMPLES, PLAIN, PRIDE, TEMPLATES, LetterItem, LetterTemplate, as_items,
                      domain_texts, drop_cross_references, move_gold, refers_to_other_options, register_letter_template,
                      stratified_sample)
from .question import LetterResult, score
from .reading import id_variants

__all__ = [
    "CONTENT_FREE",
    "DOMAIN_SAMPLES",
    "METHODS",
    "PLAIN",
    "PRIDE",
    "TEMPLATES",
    "as_items",
    "batch_prior",
    "calibrate",
    "cyclic_permutations",
    "domain_texts",
    "drop_cross_references",
    "evaluate",
    "full_permutations",
    "id_variants",
    "LetterEval",
    "LetterItem",
    "LetterMethod",
    "LetterResult",
    "LetterRun",
    "LetterTemplate",
    "move_gold",
    "normalise",
    "permutation_debias",
    "Prediction",
    "pride_debias",
    "refers_to_other_options",
    "register_letter_template",
    "register_method",
    "rstd",
    "score",
    "stratified_sample",
]
