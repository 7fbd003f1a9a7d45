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
 * A `pattern` scorer's regular expression as a JavaScript RegExp. Python's syntax that
 * JavaScript lacks or reads otherwise is translated, so a pattern copied from an Inspect task
 * means the same: a leading `(?i)`, `(?s)` or `(?m)` becomes the flag, `\A` and `\Z` the start
 * and end of the text (JavaScript would read `\Z` as a plain `Z`), `$` also before a newline
 * that ends the text (as Python's does, without `(?m)`), `(?P<name>...)` and `(?P=name)` named
 * groups.
 *
 * @throws SyntaxError when it is not a valid regular expression.
 */
export function compilePattern(pattern: string, ignoreCase: boolean): RegExp {
  const leading = /^\(\?([ims]+)\)/.exec(pattern);
  const flags = new Set(leading ? leading[1] : '');
  if (ignoreCase) flags.add('i');
  const body = fromPython(leading ? pattern.slice(leading[0].length) : pattern, flags.has('m'));
  return new RegExp(body, [...flags].join(''));
}

function fromPython(pattern: string, multiline: boolean): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === '\\' && i + 1 < pattern.length) {
      const next = pattern[++i];
      if (inClass) out += `\\${next}`;
      else out += next === 'A' ? '(?<![\\s\\S])' : next === 'Z' ? '(?![\\s\\S])' : `\\${next}`;
    } else if (inClass) {
      out += char;
      if (char === ']') inClass = false;
    } else if (char === '[') {
      out += char;
      inClass = true;
      if (pattern[i + 1] === '^') out += pattern[++i];
      // Python reads a `]` first in a class as a member (JavaScript as an empty class).
      if (pattern[i + 1] === ']') {
        out += '\\]';
        i++;
      }
    } else if (char === '$' && !multiline) {
      // Python's `$` also matches before a newline that ends the text.
      out += '(?=\\n?(?![\\s\\S]))';
    } else if (pattern.startsWith('(?P<', i)) {
      out += '(?<';
      i += 3;
    } else if (pattern.startsWith('(?P=', i)) {
      const end = pattern.indexOf(')', i);
      if (end < 0) return pattern; // left for RegExp to refuse
      out += `\\k<${pattern.slice(i + 4, end)}>`;
      i = end;
    } else {
      out += char;
    }
  }
  return out;
}
