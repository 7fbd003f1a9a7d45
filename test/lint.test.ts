/**
 * The lint rules that keep the layers apart report what they are meant to: a rule that reports
 * nothing looks the same as a rule that finds nothing (import-x/no-cycle did, without a
 * TypeScript resolver). Each case lints code that breaks a rule, through the project's config.
 */
import * as path from 'node:path';
import { REPO_ROOT, runCommand } from './helpers/cli';

interface LintMessage {
  ruleId: string | null;
  message: string;
  line: number;
}

const ESLINT = path.join(REPO_ROOT, 'node_modules', '.bin', 'eslint');
/**
 * Type information (a TypeScript program per run) costs half a minute and none of these rules
 * needs it; the one rule that does is off for these runs.
 */
const UNTYPED = [
  '--parser-options',
  'projectService:false',
  '--rule',
  '{"@typescript-eslint/no-floating-promises":"off"}',
];

/** The messages ESLint gives `code` as if it were the file `file` of the project. */
async function lintAs(file: string, code: string): Promise<LintMessage[]> {
  const result = await runCommand(
    'sh',
    ['-c', `printf '%s' "$CODE" | "${ESLINT}" -f json --stdin --stdin-filename "${file}"`],
    { env: { ...process.env, CODE: code } },
  );
  return (JSON.parse(result.stdout) as Array<{ messages: LintMessage[] }>)[0].messages;
}

test('import-x/no-cycle reports a cycle between TypeScript modules', async () => {
  const files = ['cycle-a.ts', 'cycle-b.ts'].map((f) => path.join('test/fixtures/lint', f));
  // The fixtures are ignored by `eslint .`; they break the rule on purpose.
  const result = await runCommand(ESLINT, [...UNTYPED, '--no-ignore', '-f', 'json', ...files]);
  const reports = JSON.parse(result.stdout) as Array<{ messages: LintMessage[] }>;
  for (const report of reports) {
    expect(report.messages).toEqual([
      expect.objectContaining({ ruleId: 'import-x/no-cycle', line: 2 }),
    ]);
  }
});

describe.each([
  [
    'settings, which workflow code imports, takes nothing with I/O',
    'src/config/settings.ts',
    "import { readFileSync } from 'node:fs';\nimport { parseYaml } from './load';\nexport const x = [readFileSync, parseYaml];\n",
    ['node:fs', './load'],
  ],
  [
    'config does not import the models (their SDKs); types may cross',
    'src/config/validate.ts',
    "import { createModel } from '../models';\nimport type { AgentOptions } from '../eval/agent';\nexport const x = createModel;\nexport type Y = AgentOptions;\n",
    ['../models'],
  ],
  [
    'definition does not import the code that loads and runs it (eval, sandbox, loader)',
    'src/definition/samples.ts',
    "import { agent } from '../eval/agent';\nimport { loadSandboxSpec } from '../sandbox/compose';\nimport { loadDefinition } from '../loader/definition';\nimport type { SandboxSpec } from '../sandbox/types';\nexport const x = [agent, loadSandboxSpec, loadDefinition];\nexport type Y = SandboxSpec;\n",
    ['../eval/agent', '../sandbox/compose', '../loader/definition'],
  ],
  [
    'core does not import workflow code, not even a type',
    'src/core/ranges.ts',
    "import type { EvalSetInput } from '../workflows/types';\nexport type X = EvalSetInput;\n",
    ['../workflows/types'],
  ],
])('%s', (_name, file, code, refused) => {
  test('is reported', async () => {
    const messages = await lintAs(file, code);
    const restricted = messages.filter((m) => m.ruleId === 'no-restricted-imports');
    expect(restricted.map((m) => /'([^']+)' import/.exec(m.message)?.[1])).toEqual(refused);
  });
});

test('a Temporal connection opened without openConnection is reported (it can crash on close)', async () => {
  const code =
    "import { Connection } from '@temporalio/client';\n" +
    "export const a = Connection.connect({ address: 'x' });\n" +
    "export const b = Connection.lazy({ address: 'x' });\n";
  const messages = await lintAs('src/cli/main.ts', code);
  expect(messages.filter((m) => m.ruleId === 'no-restricted-syntax').map((m) => m.line)).toEqual([
    2, 3,
  ]);
});
