import { PassThrough } from 'node:stream';
import { confirm } from '../../src/cli/confirm';

/** Asks, then types `typed` (a string) or closes the input (`null`); resolves with the answer. */
async function answer(typed: string | null): Promise<{ yes: boolean; shown: string }> {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = '';
  output.on('data', (d: Buffer) => (shown += d.toString()));
  const asked = confirm('Cancel? [y/N] ', input, output);
  if (typed === null) input.end();
  else input.write(typed);
  return { yes: await asked, shown };
}

describe('a yes/no question, no by default', () => {
  test.each([
    ['y\n', true],
    ['Y\n', true],
    ['yes\n', true],
    [' YES \r\n', true],
    ['n\n', false],
    ['no\n', false],
    ['\n', false],
    ['yess\n', false],
  ])('%j is %s', async (typed, yes) => {
    expect((await answer(typed)).yes).toBe(yes);
  });

  test('the question is shown first', async () => {
    expect((await answer('y\n')).shown).toBe('Cancel? [y/N] ');
  });

  test("the input's end is no, and ends the question's line", async () => {
    expect(await answer(null)).toEqual({ yes: false, shown: 'Cancel? [y/N] \n' });
  });

  test('an abort is no', async () => {
    const input = new PassThrough();
    const aborting = new AbortController();
    const asked = confirm('Cancel? [y/N] ', input, new PassThrough(), aborting.signal);
    aborting.abort();
    expect(await asked).toBe(false);
  });
});
