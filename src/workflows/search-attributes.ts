/**
 * The `StewardEvalSet` search attribute: every workflow of an eval set (the eval set, its tasks,
 * their samples) carries the eval set's name, so `temporal workflow list --query
 * 'StewardEvalSet="NAME"'` finds them all. The launcher sets it on the eval set when the server
 * has it registered (src/temporal/search-attributes.ts); each workflow passes on what it was
 * started with, so an eval set started without it (an unregistered server, the stock CLI, a run
 * from before) starts its children without it too, and its commands stay what they were.
 * Deterministic: workflow code reads it from its own start event.
 */
import {
  SearchAttributeType,
  defineSearchAttributeKey,
  type SearchAttributePair,
} from '@temporalio/common';
import { workflowInfo } from '@temporalio/workflow';

/** The one declaration of the attribute; src/temporal/config.ts registers it from this. */
export const EVAL_SET_ATTRIBUTE = defineSearchAttributeKey(
  'StewardEvalSet',
  SearchAttributeType.KEYWORD,
);

/** The attribute naming eval set `name`, for a workflow's start options. */
export function evalSetAttributes(name: string): SearchAttributePair[] {
  return [{ key: EVAL_SET_ATTRIBUTE, value: name }];
}

/** The eval set this workflow was tagged with at start, if it was. Workflow code only. */
export function taggedEvalSet(): string | undefined {
  return workflowInfo().typedSearchAttributes.get(EVAL_SET_ATTRIBUTE);
}

/** Start options that pass this workflow's tag on to a child (none when it has none). */
export function inheritedAttributes(): { typedSearchAttributes?: SearchAttributePair[] } {
  const tag = taggedEvalSet();
  return tag === undefined ? {} : { typedSearchAttributes: evalSetAttributes(tag) };
}
