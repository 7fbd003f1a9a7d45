/**
 * zod's issues in Steward's words: one {@link ConfigIssue} per problem, at its file, line and
 * path. Pure (zod types only): settings resolved inside workflow code use it too.
 */

import type { z } from 'zod';
import type { ConfigIssue } from '../errors';

/** Where issues found in a document are: its file, and its line or path prefix inside it. */
export interface IssueOrigin {
  file?: string;
  line?: number;
  /** Prepended to every issue's path, e.g. `tasks.0.dataset.3` for an inline sample. */
  path?: string;
}

type ZodIssue = z.core.$ZodIssue;

/**
 * Turns zod's issues into Steward's, one per problem, with messages in the user's terms: an
 * unknown key is named, a union that failed reports the branch the value was meant for.
 */
export function issuesFromZod(error: z.ZodError, origin: IssueOrigin = {}): ConfigIssue[] {
  return error.issues
    .flatMap((issue) => pinpoint(issue, []))
    .flatMap(({ issue, path }) => {
      const where = (keys: PropertyKey[]) => ({
        ...(origin.file === undefined ? {} : { file: origin.file }),
        ...(origin.line === undefined ? {} : { line: origin.line }),
        path: [origin.path, ...keys.map(String)].filter((part) => part).join('.') || undefined,
      });
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((key) => ({ ...where(path), message: `unknown key "${key}"` }));
      }
      const input: unknown = issue.input;
      const message = describe(issue, input);
      return [{ ...where(path), message, ...(input === undefined ? {} : { value: input }) }];
    });
}

/** Codes meaning "this value is not of that branch's kind at all", as opposed to a near miss. */
const MISMATCH = new Set([
  'invalid_type',
  'invalid_value',
  'unrecognized_keys',
  'invalid_union',
  'custom',
]);

/**
 * zod reports a failed union as every branch's issues. The user meant one branch: the one whose
 * kind the value has (its issues are deeper, or about size). Report that branch's issues, or the
 * union's own message when no single branch fits; a nested union that is the only candidate
 * speaks for itself (its message names the unknown built-in).
 */
function pinpoint(
  issue: ZodIssue,
  base: PropertyKey[],
): Array<{ issue: ZodIssue; path: PropertyKey[] }> {
  const path = [...base, ...issue.path];
  if (issue.code !== 'invalid_union') return [{ issue, path }];
  const isMismatch = (i: ZodIssue) => i.path.length === 0 && MISMATCH.has(i.code);
  const nearMisses = issue.errors.filter((branch) => branch.length > 0 && !branch.some(isMismatch));
  if (nearMisses.length === 1) return nearMisses[0].flatMap((i) => pinpoint(i, path));
  const nested = issue.errors.filter(
    (branch) =>
      branch.length === 1 && branch[0].code === 'invalid_union' && branch[0].path.length === 0,
  );
  if (nearMisses.length === 0 && nested.length === 1) return pinpoint(nested[0][0], path);
  return [{ issue, path }];
}

/** zod's type names, in the user's words (a record is what YAML and JSON call an object). */
const TYPE_NAMES: Partial<Record<string, string>> = { int: 'integer', record: 'object' };

function describe(issue: ZodIssue, input: unknown): string {
  switch (issue.code) {
    case 'invalid_type':
      if (input === undefined) return 'required';
      // YAML's .inf and .nan are numbers to JavaScript, but not ones any setting can take.
      if (typeof input === 'number' && !Number.isFinite(input)) return 'expected a finite number';
      return `expected ${TYPE_NAMES[issue.expected] ?? issue.expected}, got ${kindOf(input)}`;
    case 'too_small':
      return sizeMessage(issue.origin, 'min', issue.minimum, issue.inclusive ?? true);
    case 'too_big':
      return sizeMessage(issue.origin, 'max', issue.maximum, issue.inclusive ?? true);
    case 'invalid_value':
      return issue.values.length === 1
        ? `expected ${JSON.stringify(issue.values[0])}`
        : `expected one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
    default:
      // Our schemas word their own messages for formats, custom checks and unions.
      return issue.message;
  }
}

function sizeMessage(
  origin: string,
  side: 'min' | 'max',
  limit: number | bigint,
  inclusive: boolean,
): string {
  const n = String(limit);
  // zod says `int` for a `.int()` number, whose only maximum is the largest safe integer.
  if (origin === 'number' || origin === 'int') {
    if (side === 'min') return inclusive ? `must be at least ${n}` : `must be greater than ${n}`;
    return inclusive ? `must be at most ${n}` : `must be less than ${n}`;
  }
  if (side === 'min' && n === '1') return 'must not be empty';
  const unit = origin === 'string' ? 'characters' : 'items';
  return `must have ${side === 'min' ? 'at least' : 'at most'} ${n} ${unit}`;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'array' : typeof value;
}
