/** A yes/no question for the user at a terminal, whose default is no. */
import { createInterface } from 'node:readline';

/**
 * Writes `question` to `output` and reads one line of `input`: `y` or `yes`, in any case, is yes;
 * anything else, an empty line, the input's end or an abort of `signal`, is no.
 */
export function confirm(
  question: string,
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
  signal?: AbortSignal,
): Promise<boolean> {
  output.write(question);
  // Not a terminal interface: the terminal keeps its line mode, so it echoes what is typed and a
  // Ctrl-C stays the process's SIGINT rather than becoming input.
  const lines = createInterface({ input, terminal: false, signal });
  return new Promise((resolve) => {
    let answered = false;
    lines.once('line', (line) => {
      answered = true;
      resolve(/^\s*y(es)?\s*$/i.test(line));
      lines.close();
    });
    lines.once('close', () => {
      // Nothing typed ended the question's line: what is printed next must not follow it there.
      if (!answered) output.write('\n');
      resolve(false);
    });
  });
}
