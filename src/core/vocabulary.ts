/**
 * What the built-in solvers and scorers need checked before they run, shared by the definition's
 * rules (`config/validate.ts`) and the built-ins themselves (`eval/`). Pure.
 */

/** Letters name a question's choices, so it has at most 26 of them (A to Z). */
export const MAX_CHOICES = 26;

/** Whether a `multiple_choice` template has the placeholders a question needs. */
export function validChoiceTemplate(template: string): boolean {
  return template.includes('{question}') && template.includes('{choices}');
}

/**
 * A `pattern` scorer's regular expression as a JavaScript RegExp. A leading `(?i)`, `(?s)` or
 * `(?m)` (Python's inline flags, which JavaScript lacks) is read as the flag.
 *
 * @throws SyntaxError when it is not a valid regular expression.
 */
export function compilePattern(pattern: string, ignoreCase: boolean): RegExp {
  const leading = /^\(\?([ims]+)\)/.exec(pattern);
  const flags = new Set(leading ? leading[1] : '');
  if (ignoreCase) flags.add('i');
  return new RegExp(leading ? pattern.slice(leading[0].length) : pattern, [...flags].join(''));
}
