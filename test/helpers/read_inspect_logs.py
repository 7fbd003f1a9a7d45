"""Reads Inspect logs with Inspect's own reader and prints what the tests compare, as JSON.

    python read_inspect_logs.py <log_dir>... [--file <.eval>]...

For each log dir: its `eval-set.json` (read_eval_set_info), the logs Inspect lists there
(list_eval_logs), and each log read whole (read_eval_log) and sample by sample
(read_eval_log_samples). `--file` reads single logs (copies taken while a task ran).
"""

import json
import sys

from inspect_ai._eval.evalset import read_eval_set_info
from inspect_ai.log import (
    list_eval_logs,
    read_eval_log,
    read_eval_log_sample_summaries,
    read_eval_log_samples,
)


def sample_view(sample):
    scores = sample.scores or {}
    return {
        "id": sample.id,
        "epoch": sample.epoch,
        "input": sample.input if isinstance(sample.input, str) else None,
        "target": sample.target,
        "metadata": sample.metadata,
        "scores": {name: score.value for name, score in scores.items()},
        "answers": {name: score.answer for name, score in scores.items()},
        "roles": [m.role for m in sample.messages],
        "tool_calls": [
            {"function": c.function, "arguments": c.arguments}
            for m in sample.messages
            if m.role == "assistant"
            for c in (m.tool_calls or [])
        ],
        "tool_functions": [m.function for m in sample.messages if m.role == "tool"],
        "completion": sample.output.completion,
        "choices": len(sample.output.choices),
        "usage": {
            model: usage.total_tokens for model, usage in sample.model_usage.items()
        },
        "started_at": sample.started_at,
        "completed_at": sample.completed_at,
        "total_time": sample.total_time,
        "error": sample.error.message if sample.error else None,
        "error_retries": [e.message for e in sample.error_retries or []],
        "limit": {"type": sample.limit.type, "limit": sample.limit.limit}
        if sample.limit
        else None,
    }


def log_view(location):
    log = read_eval_log(location)
    streamed = list(read_eval_log_samples(location, all_samples_required=False))
    results = log.results
    return {
        "file": location,
        "status": log.status,
        "task": log.eval.task,
        "task_id": log.eval.task_id,
        "eval_set_id": log.eval.eval_set_id,
        "model": log.eval.model,
        "epochs": log.eval.config.epochs,
        "dataset_samples": log.eval.dataset.samples,
        "sample_ids": log.eval.dataset.sample_ids,
        "plan": [step.solver for step in log.plan.steps],
        "scorers": [scorer.name for scorer in (log.eval.scorers or [])],
        "results": None
        if results is None
        else {
            "total_samples": results.total_samples,
            "completed_samples": results.completed_samples,
            "scores": [
                {
                    "name": score.name,
                    "scored_samples": score.scored_samples,
                    "metrics": {k: m.value for k, m in score.metrics.items()},
                }
                for score in results.scores
            ],
        },
        "stats": {
            "started_at": log.stats.started_at,
            "completed_at": log.stats.completed_at,
            "model_usage": {
                model: usage.total_tokens
                for model, usage in log.stats.model_usage.items()
            },
        },
        "error": log.error.message if log.error else None,
        "reductions": None
        if log.reductions is None
        else [
            {"scorer": r.scorer, "reducer": r.reducer, "samples": len(r.samples)}
            for r in log.reductions
        ],
        "samples": [sample_view(s) for s in (log.samples or [])],
        "streamed": [[s.id, s.epoch] for s in streamed],
        "summary_limits": {
            str(s.id): s.limit for s in read_eval_log_sample_summaries(location)
        },
    }


def main(argv):
    dirs, files = [], []
    args = iter(argv)
    for arg in args:
        if arg == "--file":
            files.append(next(args))
        else:
            dirs.append(arg)
    out = {"dirs": {}, "files": {}}
    for log_dir in dirs:
        info = read_eval_set_info(log_dir)
        out["dirs"][log_dir] = {
            "eval_set": None if info is None else info.model_dump(),
            "logs": [log_view(entry.name) for entry in list_eval_logs(log_dir)],
        }
    for location in files:
        out["files"][location] = log_view(location)
    json.dump(out, sys.stdout, default=str)


if __name__ == "__main__":
    main(sys.argv[1:])
