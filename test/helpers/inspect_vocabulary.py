"""Runs Inspect AI's own solvers and scorers on a table of cases, for test/vocabulary-inspect.test.ts.

    python inspect_vocabulary.py < cases.json

Each case: {"sample": {"id", "input", "target", "choices"?, "metadata"?}, "solvers": [[name, args]],
"scorer": [name, args], "outputs": [completion, ...], "order"?: [positions]}. Solvers run on a
TaskState built as Inspect builds one, with a `generate` that records the messages it is given and
answers with the next scripted output (`generate` names a solver that just calls it). Prints, per case, the conversation after the solvers, each generate call's messages, the
score (value, answer, explanation, reason), and the choices as the state left them; or the error raised.
"""

import asyncio
import json
import sys
from random import Random

from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, ModelName, ModelOutput
from inspect_ai.scorer import Target, answer, choice, f1, pattern
from inspect_ai.solver import (
    TaskState,
    assistant_message,
    chain_of_thought,
    multiple_choice,
    prompt_template,
    system_message,
    user_message,
)

MODEL = "mockllm/model"


class ScriptedOrder(Random):
    """A Random whose shuffle puts a list in the order Steward's seeded shuffle chose."""

    def __init__(self, order):
        super().__init__(0)
        self.order = order

    def shuffle(self, x):
        x[:] = [x[i] for i in self.order]


async def call_generate(state, generate):
    return await generate(state)


def make_solver(name, args, case):
    if name == "generate":
        return call_generate
    if name == "multiple_choice":
        args = dict(args)
        if "shuffle" in args:
            del args["shuffle"]
            args["shuffle"] = ScriptedOrder(case["order"])
        return multiple_choice(**args)
    return {
        "system_message": system_message,
        "user_message": user_message,
        "assistant_message": assistant_message,
        "prompt_template": prompt_template,
        "chain_of_thought": chain_of_thought,
    }[name](**args)


def make_scorer(name, args):
    return {"choice": choice, "pattern": pattern, "answer": answer, "f1": f1}[name](**args)


def message(m):
    return {"role": m["role"], "content": m["content"]}


def to_inspect(m):
    cls = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    return cls[m["role"]](content=m["content"])


def plain(messages):
    return [{"role": m.role, "content": m.text} for m in messages]


async def run(case):
    sample = case["sample"]
    given = sample["input"]
    messages = (
        [ChatMessageUser(content=given)] if isinstance(given, str) else [to_inspect(m) for m in given]
    )
    state = TaskState(
        model=ModelName(MODEL),
        sample_id=sample["id"],
        epoch=1,
        input=given if isinstance(given, str) else [to_inspect(m) for m in given],
        messages=messages,
        target=Target(sample["target"]),
        choices=sample.get("choices"),
        metadata=sample.get("metadata", {}),
    )
    outputs = list(case["outputs"])
    calls = []

    async def generate(state, **kwargs):
        calls.append(plain(state.messages))
        state.output = ModelOutput.from_content(MODEL, outputs.pop(0))
        state.messages.append(state.output.message)
        return state

    try:
        for name, args in case["solvers"]:
            state = await make_solver(name, args, case)(state, generate)
        score = await make_scorer(*case["scorer"])(state, Target(sample["target"]))
    except Exception as error:  # the error is the result
        return {"error": str(error)}
    return {
        "messages": plain(state.messages),
        "calls": calls,
        "completion": state.output.completion,
        "choices": None
        if not state.choices
        else [
            {"value": c.value, "correct": c.correct, "original_position": c.original_position}
            for c in state.choices
        ],
        "score": {
            "value": score.value,
            "answer": score.answer,
            "explanation": score.explanation,
            "reason": score.reason,
        },
    }


async def main():
    cases = json.load(sys.stdin)
    results = [await run(case) for case in cases]
    json.dump(results, sys.stdout)


asyncio.run(main())
