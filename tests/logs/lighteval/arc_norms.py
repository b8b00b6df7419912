"""A lighteval custom task: lighteval 0.13's own `arc:challenge` (same prompt function, dataset and splits) scored
with the log-likelihood normalisations lighteval 0.13.0 can compute on this backend, so that one details file holds
acc and acc_norm (sum / characters of the choice) side by side. Load with
`--custom-tasks tests/logs/lighteval/arc_norms.py`.

Left out because lighteval 0.13.0 stops the run on them (transformers backend, CPU):
- PMI (`LogProbPMINorm`): no model backend issues the unconditioned requests (nothing reads
  `Doc.unconditioned_query`): "AssertionError: unconditioned_logprob must be provided for PMI normalization".
- token normalisation (`LogProbTokenNorm`): "IndexError: list index out of range" in `normalize_log_probs`
  (`choices_tokens[ix]`).
"""

from lighteval.metrics.dynamic_metrics import LogLikelihoodAccMetric
from lighteval.metrics.metrics import Metrics
from lighteval.metrics.normalizations import LogProbCharNorm
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.tasks.arc import arc_challenge

arc_challenge_norms = LightevalTaskConfig(
    name="arc_challenge_norms",
    prompt_function=arc_challenge.prompt_function,
    hf_repo=arc_challenge.hf_repo,
    hf_subset=arc_challenge.hf_subset,
    hf_avail_splits=arc_challenge.hf_avail_splits,
    evaluation_splits=arc_challenge.evaluation_splits,
    few_shots_split=arc_challenge.few_shots_split,
    few_shots_select=arc_challenge.few_shots_select,
    generation_size=arc_challenge.generation_size,
    metrics=[
        Metrics.loglikelihood_acc,
        LogLikelihoodAccMetric(normalization=LogProbCharNorm()),
    ],
    stop_sequence=arc_challenge.stop_sequence,
    version=0,
)

TASKS_TABLE = [arc_challenge_norms]
