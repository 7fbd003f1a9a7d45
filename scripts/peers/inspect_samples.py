"""Reads an Inspect AI eval-set log directory for `npm run bench:peers`.

Prints one JSON object: each task's status and sample counts, and every sample's start and end
(epoch ms), from which the bench computes the mean number of samples in flight. Run with the
Inspect venv's python: python inspect_samples.py LOG_DIR
"""

import json
import sys
from datetime import datetime

from inspect_ai.log import list_eval_logs, read_eval_log


def epoch_ms(stamp: str | None) -> float | None:
    return datetime.fromisoformat(stamp).timestamp() * 1000 if stamp else None


def main(log_dir: str) -> None:
    tasks = []
    intervals = []
    for info in list_eval_logs(log_dir, formats=["eval"], descending=False):
        # Messages and events are the bulk of a log and say nothing about timing.
        log = read_eval_log(info, exclude_fields={"messages", "events", "store", "attachments"})
        samples = log.samples or []
        done = [s for s in samples if s.error is None]
        tasks.append(
            {
                "name": log.eval.task,
                "status": log.status,
                "samples": len(samples),
                "completed": len(done),
                "started_at": epoch_ms(log.stats.started_at),
                "completed_at": epoch_ms(log.stats.completed_at),
            }
        )
        for sample in samples:
            start, end = epoch_ms(sample.started_at), epoch_ms(sample.completed_at)
            if start is not None and end is not None:
                intervals.append([start, end])
    json.dump({"tasks": tasks, "intervals": intervals}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
