"""Scores cases with Inspect AI's own reducers and metrics, for test/reducers-inspect.test.ts.

    python inspect_scores.py < cases.json      # scores the cases
    python inspect_scores.py --log <.eval>     # what read_eval_log reads of a log's scores

Reads a JSON list of cases on stdin, each {"epochs": n, "reducers": [names], "metrics": [names],
"samples": [{"id": id, "epochs": [value, ...]}]}, and prints, per case, what Inspect's
`eval_results` makes of them: each reducer's score (scored and unscored samples, metric values)
and reductions (each sample's reduced value). NaN is printed as null: JSON has no NaN.
"""

import json
import math
import sys

from inspect_ai._eval.task.epochs import Epochs
from inspect_ai._eval.task.results import ScorerInfo, eval_results
from inspect_ai.log import read_eval_log
from inspect_ai.scorer import SampleScore, Score, accuracy, mean, std, stderr

METRICS = {"accuracy": accuracy, "stderr": stderr, "mean": mean, "std": std}


def plain(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def score(case):
    # Reducer names are read the way Inspect reads them (`pass_at_2` is pass_at with k=2).
    reducers = Epochs(case["epochs"], case["reducers"]).reducer
    longest = max(len(sample["epochs"]) for sample in case["samples"])
    # Epoch by epoch, as Inspect runs them; a sample with fewer epochs had the rest fail.
    scores = [
        {
            "s": SampleScore(
                score=Score(value=sample["epochs"][epoch]), sample_id=sample["id"]
            )
        }
        for epoch in range(longest)
        for sample in case["samples"]
        if epoch < len(sample["epochs"])
    ]
    results, reductions = eval_results(
        samples=len(case["samples"]),
        scores=scores,
        reducers=reducers,
        scorers=[ScorerInfo(name="s", metrics=[METRICS[m]() for m in case["metrics"]])],
        metrics=None,
    )
    return views(results, reductions)


def views(results, reductions):
    return {
        "scores": [
            {
                "reducer": s.reducer,
                "scored_samples": s.scored_samples,
                "unscored_samples": s.unscored_samples,
                "metrics": {name: plain(m.value) for name, m in s.metrics.items()},
            }
            for s in results.scores
        ],
        "reductions": [
            {
                "reducer": r.reducer,
                "samples": [
                    {"sample_id": s.sample_id, "value": plain(s.value)} for s in r.samples
                ],
            }
            for r in reductions or []
        ],
    }


if sys.argv[1:2] == ["--log"]:
    log = read_eval_log(sys.argv[2])
    reducers = log.eval.config.epochs_reducer
    print(json.dumps({**views(log.results, log.reductions), "config": reducers}))
else:
    print(json.dumps([score(case) for case in json.load(sys.stdin)]))
