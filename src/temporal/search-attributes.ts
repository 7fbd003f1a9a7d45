/**
 * Whether an eval set's workflows can carry the `StewardEvalSet` search attribute on this
 * Temporal. Our dev server registers it whenever Steward starts or reuses it
 * (src/temporal/devserver.ts). A cluster of the user's (`TEMPORAL_ADDRESS`) is theirs to
 * administer: Steward asks whether it is registered and, when it is not (or the cluster will not
 * say), starts the eval set without it and says so in one line, rather than fail every start on
 * an attribute the server refuses. Decided once, at the start: the eval set's children inherit
 * what it was started with (src/workflows/search-attributes.ts).
 */
import type { Client } from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import { EVAL_SET_ATTRIBUTE, evalSetAttributes } from '../workflows/search-attributes';
import type { TemporalTarget } from './connection';

/** temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD. */
const KEYWORD = 2;
const CHECK_TIMEOUT_MS = 5_000;

export interface EvalSetTagging {
  /** For the eval set's start options; absent: start it untagged. */
  typedSearchAttributes?: SearchAttributePair[];
  /** Why it goes untagged, in one line for the user. */
  warning?: string;
}

/** How to tag eval set `name` on `target`. Never throws: tagging is worth no failed start. */
export async function evalSetTagging(
  client: Client,
  target: Pick<TemporalTarget, 'embedded' | 'namespace'>,
  name: string,
): Promise<EvalSetTagging> {
  const tagged = { typedSearchAttributes: evalSetAttributes(name) };
  if (target.embedded) return tagged;
  const attribute = EVAL_SET_ATTRIBUTE.name;
  const register =
    `\`temporal operator search-attribute create --namespace ${target.namespace} ` +
    `--name ${attribute} --type Keyword\``;
  const untagged = (why: string): EvalSetTagging => ({
    warning: `${why}: the eval set's workflows go without it (listing them by eval set needs it)`,
  });
  try {
    const { customAttributes } = await client.connection.withDeadline(
      Date.now() + CHECK_TIMEOUT_MS,
      () => client.connection.operatorService.listSearchAttributes({ namespace: target.namespace }),
    );
    const type = customAttributes[attribute];
    if (type === undefined) {
      return untagged(
        `namespace ${target.namespace} has no search attribute ${attribute} (register it with ${register})`,
      );
    }
    if (type !== KEYWORD) {
      return untagged(
        `search attribute ${attribute} of namespace ${target.namespace} is not a Keyword`,
      );
    }
    return tagged;
  } catch (err) {
    return untagged(
      `cannot list the search attributes of namespace ${target.namespace} (${(err as Error).message})`,
    );
  }
}
